#!/usr/bin/env bash
# DWP ledger benchmark: `inspect`, `project` and `complete` wall time and peak RSS on journals of
# 1,000 / 10,000 / 100,000 events, plus one `dwp ledger append` against one bare write+fsync
# (`dd conv=fsync`, also a fresh process) on the same disk in the same run.
#
# Journals: the first 1,000 events are appended by our own binary (`dwp ledger append`, one
# process and one fsync each); larger journals replicate those validated event lines with the
# seq renumbered (text rewrite only), so every line is a dwp-written event shape.
#
# Usage: bench/dwp.sh [SIZES...]   (default: 1000 10000 100000)
# Needs: cargo, git, GNU /usr/bin/time. Builds `dwp` in release mode. No timed assertions.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1000 10000 100000)

cargo build --quiet --release -p dwp-cli --manifest-path "$here/Cargo.toml"
dwp="$here/target/release/dwp"
work="$(mktemp -d "${TMPDIR:-/tmp}/dwp-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

plan_name=PLAN_001_bench_plan
make_repo() { # DIR -> a git repo with a materialized plan
  local root="$1"
  mkdir -p "$root/.dwp/plans/$plan_name"
  printf '.dwp/\n' >"$root/.gitignore"
  printf 'hello\n' >"$root/src.txt"
  printf '# bench plan\n' >"$root/.dwp/plans/$plan_name/README.md"
  git -C "$root" init -q .
  git -C "$root" -c user.email=b@example.com -c user.name=b add .
  git -C "$root" -c user.email=b@example.com -c user.name=b commit -qm init
  cat >"$work/contract.json" <<EOF
{"schema":"https://deepworkplan.com/schema/plan-contract/v6.json","spec_version":"6.0.0","plan":"$plan_name","revision":1,"created_at":"2026-11-30T00:00:00Z",
"outcome":{"statement":"bench","success_definition":"gates pass","out_of_scope":[]},
"acceptance":{"criteria":[{"id":"AC-pass","statement":"s","observable_check":"true","accepted_evidence":["observed","asserted"]}]},
"invariants":[{"id":"INV-green","statement":"stays green"}],"scope":{"allowed_paths":["src.txt"],"allowed_command_classes":["true"],"forbidden_operations":["force-push"]},
"authorization":{"mechanism":"plan_authorship","authority":"dev","timestamp":"2026-11-30T00:00:00Z","boundaries":"bench","consent_checkpoints":[]},
"permissions":{"granted":["gate_command_exec"],"not_granted":["network_access"]},"dependencies":[],
"resource_envelope":{"limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"}]},
"tasks":[{"id":"T-one","title":"One","prerequisites":[],"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-pass","check":"true"}]}]}
EOF
  "$dwp" ledger --plan "$root/.dwp/plans/$plan_name" materialize --contract "$work/contract.json" >/dev/null
}

seed="$work/seed"
make_repo "$seed"
sp="$seed/.dwp/plans/$plan_name"
"$dwp" ledger --plan "$sp" start --task T-one >/dev/null
"$dwp" ledger --plan "$sp" gate --task T-one --criterion AC-pass --json '"true"' >/dev/null

# 1,000 events written by our binary (approval, task_start, gate_run + observations).
t0=$(date +%s.%N)
n=$(wc -l <"$sp/journal.ndjson")
while [ "$n" -lt 999 ]; do
  "$dwp" ledger --plan "$sp" append --type observation --trust asserted \
    --json "{\"statement\":\"bench observation $n\"}" >/dev/null
  n=$((n + 1))
done
"$dwp" ledger --plan "$sp" append --type observation --trust asserted --json '{"statement":"INV-green: pass"}' >/dev/null
t1=$(date +%s.%N)
appends=$((1000 - 3))
append_ms=$(echo "($t1 - $t0) * 1000 / $appends" | bc -l)

# One append vs one bare write+fsync, each a fresh process, same disk, same run. The two are
# interleaved so that both see the same background load.
line='{"bench":"x"}'
reps=200
bare_ns=0
cmp_ns=0
for i in $(seq $reps); do
  t0=$(date +%s%N)
  printf '%s\n' "$line" | dd of="$work/bare.ndjson" oflag=append conv=notrunc,fsync status=none
  t1=$(date +%s%N)
  "$dwp" ledger --plan "$sp" append --type observation --trust asserted --json "{\"statement\":\"cmp $i\"}" >/dev/null
  t2=$(date +%s%N)
  bare_ns=$((bare_ns + t1 - t0))
  cmp_ns=$((cmp_ns + t2 - t1))
done
bare_ms=$(echo "$bare_ns / $reps / 1000000" | bc -l)
cmp_ms=$(echo "$cmp_ns / $reps / 1000000" | bc -l)
head -n 1000 "$sp/journal.ndjson" >"$work/seed.ndjson"

measure() { # LABEL CMD... -> "wall_s peak_kb"
  /usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >/dev/null 2>&1 || true
  cat "$work/time.txt"
}

printf '\n%-8s %-9s %10s %12s\n' events command wall_s peak_rss_kb
for size in "${sizes[@]}"; do
  root="$work/repo-$size"
  make_repo "$root"
  p="$root/.dwp/plans/$plan_name"
  cp "$seed/.dwp/plans/$plan_name/contract.json" "$p/contract.json"
  cp -r "$sp/gates" "$p/gates"
  # Replicate the seed's events: seq renumbered, everything else byte-identical.
  awk -v total="$size" '
    { lines[NR] = $0 }
    END {
      for (i = 1; i <= total; i++) {
        src = (i <= NR) ? lines[i] : lines[4 + (i - 4) % (NR - 3)]
        sub(/"seq":[0-9]+/, "\"seq\":" i, src)
        print src
      }
    }' "$work/seed.ndjson" >"$p/journal.ndjson"
  # The last event must be an invariant pass for `complete` to accept.
  last_seq=$((size + 1))
  "$dwp" ledger --plan "$p" append --type observation --trust asserted --json '{"statement":"INV-green: pass"}' >/dev/null
  for cmd in inspect project complete; do
    args=("$cmd")
    [ "$cmd" = complete ] && args=(complete --task T-one)
    read -r wall rss < <(measure "$dwp" ledger --plan "$p" "${args[@]}")
    printf '%-8s %-9s %10s %12s\n' "$last_seq" "$cmd" "$wall" "$rss"
  done
done

printf '\nappend (fresh process, validate + fsync): %.2f ms/event (seed fill: %.2f ms)\n' "$cmp_ms" "$append_ms"
printf 'bare write+fsync (dd conv=fsync, fresh process): %.2f ms/event\n' "$bare_ms"
printf 'ratio append/bare: %.2fx\n' "$(echo "$cmp_ms / $bare_ms" | bc -l)"
