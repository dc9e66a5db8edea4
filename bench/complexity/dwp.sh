#!/usr/bin/env bash
# Worst-case work per input, DWP side: each DWP path timed on a generated hostile shape at size n
# and 2n (release build, process start included, median of RUNS runs). A linear path shows about
# 2x growth; a quadratic one about 4x. One line per path:
#
#   <path: shape>                                              t_n (s)  t_2n (s)  growth
#
# The shapes (see ARCHITECTURE.md, "Worst-case work per input", "DWP"):
#   contract validate-contract   a chain of n tasks (each the prerequisite of the next)
#   contract validate-journal    n gate_runs, each on its own task of an n-task contract
#   ledger project / append      a journal whose last line is n MiB (the tail read)
#   ledger project, verify, scheduler ready, status, outcomes closure
#                                n tasks, criteria and invariants; n task_starts, gate_runs
#                                and invariant observations
# and, once, the refusal of a last line over the 64 MiB line limit (200 MiB; must be fast).
#
# Usage: bench/complexity/dwp.sh            (RUNS=3 by default; N_SCALE=2 doubles every n;
#                                           SECTIONS=contract,journal,tail,progress,huge picks)
#        DWP_BIN=/path/to/dwp bench/complexity/dwp.sh   time another build (no cargo build)
# Runs on its own or from bench/complexity.sh. Fixtures live in target/complexity-dwp (rebuilt
# each run). Numbers only; nothing fails on timing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
RUNS="${RUNS:-3}"
SCALE="${N_SCALE:-1}"
WORK="$ROOT/target/complexity-dwp"
PY="${PYTHON:-python3}"
log() { printf 'complexity/dwp: %s\n' "$*" >&2; }

if [[ -n "${DWP_BIN:-}" ]]; then
    dwp="$DWP_BIN"
else
    log "building dwp (release)"
    cargo build --quiet --release -p dwp-cli --manifest-path "$ROOT/Cargo.toml" >&2
    dwp="$ROOT/target/release/dwp"
fi
rm -rf "$WORK"
mkdir -p "$WORK"
export DWP_CACHE_DIR="$WORK/cache"

"$PY" - "$dwp" "$WORK" "$RUNS" "$SCALE" <<'PYEOF'
import json, os, statistics, subprocess, sys, time

dwp, work, runs, scale = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
only = [s for s in os.environ.get("SECTIONS", "").split(",") if s]


def wanted(section):
    return not only or section in only
PLAN = "PLAN_001_complexity_plan"
CID0 = "0" * 64


def run(args, ok=(0, 1)):
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode not in ok:
        sys.exit(f"complexity/dwp: {args[:4]} exited {p.returncode}: {p.stderr.decode()[:300]}")
    return p.returncode


def timed(args, ok=(0, 1), before=None):
    times = []
    for _ in range(runs):
        if before:
            before()
        t = time.perf_counter()
        run(args, ok)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def contract(n_tasks, chain=False, criteria=1, invariants=0):
    crits = [{"id": f"AC-c{i}", "statement": "s", "observable_check": "true",
              "accepted_evidence": ["observed", "asserted"]} for i in range(criteria)]
    tasks = []
    for i in range(n_tasks):
        tasks.append({"id": f"T-t{i}", "title": f"task {i}",
                      "prerequisites": [f"T-t{i-1}"] if chain and i else [],
                      "touched_surface": ["src.txt"],
                      "gate_intent": [{"criterion": f"AC-c{i % criteria}", "check": "true"}]})
    return {"schema": "https://deepworkplan.com/schema/plan-contract/v6.json",
            "spec_version": "6.0.0", "plan": PLAN, "revision": 1,
            "created_at": "2026-11-30T00:00:00Z",
            "outcome": {"statement": "o", "success_definition": "d", "out_of_scope": []},
            "acceptance": {"criteria": crits},
            "invariants": [{"id": f"INV-i{i}", "statement": "s"} for i in range(invariants)],
            "scope": {"allowed_paths": ["src.txt"],
                                        "allowed_command_classes": ["true"],
                                        "forbidden_operations": ["force-push"]},
            "authorization": {"mechanism": "plan_authorship", "authority": "dev",
                              "timestamp": "2026-11-30T00:00:00Z", "boundaries": "b",
                              "consent_checkpoints": []},
            "permissions": {"granted": ["gate_command_exec"], "not_granted": []},
            "dependencies": [],
            "resource_envelope": {"limits": [{"id": "wall_h", "limit": 1, "unit": "hours",
                                              "enforcement": "advisory"}]},
            "tasks": tasks}


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


def plan(name, doc):
    """A git repository with a materialized plan of contract `doc`; returns the plan dir."""
    root = os.path.join(work, name)
    pdir = os.path.join(root, ".dwp", "plans", PLAN)
    os.makedirs(pdir)
    open(os.path.join(root, ".gitignore"), "w").write(".dwp/\n")
    open(os.path.join(root, "src.txt"), "w").write("hello\n")
    open(os.path.join(pdir, "README.md"), "w").write("# plan\n")
    for args in (["init", "-q", "."], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-c", "user.email=c@example.com", "-c", "user.name=c"] + args,
                       cwd=root, check=True)
    cfile = os.path.join(work, name + ".contract.json")
    write(cfile, doc)
    run([dwp, "ledger", "--plan", pdir, "materialize", "--contract", cfile], ok=(0,))
    return pdir


def event(seq, etype, cid, **fields):
    ev = {"schema": "https://deepworkplan.com/schema/journal-event/v6.json", "type": etype,
          "seq": seq, "ts": "2026-11-30T00:00:00Z", "plan": PLAN, "contract_id": cid,
          "actor": {"kind": "helper", "identity": "bench"}}
    ev.update(fields)
    return json.dumps(ev, separators=(",", ":"), sort_keys=True)


def journal_cid(pdir):
    with open(os.path.join(pdir, "journal.ndjson")) as f:
        return json.loads(f.readline())["contract_id"]


def progress_journal(pdir, n):
    """n task_starts, n observed passing gate_runs (one per task), n invariant passes."""
    cid = journal_cid(pdir)
    lines = []
    seq = 2
    for i in range(n):
        lines.append(event(seq, "task_start", cid, task=f"T-t{i}", fingerprint="f" * 64))
        seq += 1
    for i in range(n):
        lines.append(event(seq, "gate_run", cid, task=f"T-t{i}", criterion=f"AC-c{i}",
                           command="true", exit_code=0, trust="observed",
                           evidence_path="gates/x.log"))
        seq += 1
    for i in range(n):
        lines.append(event(seq, "observation", cid, statement=f"INV-i{i}: pass",
                           trust="asserted"))
        seq += 1
    with open(os.path.join(pdir, "journal.ndjson"), "a") as f:
        f.write("\n".join(lines) + "\n")


def long_last_line(pdir, mib):
    cid = journal_cid(pdir)
    line = event(2, "observation", cid, statement="x" * (mib << 20), trust="asserted")
    with open(os.path.join(pdir, "journal.ndjson"), "a") as f:
        f.write(line + "\n")


def cold():
    """Every run starts without the read paths' caches (checkpoint, summary): the full work."""
    subprocess.run(["rm", "-rf", os.environ["DWP_CACHE_DIR"]], check=True)


def report(label, t1, t2):
    print("%-56s %10.4f %10.4f %6.2fx" % (label, t1, t2, t2 / t1 if t1 > 0 else 0.0),
          flush=True)


rows = []
# contract validate-contract: a chain of n tasks
n = 20000 * scale
ts = []
for k in (n, 2 * n) if wanted("contract") else ():
    f = os.path.join(work, f"chain-{k}.json")
    write(f, contract(k, chain=True))
    ts.append(timed([dwp, "contract", "validate-contract", f]))
if ts:
    report(f"contract validate-contract: chain of {n} tasks", *ts)

# contract validate-journal: n gate_runs on n tasks
n = 10000 * scale
ts = []
for k in (n, 2 * n) if wanted("journal") else ():
    c = os.path.join(work, f"vj-{k}.contract.json")
    write(c, contract(k, criteria=k))
    j = os.path.join(work, f"vj-{k}.ndjson")
    with open(j, "w") as f:
        for i in range(k):
            f.write(event(i + 1, "gate_run", CID0, task=f"T-t{i}", criterion=f"AC-c{i}",
                          command="true", exit_code=0, trust="observed",
                          evidence_path="gates/x.log") + "\n")
    ts.append(timed([dwp, "contract", "validate-journal", j, "--contract", c]))
if ts:
    report(f"contract validate-journal: {n} gate_runs x {n} tasks", *ts)

# the tail read: ledger project and append on a journal whose last line is n MiB (2n stays
# under the 64 MiB line limit)
n = min(8 * scale, 16)
pro, app = [], []
for k in (n, 2 * n) if wanted("tail") else ():
    p = plan(f"tail-{k}", contract(1))
    long_last_line(p, k)
    pro.append(timed([dwp, "ledger", "--plan", p, "project"], ok=(0,), before=cold))
    app.append(timed([dwp, "ledger", "--plan", p, "append", "--type", "observation",
                      "--trust", "asserted", "--json", '{"statement":"s"}'], ok=(0,),
                     before=cold))
if pro:
    report(f"ledger project: last line of {n} MiB", *pro)
    report(f"ledger append: last line of {n} MiB", *app)

# n tasks x n gate_runs: the per-task paths
n = 2000 * scale
paths = {"ledger project": [], "verify": [], "scheduler ready": [], "status": [],
         "outcomes closure": []}
for k in (n, 2 * n) if wanted("progress") else ():
    p = plan(f"progress-{k}", contract(k, criteria=k, invariants=k))
    progress_journal(p, k)
    paths["ledger project"].append(
        timed([dwp, "ledger", "--plan", p, "project"], ok=(0,), before=cold))
    paths["verify"].append(timed([dwp, "verify", p]))
    paths["scheduler ready"].append(timed([dwp, "scheduler", "ready", p], before=cold))
    paths["status"].append(timed([dwp, "status", p]))
    paths["outcomes closure"].append(timed([dwp, "outcomes", "closure", "--plan", p]))
for name, ts in paths.items() if wanted("progress") else ():
    report(f"{name}: {n} each task/criterion/evidence", *ts)

# A last line over the 64 MiB limit is refused, not read (once; no growth to show).
if not wanted("huge"):
    sys.exit(0)
p = plan("huge", contract(1))
long_last_line(p, 200)
t = timed([dwp, "ledger", "--plan", p, "append", "--type", "observation", "--trust", "asserted",
           "--json", '{"statement":"s"}'], ok=(1,))
print("%-56s %10.4f %10s %7s" % ("ledger append: last line of 200 MiB (refused)", t, "-", "-"))
PYEOF
