#!/usr/bin/env python3
"""The plan lock under contention: PROCS processes each run EACH `dwp ledger append`s at once on
one plan, with no extra flag, ROUNDS times (a fresh plan each round). Checks, per round, that
the seqs are 1..n with no gap or duplicate, that every append that exited 0 is in the journal
and every append that exited non-zero is not, and prints how many were refused.

Usage: bench/dwp-contention.py [DWP] [PROCS] [EACH] [ROUNDS]
       (defaults: target/release/dwp 10 50 3; build it first with
        cargo build --release -p dwp-cli)
Needs git and python3. Scratch plans go to a temporary folder, removed at the end.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dwp = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "dwp")
procs, each, rounds = (int(a) for a in (sys.argv[2:5] + ["10", "50", "3"][len(sys.argv[2:5]):]))
PLAN = "PLAN_001_contend_plan"
# The test suite's small contract (one place defines it), renamed to this plan.
support = open(os.path.join(ROOT, "crates", "dwp-cli", "tests", "it", "support.rs")).read()
contract = support.split('pub(crate) const CONTRACT: &str = r#"')[1].split('"#;')[0]
contract = contract.replace("PLAN_001_demo_plan", PLAN)

work = tempfile.mkdtemp(prefix="dwp-contention-")
refused_total = total = 0
try:
    for r in range(rounds):
        root = os.path.join(work, f"r{r}")
        pdir = os.path.join(root, ".dwp", "plans", PLAN)
        os.makedirs(pdir)
        open(os.path.join(root, ".gitignore"), "w").write(".dwp/\n")
        open(os.path.join(root, "src.txt"), "w").write("x\n")
        open(os.path.join(pdir, "README.md"), "w").write("# plan\n")
        for args in (["init", "-q", "."], ["add", "."], ["commit", "-qm", "init"]):
            subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a"] + args,
                           cwd=root, check=True)
        cfile = os.path.join(work, f"contract-{r}.json")
        open(cfile, "w").write(contract)
        subprocess.run([dwp, "ledger", "--plan", pdir, "materialize", "--contract", cfile],
                       check=True, stdout=subprocess.DEVNULL)

        def writer(w):
            out = []
            for i in range(each):
                statement = f"writer {w} append {i}"
                p = subprocess.run([dwp, "ledger", "--plan", pdir, "append", "--type",
                                    "observation", "--trust", "asserted", "--json",
                                    json.dumps({"statement": statement})], capture_output=True)
                out.append((statement, p.returncode, p.stderr.decode(errors="replace")[:200]))
            return out

        started = time.time()
        with concurrent.futures.ThreadPoolExecutor(procs) as pool:
            futures = [pool.submit(writer, w) for w in range(procs)]
            results = [x for f in futures for x in f.result()]
        elapsed = time.time() - started
        with open(os.path.join(pdir, "journal.ndjson")) as f:
            events = [json.loads(line) for line in f]
        seqs = [e["seq"] for e in events]
        written = {e.get("statement") for e in events}
        assert seqs == list(range(1, len(events) + 1)), "a seq gap or duplicate"
        refused = [x for x in results if x[1] != 0]
        lies = [x for x in refused if x[0] in written]
        lost = [x for x in results if x[1] == 0 and x[0] not in written]
        assert not lies, f"refused but written: {lies[:3]}"
        assert not lost, f"reported written but missing: {lost[:3]}"
        refused_total += len(refused)
        total += len(results)
        example = f" (e.g. {refused[0][2].strip()})" if refused else ""
        print(f"round {r}: {len(results)} appends in {elapsed:.1f} s, {len(refused)} refused, "
              f"seqs 1..{len(events)}, every success present, every failure absent{example}")
    print(f"total: {total} appends, {refused_total} refused "
          f"({100 * refused_total / max(total, 1):.2f} %)")
finally:
    shutil.rmtree(work, ignore_errors=True)
