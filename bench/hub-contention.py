#!/usr/bin/env python3
"""Hub contention phase: do executions on different devices slow each other's stops?

A fresh `cookwala serve` (release, SQLite in a temporary folder, speed 60 so the clock commits
every 100 ms) loads DEVICES copies of the built-in hob robot (default 8). Two measurements, each
over ROUNDS rounds:

- alone: one execution runs (on the first device) and is stopped; the stop's latency;
- together: an execution runs on every device and all are stopped at the same moment, one
  client thread per device; each stop's latency.

A stop commits its change (an fsync) before it answers. Under one lock for the kitchen, the
stops of the `together` rounds wait for each other's commits, so their latency grows with the
number of devices; with one lock per execution they share group commits and should stay near
`alone`. The table prints both, and their ratio. Numbers only: nothing here fails on timing.

    bench/hub-contention.py                    # after bench/hub.sh (or a release build)
    DEVICES=8 ROUNDS=30 bench/hub-contention.py
    WORK=/some/disk bench/hub-contention.py    # where the data folder goes (the disk whose
                                               # fsync is measured; default target/cw-bench)
    COOKWALA=/path/to/other/cookwala bench/hub-contention.py   # another build, same inputs
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import multiprocessing
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import importlib  # noqa: E402

scale = importlib.import_module("hub-scale")

DEVICES = int(os.environ.get("DEVICES", "8"))
ROUNDS = int(os.environ.get("ROUNDS", "30"))
SPEED = os.environ.get("SPEED", "60")
ROOT = scale.ROOT
BIN = scale.BIN


def log(msg):
    print(f"hub-contention: {msg}", file=sys.stderr, flush=True)


def start(client, eid, dev, rhash):
    body = json.dumps({
        "core": "0.2.0", "kind": "ExecuteRequest", "id": eid,
        "recipe": f"cw:cookwala-rs:{scale.RECIPE}", "recipeHash": rhash,
        "requestedBy": "person:bench", "idempotencyKey": f"k-{eid}",
        "x-hub-human-present": False,
    })
    status, reply = client.request("POST", f"/devices/{dev}/v1/executions", body, f"k-{eid}")
    if status not in (200, 201, 202) or b'"refused"' in reply:
        raise RuntimeError(f"start {eid} on {dev}: {status} {reply[:300]!r}")


def stop(client, eid, dev):
    s0 = time.perf_counter()
    status, reply = client.request("POST", f"/devices/{dev}/v1/executions/{eid}/stop", b"{}")
    ms = (time.perf_counter() - s0) * 1000
    if status not in (200, 202):
        raise RuntimeError(f"stop {eid}: {status} {reply[:300]!r}")
    return ms


def stop_in_process(port, eid, dev, barrier, results):
    client = scale.Client(port)
    client.request("GET", "/v1/devices")  # the connection is open before the barrier
    barrier.wait()
    try:
        results.put(stop(client, eid, dev))
    except Exception as e:  # noqa: BLE001 (reported to the parent)
        results.put(f"{eid}: {e}")


def wait_stopped(client, eid, dev):
    # The device is free again once the execution has reached `stopped`.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, reply = client.request("GET", f"/devices/{dev}/v1/executions/{eid}")
        if status == 200 and b'"state":"stopped"' in reply:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{eid} did not reach stopped")


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


def run(rhash):
    base = os.environ.get("WORK", os.path.join(ROOT, "target", "cw-bench", "contention"))
    os.makedirs(base, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hub-contention-", dir=base)
    try:
        devices = os.path.join(work, "devices")
        os.makedirs(devices)
        devs = [f"dev-{i:02d}" for i in range(DEVICES)]
        for d in devs:
            shutil.copy(scale.DEVICE, os.path.join(devices, f"{d}.json"))
        port = scale.free_port()
        proc = subprocess.Popen(
            [BIN, "serve", "--addr", f"127.0.0.1:{port}", "--data", os.path.join(work, "data"),
             "--speed", SPEED, "--token", scale.TOKEN, "--devices", devices,
             "--heartbeat-secs", "0"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "hub.log"), "w"))
        try:
            clients = [scale.Client(port) for _ in devs]
            scale.wait_ready(clients[0], proc)
            alone, together = [], []
            for r in range(ROUNDS):
                eid = f"ex-alone-{r:03d}"
                start(clients[0], eid, devs[0], rhash)
                time.sleep(0.2)
                alone.append(stop(clients[0], eid, devs[0]))
                wait_stopped(clients[0], eid, devs[0])
            log(f"alone: {ROUNDS} stops")
            for r in range(ROUNDS):
                ids = [f"ex-tog-{r:03d}-{i:02d}" for i in range(len(devs))]
                for c, eid, d in zip(clients, ids, devs):
                    start(c, eid, d, rhash)
                time.sleep(0.2)
                # One process per device (not threads: the interpreter's lock would queue
                # the clients themselves), released together by a barrier.
                barrier = multiprocessing.Barrier(len(devs))
                results = multiprocessing.Queue()
                procs = [multiprocessing.Process(target=stop_in_process,
                                                 args=(port, ids[i], devs[i], barrier, results))
                         for i in range(len(devs))]
                for p in procs:
                    p.start()
                out = [results.get(timeout=60) for _ in procs]
                for p in procs:
                    p.join()
                if any(isinstance(v, str) for v in out):
                    raise RuntimeError(f"a stop failed: {out}")
                together.extend(out)
                for c, eid, d in zip(clients, ids, devs):
                    wait_stopped(c, eid, d)
            log(f"together: {ROUNDS} rounds of {len(devs)} stops")
            return alone, together
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if not os.access(BIN, os.X_OK):
        sys.exit(f"hub-contention: {BIN} is missing: cargo build --release -p cookwala-cli")
    rhash = scale.recipe_hash()
    log(f"{DEVICES} devices, {ROUNDS} rounds, {BIN}")
    alone, together = run(rhash)
    rows = [("alone (1 device)", alone), (f"together ({DEVICES} devices)", together)]
    print()
    print(f"Hub contention: a stop alone vs. {DEVICES} stops at once on {DEVICES} devices "
          f"({ROUNDS} rounds; speed {SPEED})")
    print(f"  {'':<22} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}")
    for name, v in rows:
        print(f"  {name:<22} {statistics.median(v):>6.2f}ms {pct(v, 0.9):>6.2f}ms "
              f"{pct(v, 0.99):>6.2f}ms {max(v):>6.2f}ms")
    print(f"  {'ratio together/alone':<22} {statistics.median(together) / statistics.median(alone):>7.2f}x "
          f"{pct(together, 0.9) / pct(alone, 0.9):>7.2f}x {pct(together, 0.99) / pct(alone, 0.99):>7.2f}x")
    os.makedirs(os.path.join(ROOT, "target", "cw-bench"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "cw-bench", "hub-contention.jsonl"), "w") as f:
        f.write(json.dumps({"devices": DEVICES, "rounds": ROUNDS, "alone_ms": alone,
                            "together_ms": together}) + "\n")


if __name__ == "__main__":
    main()
