#!/usr/bin/env python3
"""Hub scale phase: many simulated devices, each running an execution, on one hub.

For each device count N (default 10, 100 and 1,000), a fresh `cookwala serve` (release, SQLite
in a temporary folder, speed 1) loads N copies of the built-in hob robot (`--devices`, one file
each) and starts `red-lentil-soup` on every one. With all N running it reports:

- the hub's CPU over a window (user + system, from /proc), as a share of one core, per device
  and per simulated hour per device;
- the hub's memory (RSS) per device: after the starts minus before them, over N;
- the latency of `POST /devices/{d}/v1/executions/{id}/stop` on one device while the others run (a sample
  of devices, one stop each; p50, p99 and the largest).

Numbers only: nothing here fails on timing. Goal (issue 26): under one core for 1,000 devices
at speed 1, and the stop's p99 under 50 ms with all running.

    bench/hub-scale.py                     # builds nothing: run bench/hub.sh first, or
    cargo build --release -p cookwala-cli && bench/hub-scale.py
    COUNTS=10,100 WINDOW=5 STOPS=20 bench/hub-scale.py
"""

import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("COOKWALA", os.path.join(ROOT, "target", "release", "cookwala"))
DEVICE = os.path.join(ROOT, "crates", "cookwala", "data", "devices", "sim-hob-robot.json")
RECIPE_FILE = os.path.join(ROOT, "crates", "cookwala", "data", "recipes", "red-lentil-soup.cookwala.json")
RECIPE = "red-lentil-soup"
TOKEN = "bench-scale-token-0123456789"
COUNTS = [int(x) for x in os.environ.get("COUNTS", "10,100,1000").split(",") if x]
WINDOW = float(os.environ.get("WINDOW", "10"))
STOPS = int(os.environ.get("STOPS", "50"))
TICKS = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"hub-scale: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line (11 and 12 after the name).
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Client:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(self, method, path, body=None, key=None):
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                reply = self.conn.getresponse()
                return reply.status, reply.read()
            except (http.client.HTTPException, OSError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        raise RuntimeError("unreachable")


def recipe_hash():
    out = subprocess.run([BIN, "hash", RECIPE_FILE], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def wait_ready(client, proc):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the hub exited with {proc.returncode}")
        try:
            status, _ = client.request("GET", "/v1/devices")
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the hub did not answer within 60 s")


def phase(n, rhash):
    work = tempfile.mkdtemp(prefix=f"hub-scale-{n}-")
    try:
        devices = os.path.join(work, "devices")
        os.makedirs(devices)
        for i in range(n):
            shutil.copy(DEVICE, os.path.join(devices, f"dev-{i:04d}.json"))
        port = free_port()
        proc = subprocess.Popen(
            [BIN, "serve", "--addr", f"127.0.0.1:{port}", "--data", os.path.join(work, "data"),
             "--speed", "1", "--token", TOKEN, "--devices", devices, "--heartbeat-secs", "0"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "hub.log"), "w"))
        try:
            client = Client(port)
            wait_ready(client, proc)
            rss_before = rss_bytes(proc.pid)
            ids = []
            t0 = time.monotonic()
            for i in range(n):
                eid = f"ex-{i:04d}"
                body = json.dumps({
                    "core": "0.2.0", "kind": "ExecuteRequest", "id": eid,
                    "recipe": f"cw:cookwala-rs:{RECIPE}", "recipeHash": rhash,
                    "requestedBy": "person:bench", "idempotencyKey": f"k-{eid}",
                    "x-hub-human-present": False,
                })
                status, reply = client.request("POST", f"/devices/dev-{i:04d}/v1/executions", body, f"k-{eid}")
                if status not in (200, 201, 202) or b'"refused"' in reply:
                    raise RuntimeError(f"start on dev-{i:04d}: {status} {reply[:300]!r}")
                ids.append((eid, f"dev-{i:04d}"))
            start_secs = time.monotonic() - t0
            time.sleep(3.0)
            # Every execution must be running (not waiting) for the CPU figure to mean anything.
            for eid, dev in ids[:: max(1, n // 10)]:
                status, reply = client.request("GET", f"/devices/{dev}/v1/executions/{eid}")
                if status != 200 or b'"state":"running"' not in reply:
                    raise RuntimeError(f"{eid} is not running: {status} {reply[:200]!r}")
            rss_after = rss_bytes(proc.pid)
            c0, w0 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(WINDOW)
            c1, w1 = cpu_seconds(proc.pid), time.monotonic()
            cores = (c1 - c0) / (w1 - w0)
            # One stop each on a sample of devices spread over all of them, the rest running.
            sample = ids[:: max(1, n // min(STOPS, n))][:STOPS]
            latencies = []
            for eid, dev in sample:
                s0 = time.perf_counter()
                status, reply = client.request("POST", f"/devices/{dev}/v1/executions/{eid}/stop", b"{}")
                latencies.append((time.perf_counter() - s0) * 1000)
                if status not in (200, 202):
                    raise RuntimeError(f"stop {eid}: {status} {reply[:300]!r}")
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(round(0.99 * (len(latencies) - 1))))]
            return {
                "devices": n,
                "start_s": start_secs,
                "cores": cores,
                "cpu_ms_per_device_s": (c1 - c0) / n / (w1 - w0) * 1000,
                "cpu_s_per_device_sim_hour": (c1 - c0) / n / ((w1 - w0) / 3600),
                "rss_mb": rss_after / 1e6,
                "rss_kb_per_device": (rss_after - rss_before) / n / 1000,
                "stop_p50_ms": statistics.median(latencies),
                "stop_p99_ms": p99,
                "stop_max_ms": latencies[-1],
                "stops": len(latencies),
            }
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
        sys.exit(f"hub-scale: {BIN} is missing: cargo build --release -p cookwala-cli")
    rhash = recipe_hash()
    rows = []
    for n in COUNTS:
        log(f"{n} devices: starting the hub and {n} executions")
        rows.append(phase(n, rhash))
    print()
    print(f"Hub scale: N devices each running {RECIPE} at speed 1 (CPU over {WINDOW:g} s; "
          f"stop latency over up to {STOPS} stops with the rest running)")
    print(f"  {'devices':>7} {'starts s':>9} {'hub cores':>10} {'CPU ms/dev/s':>13} {'CPU s/dev/sim h':>16}"
          f" {'RSS MB':>7} {'KB/dev':>7} {'stop p50':>9} {'p99':>7} {'max':>7}")
    for r in rows:
        print(f"  {r['devices']:>7} {r['start_s']:>9.2f} {r['cores']:>10.3f} {r['cpu_ms_per_device_s']:>13.3f}"
              f" {r['cpu_s_per_device_sim_hour']:>16.2f} {r['rss_mb']:>7.1f} {r['rss_kb_per_device']:>7.0f}"
              f" {r['stop_p50_ms']:>7.1f}ms {r['stop_p99_ms']:>5.1f}ms {r['stop_max_ms']:>5.1f}ms")
    big = rows[-1]
    print()
    print("Targets (reported, never enforced)")
    print(f"  [{'MET ' if big['cores'] < 1.0 else 'MISS'}] {big['devices']} devices under one core"
          f"{'':<24} {big['cores']:.3f} cores")
    print(f"  [{'MET ' if big['stop_p99_ms'] < 50 else 'MISS'}] stop p99 under 50 ms with all running"
          f"{'':<12} {big['stop_p99_ms']:.1f} ms")
    with open(os.path.join(ROOT, "target", "cw-bench", "hub-scale.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
