#!/usr/bin/env bash
# Throughput benchmarks: numbers only, nothing here fails on timing.
#
#   bench/run.sh                 # ~1.5 s per measurement, about a minute in all
#   QUICK=1 bench/run.sh         # one tiny iteration each: checks the plumbing, numbers meaningless
#
# Environment:
#   SHARED=../shared             shared data (relative to the repo root); examples are read from
#                                $SHARED/standards/cookwala/examples, else generated documents are used
#   RUNS=5 RUN_SECS=0.3          timed runs per measurement (median reported) and seconds per run
#   CLI_RUNS=5                   runs of each whole command in bench/cli.sh (canon, dry-run --batch)
#   DWP_UPSTREAM=PATH DWP_RUNS=11  bench/dwp.sh: a checkout of the upstream DWP skill pack (the
#                                folder holding shared/ledger.py) and the interleaved runs per command
#   BENCH_FEATURES=cookwala      cargo features for cw-bench (default: cookwala, which measures the
#                                cookwala crate's verify path; BENCH_FEATURES= builds without it)
#   PYTHON=python3               interpreter used to create bench/.venv
#
# Progress goes to stderr; the final table goes to stdout. Raw JSON records are kept in
# target/cw-bench/{rust,python}.jsonl.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SHARED="${SHARED:-../shared}"
RUNS="${RUNS:-5}"
RUN_SECS="${RUN_SECS:-0.3}"
PYTHON="${PYTHON:-python3}"
QUICK="${QUICK:-0}"
WORK="$ROOT/target/cw-bench"
VENV="$ROOT/bench/.venv"
PY_REF_PKG="cookwala-samples==0.3.0"

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf '\nbench: ERROR: %s\n\n' "$*" >&2; exit 1; }

timing_args=(--runs "$RUNS" --run-secs "$RUN_SECS")
if [[ "$QUICK" == 1 ]]; then
    timing_args=(--smoke)
    log "QUICK=1: one tiny iteration per measurement, the numbers mean nothing"
fi

# 1. Build (release, this crate only). The cookwala feature adds the cookwala crate's verify
#    path; if that crate does not build right now, fall back to the build without it.
BENCH_FEATURES="${BENCH_FEATURES-cookwala}"
log "building cw-bench (cargo build --release -p bench${BENCH_FEATURES:+ --features $BENCH_FEATURES})"
if ! cargo build --release -p bench ${BENCH_FEATURES:+--features "$BENCH_FEATURES"} >&2; then
    [[ -n "$BENCH_FEATURES" ]] || die "cargo build --release -p bench failed"
    log "WARNING: build with --features $BENCH_FEATURES failed; building without (no cookwala verify numbers)"
    # --no-default-features also leaves out the hub benchmark, which needs the cookwala crate.
    cargo build --release -p bench --no-default-features >&2
fi
CW_BENCH="$ROOT/target/release/cw-bench"

# 2. Documents: the shared examples (or a small generated stand-in) and a generated large set.
rm -rf "$WORK/docs"
mkdir -p "$WORK/docs"
EXAMPLES="$SHARED/standards/cookwala/examples"
SIG_DOC="$EXAMPLES/salata-baladi.cookwala.json"
if [[ -d "$EXAMPLES" ]]; then
    log "examples: $EXAMPLES"
    sets=("examples=$EXAMPLES")
else
    log "no $EXAMPLES: using generated small documents instead of the examples"
    "$CW_BENCH" gen "$WORK/docs/small" --count 8 --base-nodes 2 --step-nodes 2
    sets=("small-generated=$WORK/docs/small")
    SIG_DOC="$WORK/docs/small/gen-0004.json"
fi
log "generating the large document set in $WORK/docs/large"
"$CW_BENCH" gen "$WORK/docs/large" --count 24 --base-nodes 40 --step-nodes 20
sets+=("large-generated=$WORK/docs/large")

# 3. The Python reference, in its own venv.
if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import cookwala_samples.jcs' 2>/dev/null; then
    log "installing $PY_REF_PKG into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$PY_REF_PKG" >&2
fi
PY="$VENV/bin/python"

# 4. Every implementation must hash identical bytes: compare document hashes before timing.
log "cross-checking document hashes (Rust vs Python reference)"
"$CW_BENCH" hashes "${sets[@]}" >"$WORK/hashes.rust.txt"
"$PY" "$ROOT/bench/py_jcs.py" hashes "${sets[@]}" >"$WORK/hashes.python.txt"
if ! diff -u "$WORK/hashes.rust.txt" "$WORK/hashes.python.txt" >"$WORK/hashes.diff"; then
    cat "$WORK/hashes.diff" >&2
    die "!!! HASH MISMATCH between canonical-json and the Python reference (diff above, also in $WORK/hashes.diff): the implementations do not hash the same bytes, timings would be meaningless"
fi
log "hashes agree on $(wc -l <"$WORK/hashes.rust.txt") documents"

# 5. Measure.
log "measuring Rust (cw-bench run)"
"$CW_BENCH" run "${timing_args[@]}" --sig-doc "$SIG_DOC" "${sets[@]}" >"$WORK/rust.jsonl"
log "measuring the Python reference (bench/py_jcs.py run)"
"$PY" "$ROOT/bench/py_jcs.py" run "${timing_args[@]}" "${sets[@]}" >"$WORK/python.jsonl"

# 5b. Parsers alone, on the same inputs: ours, serde_json::from_slice and Python's json.loads.
#     Sets: the hashing sets above, plus DWP journal lines (the dwp-cli golden journals).
parse_sets=("${sets[@]}")
mkdir -p "$WORK/docs/journal"
if cat "$ROOT"/crates/dwp-cli/tests/it/golden*/*journal.ndjson >"$WORK/docs/journal/journal.ndjson" 2>/dev/null; then
    parse_sets+=("dwp-journal=$WORK/docs/journal")
else
    log "no dwp-cli golden journals: no journal parse set"
fi
log "measuring the parsers (cw-bench parse, py_jcs.py parse)"
"$CW_BENCH" parse "${timing_args[@]}" "${parse_sets[@]}" >"$WORK/parse.rust.jsonl"
"$PY" "$ROOT/bench/py_jcs.py" parse "${timing_args[@]}" "${parse_sets[@]}" >"$WORK/parse.python.jsonl"

# 6. Report.
"$PY" - "$WORK/parse.rust.jsonl" "$WORK/parse.python.jsonl" <<'EOF0'
import json, sys

recs = [json.loads(l) for p in sys.argv[1:] for l in open(p) if l.strip()]
def get(s, impl):
    return next((r for r in recs if r['set'] == s and r['impl'] == impl), None)
sets = []
for r in recs:
    if r['set'] not in sets:
        sets.append(r['set'])
def mb(r):
    return 'n/a' if r is None else f"{r['mb_per_s']:.0f}"
def ratio(a, b):
    return 'n/a' if a is None or b is None else f"{a['mb_per_s'] / b['mb_per_s']:.2f}x"
print()
print('Strict parse into a value tree (median of runs; MB/s over the input bytes)')
print(f"  {'set':<18} {'inputs':>7} {'ours':>9} {'serde_json':>11} {'python':>9} {'ours/serde':>11} {'ours/python':>12}")
for s in sets:
    o, sj, p = get(s, 'ours'), get(s, 'serde_json'), get(s, 'python-ref')
    n = (o or sj or p)['docs']
    print(f"  {s:<18} {n:>7} {mb(o):>9} {mb(sj):>11} {mb(p):>9} {ratio(o, sj):>11} {ratio(o, p):>12}")
print()
print('Targets (reported, never enforced)')
for s in sets:
    o, sj = get(s, 'ours'), get(s, 'serde_json')
    r = o['mb_per_s'] / sj['mb_per_s'] if o and sj else None
    status = 'n/a ' if r is None else ('MET ' if r >= 1 else 'MISS')
    shown = 'n/a' if r is None else f'{r:.2f}x'
    print(f"  [{status}] {s + ': ours parse >= serde_json::from_slice':<60} {shown:>9}")
EOF0

"$PY" - "$WORK/rust.jsonl" "$WORK/python.jsonl" <<'EOF'
import json, sys

recs = []
for path in sys.argv[1:]:
    with open(path) as fh:
        recs += [json.loads(line) for line in fh if line.strip()]

def get(set_, impl, op):
    for r in recs:
        if r['set'] == set_ and r['impl'] == impl and r['op'] == op:
            return r
    return None

def fmt(x, unit=''):
    if x is None:
        return 'n/a'
    if x >= 100:
        return f'{x:,.0f}{unit}'
    return f'{x:.3g}{unit}'

sets = []
for r in recs:
    if r['set'] not in sets and r['impl'] != 'ed25519-dalek' and r['op'] in ('hash', 'to_vec'):
        sets.append(r['set'])

order = [('ours', 'hash'), ('ours', 'parse+hash'), ('ours', 'to_jcs'),
         ('serde_json', 'to_vec'), ('serde_json', 'to_vec+sha256'),
         ('serde_json', 'parse+to_vec+sha256'), ('python-ref', 'hash'), ('python-ref', 'parse+hash')]

print()
print('Canonicalise + SHA-256 document hash (median of runs; MB/s over the JCS bytes hashed)')
for s in sets:
    first = next(r for r in recs if r['set'] == s)
    print()
    print(f"set {s}: {first['docs']} docs, {first['bytes']:,} JCS bytes per pass")
    base = get(s, 'ours', 'hash')
    print(f"  {'implementation':<12} {'operation':<22} {'docs/s':>12} {'MB/s':>9} {'us/doc':>10} {'vs ours hash':>13}")
    for impl, op in order:
        r = get(s, impl, op)
        if r is None:
            continue
        us = r['median_s'] / r['docs'] * 1e6
        rel = r['docs_per_s'] / base['docs_per_s'] if base else None
        print(f"  {impl:<12} {op:<22} {fmt(r['docs_per_s']):>12} {fmt(r['mb_per_s']):>9} {fmt(us):>10} {fmt(rel, 'x'):>13}")

print()
print('Side by side (MB/s)')
print(f"  {'set':<18} {'ours hash':>10} {'serde to_vec':>13} {'serde+sha':>10} {'python':>9} {'ours/python':>12} {'ours/serde':>11}")
checks = []
for s in sets:
    o, sv, ss, p = get(s, 'ours', 'hash'), get(s, 'serde_json', 'to_vec'), get(s, 'serde_json', 'to_vec+sha256'), get(s, 'python-ref', 'hash')
    op_, pp = get(s, 'ours', 'parse+hash'), get(s, 'python-ref', 'parse+hash')
    vs_py = o['docs_per_s'] / p['docs_per_s'] if o and p else None
    vs_serde = o['docs_per_s'] / sv['docs_per_s'] if o and sv else None
    print(f"  {s:<18} {fmt(o and o['mb_per_s']):>10} {fmt(sv and sv['mb_per_s']):>13} {fmt(ss and ss['mb_per_s']):>10} {fmt(p and p['mb_per_s']):>9} {fmt(vs_py, 'x'):>12} {fmt(vs_serde, 'x'):>11}")
    checks.append((f'{s}: ours hash >= 50x python-ref hash', vs_py, lambda x: x >= 50))
    if op_ and pp:
        checks.append((f'{s}: ours parse+hash >= 50x python-ref loads+hash', op_['docs_per_s'] / pp['docs_per_s'], lambda x: x >= 50))
    checks.append((f'{s}: ours hash >= 0.5x serde_json to_vec (ceiling)', vs_serde, lambda x: x >= 0.5))

sig_bare = next((r for r in recs if r['impl'] == 'ed25519-dalek'), None)
if sig_bare:
    print()
    print(f"Ed25519 verify of a signed document ({sig_bare['set']}, {sig_bare['bytes']:,} JCS bytes hashed)")
    print(f"  {'path':<40} {'verifies/s':>11} {'us/verify':>10} {'vs bare':>8}")
    for impl, label in [('ed25519-dalek', 'bare verify_strict(header bytes)'),
                        ('bench-local', 'bench-local full document path'),
                        ('cookwala', 'cookwala crate document verify')]:
        r = next((x for x in recs if x['impl'] == impl and x['set'] == sig_bare['set']), None)
        if r is None:
            print(f"  {label:<40} {'not measured (built without the cookwala feature)':>31}")
            continue
        # The ratio is the median over runs of the two times *in the same run* (the paths are
        # timed in turn within each run), steadier than a ratio of medians on a shared machine.
        vs = r.get('vs_bare_same_run', r['median_s'] / sig_bare['median_s'])
        print(f"  {label:<40} {fmt(r['docs_per_s']):>11} {fmt(r['median_s'] * 1e6):>10} {fmt(vs, 'x'):>8}")
    cw = next((x for x in recs if x['impl'] == 'cookwala'), None)
    checks.append(('cookwala verify <= 1.3x bare verify_strict',
                   cw.get('vs_bare_same_run', cw['median_s'] / sig_bare['median_s']) if cw else None,
                   lambda x: x <= 1.3))

print()
print('Targets (reported, never enforced)')
for label, value, ok in checks:
    status = 'n/a ' if value is None else ('MET ' if ok(value) else 'MISS')
    print(f"  [{status}] {label:<60} {fmt(value, 'x'):>9}")
EOF

# 7. Dry run: the 32 cases of the cookwala-samples bundle (4 recipes x 4 devices x humanPresent),
#    both implementations on the same bundle file (the one inside the installed package); each
#    checks every case against the bundle's expected result before timing.
if [[ "$BENCH_FEATURES" != *cookwala* ]]; then
    log "built without the cookwala feature: no dry-run measurements"
    exit 0
fi
BUNDLE="$("$PY" "$ROOT/bench/py_dryrun.py" bundle-path)"
log "measuring dry runs (Rust) on $BUNDLE"
"$CW_BENCH" dryrun "${timing_args[@]}" "$BUNDLE" >"$WORK/dryrun.rust.jsonl"
log "measuring dry runs (Python reference: cookwala_samples.simulator.dry_run)"
"$PY" "$ROOT/bench/py_dryrun.py" run "${timing_args[@]}" >"$WORK/dryrun.python.jsonl"
"$PY" - "$WORK/dryrun.rust.jsonl" "$WORK/dryrun.python.jsonl" <<'EOF2'
import json, sys

recs = [json.loads(l) for p in sys.argv[1:] for l in open(p) if l.strip()]
def get(impl, op):
    return next((r for r in recs if r['impl'] == impl and r['op'] == op), None)
ours, py, val = get('ours', 'dry-run'), get('python-ref', 'dry-run'), get('ours', 'validate')
prep = get('ours', 'dry-run prepared')
print()
print('Dry run over the 32 bundle cases (median of runs)')
print('  full: every case parses nothing but resolves recipe, device and limits from scratch;')
print('  prepared: each recipe (with its limits) and device resolved once, as a catalog x fleet check does')
print(f"  {'implementation':<24} {'cases/s':>12} {'us/case':>10} {'vs python':>10}")
for name, r in (('ours (full)', ours), ('ours (prepared)', prep), ('python-ref', py)):
    if r:
        rel = r['docs_per_s'] / py['docs_per_s'] if py else None
        shown = 'n/a' if rel is None else f'{rel:,.1f}x'
        print(f"  {name:<24} {r['docs_per_s']:>12,.0f} {r['median_s'] / r['docs'] * 1e6:>10.3f} {shown:>10}")
ratio = ours['docs_per_s'] / py['docs_per_s'] if ours and py else None
ratio_prep = prep['docs_per_s'] / py['docs_per_s'] if prep and py else None
if val:
    print(f"Strict validation of a typical recipe (salata-baladi): {val['median_s'] * 1e6:.1f} us")
print()
print('Targets (reported, never enforced)')
def line(label, value, ok, unit):
    status = 'n/a ' if value is None else ('MET ' if ok(value) else 'MISS')
    shown = 'n/a' if value is None else f'{value:,.1f}{unit}'
    print(f"  [{status}] {label:<60} {shown:>12}")
line('dry run (full, per case) >= 200x python-ref', ratio, lambda x: x >= 200, 'x')
line('dry run (prepared catalog x fleet) >= 200x python-ref', ratio_prep, lambda x: x >= 200, 'x')
line('validate a typical recipe < 100 us', val and val['median_s'] * 1e6, lambda x: x < 100, ' us')
EOF2

# 8. Whole commands against the samples' Python: canon of 25 MB, dry-run --batch of 5,344 lines.
if [[ "$QUICK" == 1 ]]; then
    log "QUICK=1: whole-command timings skipped"
    exit 0
fi
PY="$PY" RUNS="${CLI_RUNS:-5}" "$ROOT/bench/cli.sh"

# 9. DWP read paths and append against the upstream helpers (bench/dwp.sh). The helpers cannot
#    be installed from a registry: DWP_UPSTREAM names a checkout of the upstream skill pack;
#    without it only our side is timed and the table says so.
RUNS="${DWP_RUNS:-11}" "$ROOT/bench/dwp.sh" "${DWP_UPSTREAM:-}"
