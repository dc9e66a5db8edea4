#!/usr/bin/env bash
# Runs every canonical-json fuzz target for SECONDS each (default 60) on stable Rust.
#
#   fuzz/run.sh            # 60 s per target
#   fuzz/run.sh 600        # 10 min per target
#   TARGETS="parse" fuzz/run.sh 30
#   UNIT_TIMEOUT=5 fuzz/run.sh   # libFuzzer's -timeout: a unit slower than this is a crash
#
# `-timeout` makes slowness a finding: issue 22's writer doubled its work per nesting level,
# which no assertion caught; the `deep` target builds documents up to the parser's 512 levels.
#
# cargo-fuzz needs nightly-only flags (-Zsanitizer=address, ...): RUSTC_BOOTSTRAP=1 lets the
# stable toolchain accept them. Crashes land in fuzz/artifacts/<target>/ (gitignored), the
# corpus in fuzz/corpus/<target>/ (gitignored; seeded below from our own test strings).
# Exit status is non-zero if any target found a crash.
set -euo pipefail

SECONDS_PER_TARGET="${1:-60}"
FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$FUZZ_DIR"
TARGETS="${TARGETS:-parse jcs_roundtrip python_roundtrip deep}"
UNIT_TIMEOUT="${UNIT_TIMEOUT:-10}"
export RUSTC_BOOTSTRAP=1

log() { printf 'fuzz: %s\n' "$*" >&2; }

if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz (cargo install cargo-fuzz --locked)"
    cargo install cargo-fuzz --locked
fi

# Seeds: JSON texts from our own tests (valid and invalid), written fresh at each run. The
# structured targets read them as raw bytes for `arbitrary`, which is fine as a starting point.
seed() {
    local target="$1" name="$2" text="$3"
    printf '%s' "$text" >"corpus/$target/seed-$name"
}
for target in $TARGETS; do
    mkdir -p "corpus/$target"
    i=0
    while IFS= read -r line; do
        seed "$target" "$i" "$line"
        i=$((i + 1))
    done <<'SEEDS'
{"b":2,"a":1,"c":{"z":[1,2,3],"y":null}}
[16,16.0,-0,-0.0,1e2,1E-7,1e21,1e-6,0.000001,123456789012345680000]
{"é":1,"ｱ":2,"😀":3,"a":4,"\u0000":5}
"\ud83d\ude00 \u2028 \u001f \t \" \\ / é"
[9007199254740991,9007199254740992,-9007199254740993,18446744073709551616]
{"a":1,"a":2}
{"a":1,"\u0061":2}
"\ud800"
[1,]
{"hash":"sha256:00","signature":{"sig":"x"},"kind":"Recall","id":"rc-001"}
[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
[1.7976931348623157e308,5e-324,2.2250738585072014e-308,0.1,0.30000000000000004]
  {"nested" : { "ws" : [ true , false , null ] } }  
SEEDS
done

mkdir -p "$FUZZ_DIR/target"
status=0
for target in $TARGETS; do
    log "running $target for ${SECONDS_PER_TARGET}s"
    # -print_final_stats prints the execution count; keep the log for the summary below.
    if cargo fuzz run "$target" -- -max_total_time="$SECONDS_PER_TARGET" -timeout="$UNIT_TIMEOUT" \
        -print_final_stats=1 \
        2>&1 | tee "$FUZZ_DIR/target/$target.log" >&2; then
        log "$target: no crash"
    else
        log "$target: CRASH (see fuzz/artifacts/$target/ and fuzz/target/$target.log)"
        status=1
    fi
done

log "summary"
for target in $TARGETS; do
    execs="$(grep -E '^stat::number_of_executed_units' "$FUZZ_DIR/target/$target.log" | awk '{print $2}' | tail -1)"
    cov="$(grep -oE 'cov: [0-9]+' "$FUZZ_DIR/target/$target.log" | tail -1)"
    printf '%-18s %ss executions=%s %s\n' "$target" "$SECONDS_PER_TARGET" "${execs:-?}" "${cov:-}"
done
exit "$status"
