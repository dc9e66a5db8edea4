#!/usr/bin/env bash
# Whole commands, ours against the samples' Python, process start included on both sides (the
# Python side with its bytecode cache warm, as users run it):
#
#   canon:  `cookwala canon` of a generated 25 MB document
#           vs `py_jcs.py canon` (json.loads + cookwala_samples.jcs.canonical)
#   batch:  `cookwala dry-run --batch` of 5,344 inline lines (the 32 bundle cases x 167, each
#           line a recipe, capabilities and limits inline)
#           vs `py_dryrun.py batch` (json.loads + cookwala_samples.simulator.dry_run per line)
#   distinct: the same, on 19,980 lines whose every document is distinct (nothing to reuse):
#           the standard's dryrun vectors, 40 generated recipes on each bundle device and the
#           bundle's pairs, written as Python's json.dumps writes them (\uXXXX escapes)
#
# Outputs are compared byte for byte before anything is timed. Reported: the median wall time
# and the median CPU time (user + sys, steadier on a shared machine) of RUNS runs. Numbers only;
# nothing fails on timing.
#
#   bench/cli.sh                 # needs bench/.venv (bench/run.sh creates it) or PY=...
#   RUNS=5 bench/cli.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUNS="${RUNS:-5}"
PY="${PY:-$ROOT/bench/.venv/bin/python}"
WORK="$ROOT/target/cw-bench/cli"
log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf '\nbench: ERROR: %s\n\n' "$*" >&2; exit 1; }

"$PY" -c 'import cookwala_samples' 2>/dev/null || die "$PY cannot import cookwala_samples (run bench/run.sh once, or set PY)"
log "building cookwala and cw-bench (release)"
cargo build --release -p cookwala-cli -p bench >&2
CW="$ROOT/target/release/cookwala"
mkdir -p "$WORK"
if [[ ! -f "$WORK/big/gen-0000.json" ]]; then
    log "generating a 25 MB document"
    "$ROOT/target/release/cw-bench" gen "$WORK/big" --count 1 --base-nodes 27500 --step-nodes 0
fi
if [[ ! -f "$WORK/batch.ndjson" ]]; then
    log "writing the dry-run batch"
    "$PY" "$ROOT/bench/py_dryrun.py" make-batch "$WORK/batch.ndjson" 167
fi

if [[ ! -f "$WORK/distinct.ndjson" ]]; then
    log "writing the distinct-documents batch"
    rm -rf "$WORK/gen"
    "$ROOT/target/release/cw-bench" gen "$WORK/gen" --count 40 --base-nodes 2 --step-nodes 1 >/dev/null
    "$PY" "$ROOT/bench/py_dryrun.py" make-distinct "$WORK/distinct.ndjson" 19980 \
        "$ROOT/../shared/standards/cookwala/conformance/dryrun.json" "$WORK/gen"
fi

log "checking that both sides print the same bytes"
"$CW" canon "$WORK/big/gen-0000.json" >"$WORK/canon.ours"
"$PY" "$ROOT/bench/py_jcs.py" canon "$WORK/big/gen-0000.json" >"$WORK/canon.python"
cmp -s "$WORK/canon.ours" "$WORK/canon.python" || die "canon outputs differ ($WORK/canon.*)"
"$CW" dry-run --batch "$WORK/batch.ndjson" >"$WORK/batch.ours" || true
"$PY" "$ROOT/bench/py_dryrun.py" batch "$WORK/batch.ndjson" >"$WORK/batch.python"
cmp -s "$WORK/batch.ours" "$WORK/batch.python" || die "dry-run batch outputs differ ($WORK/batch.*)"
"$CW" dry-run --batch "$WORK/distinct.ndjson" >"$WORK/distinct.ours" || true
"$PY" "$ROOT/bench/py_dryrun.py" batch "$WORK/distinct.ndjson" >"$WORK/distinct.python"
cmp -s "$WORK/distinct.ours" "$WORK/distinct.python" || die "distinct batch outputs differ ($WORK/distinct.*)"

log "timing ($RUNS runs each)"
"$PY" - "$RUNS" "$WORK" "$CW" "$PY" "$ROOT/bench" <<'EOF'
import os, subprocess, sys, time

runs, work, cw, py, bench = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
big, batch = f'{work}/big/gen-0000.json', f'{work}/batch.ndjson'
distinct = f'{work}/distinct.ndjson'
cases = [
    ('canon 25 MB document', [cw, 'canon', big], [py, f'{bench}/py_jcs.py', 'canon', big], 50),
    ('dry-run --batch 5,344 lines', [cw, 'dry-run', '--batch', batch],
     [py, f'{bench}/py_dryrun.py', 'batch', batch], 4),
    ('dry-run --batch 19,980 distinct', [cw, 'dry-run', '--batch', distinct],
     [py, f'{bench}/py_dryrun.py', 'batch', distinct], 4),
]

def once(cmd):
    before = os.times()
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu

def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

print()
print(f"Whole commands, ours vs the samples' Python (median of {runs} runs; process start included)")
print(f"  {'work':<30} {'ours wall':>10} {'python wall':>12} {'ratio':>7} {'ours cpu':>9} {'python cpu':>11} {'ratio':>7}  target")
results = []
for name, ours, theirs, goal in cases:
    o = [once(ours) for _ in range(runs)]
    p = [once(theirs) for _ in range(runs)]
    ow, oc = median([x[0] for x in o]), median([x[1] for x in o])
    pw, pc = median([x[0] for x in p]), median([x[1] for x in p])
    rw, rc = pw / ow, pc / max(oc, 1e-9)
    print(f"  {name:<30} {ow:>9.3f}s {pw:>11.3f}s {rw:>6.1f}x {oc:>8.3f}s {pc:>10.3f}s {rc:>6.1f}x  >= {goal}x")
    results.append((name, rw, goal))
print()
print('Targets (reported, never enforced; wall-clock ratio)')
for name, r, goal in results:
    print(f"  [{'MET ' if r >= goal else 'MISS'}] {name + f' >= {goal}x python':<60} {r:>8.1f}x")
EOF
