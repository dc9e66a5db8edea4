#!/usr/bin/env bash
# Runs the transcribed upstream bats suites against the upstream pack and against dwp (shims),
# and prints: per suite, tests passing upstream, and of those the ones dwp passes.
# Tests that are not portable are named in NONPORTABLE (see there).
set -uo pipefail
tools="$(cd "$(dirname "$0")" && pwd)"
: "${BATS_ROOT:?set BATS_ROOT to the folder holding upstream/ (tests + skills/deepworkplan)}"
here="$BATS_ROOT"
"$tools/make-ours.sh" >/dev/null
# One test name a line: tests importing a helper as a Python module; tests grepping the pack's
# documentation (they drive no helper); tests whose subject is a helper dwp does not reimplement
# (config.py's registry writer, benchmark.py).
NONPORTABLE='imported evidence closes its criterion; re-evidence stays blocked (D3-5)
direct edits never become plans: no approval means no start
a detect binary found through a relative PATH entry is refused
file-json interfaces are machine-level only (never a repository file)
touched-surface hashing names links without following them and never leaves the repository
benchmark never labels a pre-release pack as a release: not measured, one line
execute/SKILL.md gates the v6 loop behind Step 2.0 detection
create/SKILL.md selects current v6 at Step 0.3
the router carries the generation rule; status/verify/refine route v6
spec/V6_LIFECYCLE.md states the normative wiring and is indexed
the manifest schema exists, is closed, and pins the pointer shape
paths.tsv models the two v6 paths with flat entry bundles
the v6 loop prose commands match the shipped CLIs
flows: execute declares delegation.md behind a trigger; v6.md routes to it; the rules are stated
flows: create marks parallel_safe only with a delegation addon; status and verify read only
orchestrator: the child hand-off rule stands; own-task delegation is distinguished
spec: V7_ABILITIES.md states the union, the four conditions and never-persisted; indexed
docs: V7_CONTRACT.md is normative and indexed; create and the router route v7
the published TRUST.md self-audit passes on the shipped tree
benchmark reports a v7 plan as not measured, never mislabelled as v6 or v5
the config writer refuses to write through a symbolic link'
suites=${SUITES:-$(cd "$here/upstream/tests" && ls *.bats)}
tot_up=0; tot_ours=0; tot_all=0
for s in $suites; do
  (cd "$here/upstream" && bats --tap "tests/$s" 2>/dev/null) > "$here/up-$s.tap"
  (cd "$here/ours" && bats --tap "tests/$s" 2>/dev/null) > "$here/ours-$s.tap"
  up=0; ours=0; n=0; miss=""
  while IFS= read -r line; do
    name="${line#ok * }"; name="$(sed -E 's/^(not )?ok [0-9]+ //' <<<"$line")"
    grep -qxF -- "$name" <<<"$NONPORTABLE" && continue
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
