#!/usr/bin/env bash
# Growth per path when the input doubles (issue 22): builds the release binaries once, then runs
# every part in bench/complexity/*.sh. Each part generates its hostile shapes at size n and 2n,
# times the command on each and prints one line per path:
#
#   <path: shape>                                            t_n (s)   t_2n (s)  growth
#
# growth = t_2n / t_n: about 2x for linear work, 4x for quadratic; the issue asks for at most
# ~3x and every point within 5 s. Numbers only: nothing here fails on timing.
#
#   bench/complexity.sh                  # every part
#   PARTS="cookwala" bench/complexity.sh # only bench/complexity/cookwala.sh
#   REPS=5 bench/complexity.sh           # runs per point (the fastest is reported; default 3)
#
# Parts get, in the environment: ROOT (the repository), BIN (target/release), WORK (a scratch
# folder of their own under target/complexity/), REPS, and `source "$ROOT/bench/complexity/lib.sh"`
# gives them `measure`, `row` and `header`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export ROOT BIN="$ROOT/target/release" REPS="${REPS:-3}"
log() { printf 'complexity: %s\n' "$*" >&2; }

packages=()
for p in cookwala-cli dwp-cli; do
    [[ -d "crates/$p" ]] && packages+=(-p "$p")
done
log "building ${packages[*]} (release, once)"
cargo build --release "${packages[@]}" >&2

status=0
for part in bench/complexity/*.sh; do
    name="$(basename "$part" .sh)"
    [[ "$name" == lib ]] && continue
    if [[ -n "${PARTS:-}" && " $PARTS " != *" $name "* ]]; then
        continue
    fi
    export WORK="$ROOT/target/complexity/$name"
    rm -rf "$WORK" && mkdir -p "$WORK"
    log "part $name"
    if ! bash "$part"; then
        log "part $name failed"
        status=1
    fi
done
exit "$status"
