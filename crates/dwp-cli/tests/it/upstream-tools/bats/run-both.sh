#!/usr/bin/env bash
# Runs the transcribed upstream bats suites against the upstream pack and against dwp (shims),
# and prints: per suite, tests passing upstream, and of those the ones dwp passes.
# Non-portable tests (they import a helper as a Python module) are named in NONPORTABLE.
set -uo pipefail
tools="$(cd "$(dirname "$0")" && pwd)"
: "${BATS_ROOT:?set BATS_ROOT to the folder holding upstream/ (tests + skills/deepworkplan)}"
here="$BATS_ROOT"
"$tools/make-ours.sh" >/dev/null
NONPORTABLE='imported evidence closes its criterion; re-evidence stays blocked (D3-5)'
suites=$(cd "$here/upstream/tests" && ls *.bats)
tot_up=0; tot_ours=0; tot_all=0
for s in $suites; do
  (cd "$here/upstream" && bats --tap "tests/$s" 2>/dev/null) > "$here/up-$s.tap"
  (cd "$here/ours" && bats --tap "tests/$s" 2>/dev/null) > "$here/ours-$s.tap"
  up=0; ours=0; n=0; miss=""
  while IFS= read -r line; do
    name="${line#ok * }"; name="$(sed -E 's/^(not )?ok [0-9]+ //' <<<"$line")"
    [ "$name" = "$NONPORTABLE" ] && continue
    n=$((n+1))
    if [[ "$line" == ok* ]]; then
      up=$((up+1))
      if grep -qxF "ok $(sed -E 's/^ok ([0-9]+) .*/\1/' <<<"$line") $name" "$here/ours-$s.tap"; then
        ours=$((ours+1))
      else
        miss="$miss\n    - $name"
      fi
    fi
  done < <(grep -E '^(not )?ok ' "$here/up-$s.tap")
  printf '%-22s portable %2d, pass upstream %2d, dwp passes %2d of those%b\n' "$s" "$n" "$up" "$ours" "$miss"
  tot_up=$((tot_up+up)); tot_ours=$((tot_ours+ours)); tot_all=$((tot_all+n))
done
echo "TOTAL: $tot_all portable tests transcribed; $tot_up pass against upstream; dwp passes $tot_ours of them"
