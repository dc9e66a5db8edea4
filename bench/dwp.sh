#!/usr/bin/env bash
# DWP read paths and append, ours against the upstream Python helpers, process start included on
# both sides (the upstream pack byte-compiled first, so Python starts from its bytecode cache as
# users run it):
#
#   ledger project      10,000 and 100,000 events   (writes state.json; both sides fsync it)
#   scheduler ready     10,000 events
#   outcomes receipt    10,000 events
#   ledger append       one plain append on a 100,000-event journal / on a 1,000-event journal
#                       (ours; upstream's appends are printed for reference)
#
# Journals: 1,000 events appended by our own binary (`dwp ledger append`, one process and one
# fsync each); larger journals replicate those validated lines with the seq renumbered (text
# rewrite only), then one more append by our binary. Outputs (state.json, the ready list, the
# receipt) are compared byte for byte before anything is timed. Runs are interleaved (ours,
# upstream, ours, ...) so both see the same background load; reported: median wall time and
# median CPU time (user + sys) of RUNS runs, and their ratios. Numbers only; nothing fails on
# timing.
#
# Usage: bench/dwp.sh [UPSTREAM]   UPSTREAM: a checkout of the upstream skill pack (the folder
#                                  holding shared/ledger.py, or shared/ itself); also $DWP_UPSTREAM.
#        RUNS=11 bench/dwp.sh ...  (default 11)
#        DWP_BIN=/path/to/dwp ...  time another build of dwp (a baseline) in the "ours" column; the
#                                  journals are still written by this checkout's build
# The upstream helpers cannot be installed from a registry; without a pack only our side is timed.
# Needs: cargo, git, python3. Fixtures are kept in target/dwp-bench (delete it to rebuild them).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-11}"
UPSTREAM="${1:-${DWP_UPSTREAM:-}}"
WORK="$ROOT/target/dwp-bench"
PY="${PYTHON:-python3}"
log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf '\nbench: ERROR: %s\n\n' "$*" >&2; exit 1; }

# The read paths' caches (scan checkpoint, journal summary) for these journals live here.
export DWP_CACHE_DIR="${DWP_CACHE_DIR:-$WORK/cache}"
log "building dwp (release)"
cargo build --quiet --release -p dwp-cli --manifest-path "$ROOT/Cargo.toml" >&2
dwp="$ROOT/target/release/dwp"
mkdir -p "$WORK"

pack=""
if [[ -n "$UPSTREAM" ]]; then
    for cand in "$UPSTREAM/shared" "$UPSTREAM"; do
        if [[ -f "$cand/ledger.py" && -f "$cand/scheduler.py" && -f "$cand/outcomes.py" ]]; then
            pack="$cand"
            break
        fi
    done
    [[ -n "$pack" ]] || die "$UPSTREAM holds no shared/ledger.py, scheduler.py and outcomes.py"
    # A private copy, byte-compiled: the checkout itself is never written to.
    rm -rf "$WORK/upstream"
    mkdir -p "$WORK/upstream"
    cp "$pack"/*.py "$WORK/upstream/"
    "$PY" -m compileall -q "$WORK/upstream" >&2
    pack="$WORK/upstream"
    log "upstream helpers: $UPSTREAM (byte-compiled copy in $pack)"
else
    log "NO UPSTREAM PACK: pass a checkout of the upstream skill pack (bench/dwp.sh PATH or"
    log "DWP_UPSTREAM=PATH) to time the upstream helpers; only our side is timed below"
fi

plan_name=PLAN_001_bench_plan
make_repo() { # DIR -> a git repo with a materialized plan
    local root="$1"
    rm -rf "$root"
    mkdir -p "$root/.dwp/plans/$plan_name"
    printf '.dwp/\n' >"$root/.gitignore"
    printf 'hello\n' >"$root/src.txt"
    printf '# bench plan\n' >"$root/.dwp/plans/$plan_name/README.md"
    git -C "$root" init -q .
    git -C "$root" -c user.email=b@example.com -c user.name=b add .
    git -C "$root" -c user.email=b@example.com -c user.name=b commit -qm init
    cat >"$WORK/contract.json" <<EOF
{"schema":"https://deepworkplan.com/schema/plan-contract/v6.json","spec_version":"6.0.0","plan":"$plan_name","revision":1,"created_at":"2026-11-30T00:00:00Z",
"outcome":{"statement":"bench","success_definition":"gates pass","out_of_scope":[]},
"acceptance":{"criteria":[{"id":"AC-pass","statement":"s","observable_check":"true","accepted_evidence":["observed","asserted"]}]},
"invariants":[{"id":"INV-green","statement":"stays green"}],"scope":{"allowed_paths":["src.txt"],"allowed_command_classes":["true"],"forbidden_operations":["force-push"]},
"authorization":{"mechanism":"plan_authorship","authority":"dev","timestamp":"2026-11-30T00:00:00Z","boundaries":"bench","consent_checkpoints":[]},
"permissions":{"granted":["gate_command_exec"],"not_granted":["network_access"]},"dependencies":[],
"resource_envelope":{"limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"}]},
"tasks":[{"id":"T-one","title":"One","prerequisites":[],"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-pass","check":"true"}]}]}
EOF
    "$dwp" ledger --plan "$root/.dwp/plans/$plan_name" materialize --contract "$WORK/contract.json" >/dev/null
}

seed="$WORK/seed"
sp="$seed/.dwp/plans/$plan_name"
if [[ ! -f "$WORK/seed.ndjson" ]]; then
    log "writing 1,000 events with dwp ledger append (once; kept in $WORK)"
    make_repo "$seed"
    "$dwp" ledger --plan "$sp" start --task T-one >/dev/null
    "$dwp" ledger --plan "$sp" gate --task T-one --criterion AC-pass --json '"true"' >/dev/null
    n=$(wc -l <"$sp/journal.ndjson")
    while [ "$n" -lt 999 ]; do
        "$dwp" ledger --plan "$sp" append --type observation --trust asserted \
            --json "{\"statement\":\"bench observation $n\"}" >/dev/null
        n=$((n + 1))
    done
    "$dwp" ledger --plan "$sp" append --type observation --trust asserted \
        --json '{"statement":"INV-green: pass"}' >/dev/null
    head -n 1000 "$sp/journal.ndjson" >"$WORK/seed.ndjson"
fi

for size in 1000 10000 100000; do
    root="$WORK/repo-$size"
    make_repo "$root"
    p="$root/.dwp/plans/$plan_name"
    cp "$sp/contract.json" "$p/contract.json"
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
      }' "$WORK/seed.ndjson" >"$p/journal.ndjson"
    "$dwp" ledger --plan "$p" append --type observation --trust asserted \
        --json '{"statement":"INV-green: pass"}' >/dev/null
done
P1="$WORK/repo-1000/.dwp/plans/$plan_name"
P10="$WORK/repo-10000/.dwp/plans/$plan_name"
P100="$WORK/repo-100000/.dwp/plans/$plan_name"

if [[ -n "$pack" ]]; then
    log "checking that both sides print the same bytes"
    for p in "$P10" "$P100"; do
        "$PY" "$pack/ledger.py" --plan "$p" project >/dev/null
        cp "$p/state.json" "$WORK/state.upstream"
        "$dwp" ledger --plan "$p" project >/dev/null
        cmp -s "$p/state.json" "$WORK/state.upstream" || die "state.json differs ($p)"
    done
    "$dwp" scheduler ready "$P10" >"$WORK/ready.ours"
    "$PY" "$pack/scheduler.py" ready "$P10" >"$WORK/ready.upstream"
    cmp -s "$WORK/ready.ours" "$WORK/ready.upstream" || die "scheduler ready differs ($WORK/ready.*)"
    "$dwp" outcomes receipt --plan "$P10" >"$WORK/receipt.ours" 2>/dev/null
    "$PY" "$pack/outcomes.py" --plan "$P10" receipt >"$WORK/receipt.upstream" 2>/dev/null
    cmp -s "$WORK/receipt.ours" "$WORK/receipt.upstream" || die "outcomes receipt differs ($WORK/receipt.*)"
fi

timed="${DWP_BIN:-$dwp}"
[[ "$timed" == "$dwp" ]] || log "timing $timed in the ours column (DWP_BIN)"
log "timing ($RUNS interleaved runs each)"
"$PY" - "$RUNS" "$timed" "$PY" "$pack" "$P1" "$P10" "$P100" <<'EOF'
import os, resource, shutil, subprocess, sys, tempfile, time

runs, dwp, py, pack = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
p1, p10, p100 = sys.argv[5:8]
up = (lambda tool, *args: [py, f'{pack}/{tool}', *args]) if pack else None

def once(cmd, cold=False):
    env, cache = None, None
    if cold:
        # An empty cache folder: no journal summary, no scan checkpoint (a first read).
        cache = tempfile.mkdtemp(prefix='dwp-bench-cache-')
        env = dict(os.environ, DWP_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu

def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

def interleaved(ours, theirs, cold=False):
    o, t = [], []
    for _ in range(runs):
        o.append(once(ours, cold))
        if theirs:
            t.append(once(theirs))
    med = lambda rs, i: median([r[i] for r in rs]) if rs else None
    return (med(o, 0), med(o, 1)), (med(t, 0), med(t, 1))

def ms(x):
    return f'{x * 1000:9.1f} ms' if x is not None else f'{"-":>12}'

def ratio(a, b):
    return f'{b / a:6.1f}x' if a and b else f'{"-":>7}'

def append(plan, n):
    return [dwp, 'ledger', '--plan', plan, 'append', '--type', 'observation', '--trust',
            'asserted', '--json', '{"statement":"bench append %d"}' % n]

cases = [
    ('ledger project, 10,000 events', [dwp, 'ledger', '--plan', p10, 'project'],
     up and up('ledger.py', '--plan', p10, 'project'), 20),
    ('scheduler ready, 10,000 events', [dwp, 'scheduler', 'ready', p10],
     up and up('scheduler.py', 'ready', p10), 20),
    ('outcomes receipt, 10,000 events', [dwp, 'outcomes', 'receipt', '--plan', p10],
     up and up('outcomes.py', '--plan', p10, 'receipt'), 20),
    ('ledger project, 100,000 events', [dwp, 'ledger', '--plan', p100, 'project'],
     up and up('ledger.py', '--plan', p100, 'project'), 20),
]
# The same commands with an empty cache folder (no journal summary: every line checked).
cold_cases = [(name.replace(',', ', first read,', 1), ours, theirs, goal)
              for name, ours, theirs, goal in cases]
print()
print(f'DWP, ours vs the upstream helpers (median of {runs} interleaved runs; process start included)')
if not pack:
    print('  (no upstream pack given: upstream columns empty; see bench/dwp.sh --help text at the top)')
print(f"  {'work':<42} {'ours wall':>12} {'upstream':>12} {'ratio':>7} {'ours cpu':>12} {'upstream':>12} {'ratio':>7}  goal")
upstream_medians = []
for name, ours, theirs, goal in cases:
    (ow, oc), (tw, tc) = interleaved(ours, theirs)
    upstream_medians.append((tw, tc))
    print(f'  {name:<42} {ms(ow)} {ms(tw)} {ratio(ow, tw)} {ms(oc)} {ms(tc)} {ratio(oc, tc)}  >= {goal}x')
print('  ours with an empty cache folder (no journal summary: every line checked), vs the same')
print('  upstream medians:')
for (name, ours, _, _), (tw, tc) in zip(cold_cases, upstream_medians):
    (ow, oc), _ = interleaved(ours, None, cold=True)
    print(f'  {name:<42} {ms(ow)} {ms(tw)} {ratio(ow, tw)} {ms(oc)} {ms(tc)} {ratio(oc, tc)}')

# One append at 1,000 vs at 100,000 events: fresh processes, interleaved.
a1, a100 = [], []
for i in range(runs):
    a1.append(once(append(p1, i)))
    a100.append(once(append(p100, i)))
w1, w100 = median([r[0] for r in a1]), median([r[0] for r in a100])
c1, c100 = median([r[1] for r in a1]), median([r[1] for r in a100])
print()
print(f'  one ledger append, ours: 100,000 events {ms(w100)} / 1,000 events {ms(w1)} = '
      f'{w100 / w1:.2f}x wall ({ms(c100).strip()} / {ms(c1).strip()} = {c100 / c1:.2f}x cpu)  goal <= 1.5x')
if pack:
    u1 = [once(up('ledger.py', '--plan', p1, 'append', '--type', 'observation', '--trust', 'asserted',
                  '--json', '{"statement":"upstream append %d"}' % i)) for i in range(3)]
    u100 = [once(up('ledger.py', '--plan', p100, 'append', '--type', 'observation', '--trust', 'asserted',
                    '--json', '{"statement":"upstream append %d"}' % i)) for i in range(3)]
    uw1, uw100 = median([r[0] for r in u1]), median([r[0] for r in u100])
    print(f'  one ledger append, upstream (reference, 3 runs): 100,000 events {ms(uw100)} / '
          f'1,000 events {ms(uw1)} = {uw100 / uw1:.1f}x')
EOF
