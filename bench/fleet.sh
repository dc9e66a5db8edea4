#!/usr/bin/env bash
# Fleet benchmark: durable POSTs per second through 1 and through 3 hub replicas sharing one
# PostgreSQL database, next to that database's own commit ceiling measured in the same run on
# the same disk (pgbench: one single-row INSERT per transaction, the same client count).
# Each POST is a fresh execution on the root device, refused `busy` after the first: one
# durable commit (execution row, idempotency record, event). Numbers only; nothing fails on
# timing.
#
#   bench/fleet.sh                # ~1 minute after the build
#   SECS=3 CONNS=4 bench/fleet.sh
#
# Environment: CONNS [8] connections per replica, SECS [5] per scenario, LEASE [10] seconds,
# JOBS [1] cargo build jobs. Needs Debian's postgresql (initdb, pg_ctl, pgbench); as root the
# cluster runs as the postgres user.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CONNS="${CONNS:-8}"; SECS="${SECS:-5}"; LEASE="${LEASE:-10}"; JOBS="${JOBS:-1}"

PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$PGBIN/initdb" ] || { echo "bench: PostgreSQL not installed (apt-get install postgresql)" >&2; exit 1; }
echo "bench: building cookwala and cw-bench (release, -j $JOBS)" >&2
cargo build --release --locked -j "$JOBS" -p cookwala-cli -p bench >&2

work="$(mktemp -d "${TMPDIR:-/tmp}/cw-fleet.XXXXXX")"
as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); chown postgres "$work"; fi
cleanup() {
  for f in "$work"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$PGBIN/initdb" -D "$work/pg" -U postgres --auth=trust -E UTF8 >/dev/null
mkdir -p "$work/sock"; [ ${#as_pg[@]} -gt 0 ] && chown postgres "$work/sock"
"${as_pg[@]}" "$PGBIN/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $port -c listen_addresses=127.0.0.1 -k $work/sock -c max_connections=200" start >/dev/null
"$PGBIN/createdb" -h 127.0.0.1 -p "$port" -U postgres hub
"$PGBIN/createdb" -h 127.0.0.1 -p "$port" -U postgres ceiling
url="postgres://postgres@127.0.0.1:$port/hub"

# The database's commit ceiling: single-row INSERT transactions, as many clients as POSTs in
# flight through three replicas.
clients=$((CONNS * 3))
psql -q -h 127.0.0.1 -p "$port" -U postgres ceiling -c \
  "CREATE TABLE t (id bigserial primary key, body text not null)"
printf 'INSERT INTO t (body) VALUES (repeat(%s, 1024));\n' "'x'" >"$work/insert.sql"
echo "bench: PostgreSQL commit ceiling ($clients clients, ${SECS}s)" >&2
ceiling=$("$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -c "$clients" -j 2 -T "${SECS%.*}" \
  -f "$work/insert.sql" ceiling 2>/dev/null | awk '/^tps = / {print $3}')

start_replica() { # NAME -> prints the address it listens on
  local name="$1" out="$work/$1.out"
  "$ROOT/target/release/cookwala" serve --addr 127.0.0.1:0 --data "$work/$name" --store "$url" \
    --lease-secs "$LEASE" --replica "$name" --token cw-bench-token-0123456789 --speed 0.001 \
    --heartbeat-secs 0 >"$out" 2>"$work/$name.err" &
  echo $! >"$work/$name.pid"   # called in $( ): the parent reads the pid from the file
  for _ in $(seq 100); do grep -q 'listening on' "$out" 2>/dev/null && break; sleep 0.1; done
  sed -n 's/.*listening on http:\/\///p' "$out" | head -1
}

# CPU seconds so far of the replicas and of the database server (all its processes).
ticks() { for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done | awk '{s += $1} END {print s + 0}'; }
hub_cpu() { ticks $(cat "$work"/*.pid); }
pg_cpu() { ticks $(pgrep -u "$(stat -c %U "$work/pg")"  postgres); }
load() { # ADDRS PREFIX -> JSON with the CPU each side used
  local h0 p0 out
  h0=$(hub_cpu); p0=$(pg_cpu)
  out=$(target/release/cw-bench fleet-load --addrs "$1" --conns "$CONNS" --secs "$SECS" --prefix "$2")
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["hub_cpu_s"]=(int(sys.argv[2])-int(sys.argv[3]))/100; r["pg_cpu_s"]=(int(sys.argv[4])-int(sys.argv[5]))/100; print(json.dumps(r))' \
    "$out" "$(hub_cpu)" "$h0" "$(pg_cpu)" "$p0"
}

a=$(start_replica r1)
echo "bench: 1 replica, $CONNS connections, ${SECS}s" >&2
one=$(load "$a" one)
b=$(start_replica r2); c=$(start_replica r3)
echo "bench: 3 replicas, $CONNS connections each, ${SECS}s" >&2
three=$(load "$a,$b,$c" three)

python3 - "$ceiling" "$one" "$three" "$SECS" "$(nproc)" <<'PY'
import json, sys
ceiling = float(sys.argv[1] or 0)
one, three = json.loads(sys.argv[2]), json.loads(sys.argv[3])
secs, cores = float(sys.argv[4]), int(sys.argv[5])
print(f"{'scenario':<44} {'per s':>9} {'vs ceiling':>10}")
print(f"{'PostgreSQL commit ceiling (pgbench INSERT)':<44} {ceiling:>9.0f} {'1.00x':>10}")
for name, r in (("durable POST, 1 replica", one), ("durable POST, 3 replicas", three)):
    ratio = r["posts_per_sec"] / ceiling if ceiling else float("nan")
    print(f"{name:<44} {r['posts_per_sec']:>9.0f} {ratio:>9.2f}x   p50 {max(r['p50_ms']):.1f} ms p99 {max(r['p99_ms']):.1f} ms")
print(f"{'3 replicas / 1 replica':<44} {three['posts_per_sec'] / one['posts_per_sec']:>9.2f}x")
for name, r in (("1 replica", one), ("3 replicas", three)):
    n = r["posts_per_sec"] * secs
    print(f"CPU per POST, {name}: hub {1e6 * r['hub_cpu_s'] / n:.0f} us, PostgreSQL {1e6 * r['pg_cpu_s'] / n:.0f} us "
          f"(machine: {cores} cores; both sides and the load generator share them)")
PY
