#!/usr/bin/env bash
# Hub benchmark: the hub (`cookwala serve`, a child process on a fresh SQLite file) under HTTP
# load on loopback, next to its ceilings measured in the same run: a bare axum server returning
# the hub's own bytes, and SQLite's durable-commit rate (WAL, synchronous=FULL) on the same
# disk, one row per commit and BATCH_ROWS rows per commit (the group-commit ceiling). Then the
# hub's RSS with EXECUTIONS completed executions stored, and the CPU time to simulate each
# built-in recipe. Last, the scale phase (bench/hub-scale.py): 10, 100 and 1,000 simulated
# devices each running an execution at speed 1 (the hub's CPU and memory per device, and the
# stop latency on one device while all run), and the contention phase (bench/hub-contention.py):
# a stop alone vs. 8 stops at once on 8 devices. Numbers only: nothing here fails on timing.
#
#   bench/hub.sh                 # about 2 minutes after the build (5 s per scenario)
#   SECS=2 WARMUP_SECS=0.5 CEILING_SECS=2 EXECUTIONS=2000 bench/hub.sh   # a quicker look
#
# Environment (defaults in brackets):
#   CONNS [16]           keep-alive connections for the GET and refused-POST scenarios
#   SECS [5]             seconds per load scenario; WARMUP_SECS [1] before each (not counted)
#   CEILING_SECS [5]     seconds per SQLite ceiling
#   BATCH_ROWS [32]      rows per commit of the group-commit ceiling; ROW_BYTES [2048] per row
#   EXECUTIONS [10000]   completed executions stored for the RSS measurement
#   SIM_RUNS [5]         runs per recipe for the simulation CPU (the fastest is kept)
#   WORK [target/cw-bench/hub]  where the temporary data directories go (the disk measured)
#   JOBS [1]             cargo build jobs (the machine is shared)
#   COUNTS [10,100,1000] devices per scale phase; WINDOW [10] seconds of CPU measured; STOPS [50]
#
# Builds `cookwala` (cookwala-cli) and `cw-bench` in release. The load generator is
# `cw-bench hub` (one thread, keep-alive HTTP/1.1, no pipelining). Progress goes to stderr; the
# table goes to stdout; the raw records are kept in target/cw-bench/hub.jsonl.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

WORK="${WORK:-$ROOT/target/cw-bench/hub}"
JOBS="${JOBS:-1}"
mkdir -p "$WORK"

printf 'bench: building cookwala and cw-bench (release, -j %s)\n' "$JOBS" >&2
cargo build --release --locked -j "$JOBS" -p cookwala-cli -p bench >&2

"$ROOT/target/release/cw-bench" hub \
    --hub-bin "$ROOT/target/release/cookwala" \
    --work "$WORK" \
    --json "$ROOT/target/cw-bench/hub.jsonl" \
    --conns "${CONNS:-16}" \
    --secs "${SECS:-5}" \
    --warmup-secs "${WARMUP_SECS:-1}" \
    --ceiling-secs "${CEILING_SECS:-5}" \
    --batch-rows "${BATCH_ROWS:-32}" \
    --row-bytes "${ROW_BYTES:-2048}" \
    --executions "${EXECUTIONS:-10000}" \
    --sim-runs "${SIM_RUNS:-5}"

printf 'bench: the scale phase (bench/hub-scale.py; COUNTS, WINDOW, STOPS)\n' >&2
python3 "$ROOT/bench/hub-scale.py"

printf 'bench: the contention phase (bench/hub-contention.py; DEVICES, ROUNDS, SPEED)\n' >&2
python3 "$ROOT/bench/hub-contention.py"
