#!/usr/bin/env bash
# Worst-case growth of the hub's own paths (issue 22): a release `cookwala serve` on a free
# loopback port, each path timed at n and at 2n, one line per path:
#
#   <path: shape>                                              t_n (s)   t_2n (s)  growth
#
# A linear path grows about 2x when its input doubles; the issue's bar is at most ~3x, and every
# answer within 5 s. Numbers only: nothing here fails on timing.
#
#   bench/complexity/hub.sh            # n = 2000 outbox events (about a minute after the build)
#   N=500 bench/complexity/hub.sh      # a quicker look
#
# Environment (defaults in brackets):
#   N [2000]          outbox events (refused starts) at n; 2n for the second column
#   FLOOD [150]       half-sent connections held open at n (2 x FLOOD at 2n)
#   COOKWALA_BIN      a built `cookwala` to use instead of building target/release/cookwala
#   JOBS [1]          cargo build jobs (the machine is shared)
#
# Paths: SSE resume from the first event (`?after=`) reading every later event; the dashboard
# list (`GET /v1/executions?limit=200`, whose outbox window doubles up to MAX_SCAN); a stop sent
# while FLOOD half-sent requests from the same address are open (the connection budget makes the
# oldest give way); a status read with an outbox of n (the idempotency and execution tables);
# the dashboard list again where creations are sparse (n/40 completed runs, on a second hub).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

N="${N:-2000}"
FLOOD="${FLOOD:-150}"
JOBS="${JOBS:-1}"

if [ -z "${COOKWALA_BIN:-}" ]; then
    printf 'complexity/hub: building cookwala (release, -j %s)\n' "$JOBS" >&2
    cargo build --release --locked -j "$JOBS" -p cookwala-cli >&2
    COOKWALA_BIN="$ROOT/target/release/cookwala"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/cw-complexity-hub.XXXXXX")"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
TOKEN="complexity-bench-token-0123456789"

"$COOKWALA_BIN" serve --addr "127.0.0.1:$PORT" --data "$WORK/data" --token "$TOKEN" \
    --speed 60 --heartbeat-secs 0 >"$WORK/stdout" 2>"$WORK/stderr" &
HUB_PID=$!
cleanup() {
    kill "$HUB_PID" ${FAST_PID:-} 2>/dev/null || true
    wait "$HUB_PID" ${FAST_PID:-} 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# A second hub at a high speed, for runs that complete at once (the list's sparse shape).
FAST_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$COOKWALA_BIN" serve --addr "127.0.0.1:$FAST_PORT" --data "$WORK/fast" --token "$TOKEN" \
    --speed 200000 --heartbeat-secs 0 >"$WORK/fast.stdout" 2>"$WORK/fast.stderr" &
FAST_PID=$!

python3 - "$PORT" "$TOKEN" "$N" "$FLOOD" "$FAST_PORT" <<'PY'
import http.client, socket, statistics, sys, time

port, token, n, flood = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
auth = {"Authorization": f"Bearer {token}"}

for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)

conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

def call(method, path, body=None, headers=None):
    h = dict(auth)
    h.update(headers or {})
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
    except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
        # An idle kept-alive connection gives way to a flood (that is the design): reconnect.
        conn.close()
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
    return r.status, r.read()

made = 0
def refused_starts(count):
    """`count` starts with a wrong recipeHash: each is refused and adds one outbox event."""
    global made
    for _ in range(count):
        made += 1
        ex = f"ex-cx-{made}"
        body = ('{"core":"0.2.0","kind":"ExecuteRequest","id":"%s","recipe":"cw:x:red-lentil-soup",'
                '"recipeHash":"sha256:%s","requestedBy":"person:cook","idempotencyKey":"%s-key"}'
                % (ex, "0" * 64, ex))
        status, out = call("POST", "/v1/executions", body,
                           {"Idempotency-Key": f"{ex}-key", "Content-Type": "application/json"})
        if status != 202:
            sys.exit(f"complexity/hub: start {ex}: {status} {out[:200]!r}")

def best(f, runs=5):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)

def sse_resume(after, count):
    """Reads the SSE stream after `after` until `count` stored events (id: lines) arrived."""
    def run():
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall((f"GET /cookwala/v1/events?after={after} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"Authorization: Bearer {token}\r\n\r\n").encode())
        seen, buf = 0, b""
        while seen < count:
            chunk = s.recv(1 << 16)
            if not chunk:
                sys.exit("complexity/hub: the event stream ended early")
            buf += chunk
            lines = buf.split(b"\n")
            buf = lines.pop()
            seen += sum(1 for l in lines if l.startswith(b"id:"))
        s.close()
    return best(run, 3)

def dashboard_list():
    def run():
        status, _ = call("GET", "/v1/executions?limit=200")
        assert status == 200, status
    return best(run)

def status_read():
    def run():
        for _ in range(50):
            status, _ = call("GET", "/v1/executions/ex-cx-1")
            assert status == 200, status
    return best(run)

def stop_through_flood(k):
    held = []
    for i in range(k):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=60)
            s.sendall(f"GET /v1/capabilities?n={i} HTTP/1.1\r\nHost: x\r\n".encode())
            held.append(s)
        except OSError:
            pass
    t = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/executions/ex-cx-1/stop HTTP/1.1\r\nHost: x\r\n"
              b"Connection: close\r\nContent-Length: 0\r\n\r\n")
    out = b""
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        out += chunk
    took = time.perf_counter() - t
    if not out.startswith(b"HTTP/1.1 202"):
        sys.exit(f"complexity/hub: stop through a flood of {k}: {out[:200]!r}")
    for h in held:
        h.close()
    return took

results = {}
# The first start's event is where every resume starts ("from 0" of the outbox it made).
refused_starts(1)
status, body = call("GET", "/v1/executions?limit=1")
import json
first = json.loads(body)["executions"][0]["event"]
refused_starts(n - 1)

def measure(label):
    results.setdefault("sse resume: ?after= the first event, every later one", []).append(
        sse_resume(first, made - 1))
    results.setdefault("dashboard list: limit=200 over the outbox window", []).append(
        dashboard_list())
    results.setdefault("status read x50: with the stored executions", []).append(status_read())

measure("n")
results.setdefault("stop: through FLOOD half-sent requests, same address", []).append(
    stop_through_flood(flood))
refused_starts(n)
measure("2n")
results.setdefault("stop: through FLOOD half-sent requests, same address", []).append(
    stop_through_flood(2 * flood))

# The list's worst shape: creations sparse in the outbox (every completed run leaves dozens of
# events after its `accepted`), so the window has to double towards MAX_SCAN. A second hub at a
# high speed completes RUNS runs (2 x RUNS at 2n) of a stock one after the other.
fast = sys.argv[5]
if fast:
    port = int(fast)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    recipe = call("GET", "/v1/tools/recipes/vegetable-stock")[1]
    digest = json.loads(call("POST", "/v1/tools/hash", b'{"doc":' + recipe + b"}",
                             {"Content-Type": "application/json"})[1])["hash"]
    runs = 0
    def complete(count):
        global runs
        for _ in range(count):
            runs += 1
            ex = f"ex-run-{runs}"
            body = json.dumps({"core": "0.2.0", "kind": "ExecuteRequest", "id": ex,
                               "recipe": "cw:x:vegetable-stock", "recipeHash": digest,
                               "requestedBy": "person:cook", "idempotencyKey": ex + "-key"})
            status, out = call("POST", "/v1/executions", body,
                               {"Idempotency-Key": ex + "-key", "Content-Type": "application/json"})
            if status != 202 or b'"accepted"' not in out:
                sys.exit(f"complexity/hub: run {ex}: {status} {out[:200]!r}")
            for _ in range(2000):
                state = json.loads(call("GET", f"/v1/executions/{ex}")[1])["state"]
                if state in ("completed", "stopped", "failed"):
                    break
                time.sleep(0.01)
            else:
                sys.exit(f"complexity/hub: run {ex} did not end")
    runs_n = max(1, n // 40)
    label = "dashboard list: creations sparse (completed runs)"
    complete(runs_n)
    results.setdefault(label, []).append(dashboard_list())
    complete(runs_n)
    results.setdefault(label, []).append(dashboard_list())

for path, (a, b) in results.items():
    path = path.replace("FLOOD", f"{flood}/{2 * flood}")
    print("%-56s %10.4f %10.4f %6.2fx" % (path[:56], a, b, b / a if a > 0 else float("nan")))
PY
