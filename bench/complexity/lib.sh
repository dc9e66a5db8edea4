# Shared by the bench/complexity/*.sh parts (sourced): timing and the row format.

# `measure CMD...` (CMD an executable, not a shell function): the fastest of REPS runs of CMD, in seconds (stdout and stderr discarded;
# the exit status is ignored: refusals are answers too). A run is stopped after LIMIT seconds
# (default 60) and then counts as LIMIT: a super-linear path shows as a row stuck at the limit.
measure() {
    local best="" start end t
    for _ in $(seq "${REPS:-3}"); do
        start=$(date +%s.%N)
        local rc=0
        timeout "${LIMIT:-60}" "$@" >/dev/null 2>&1 || rc=$?
        if [[ $rc -eq 124 ]]; then
            printf 'complexity: %s stopped after %ss\n' "$*" "${LIMIT:-60}" >&2
        fi
        end=$(date +%s.%N)
        t=$(echo "$end - $start" | bc -l)
        if [[ -z "$best" ]] || (( $(echo "$t < $best" | bc -l) )); then best=$t; fi
    done
    printf '%s' "$best"
}

# `row LABEL T_N T_2N`: one line of the table.
row() {
    local growth
    growth=$(echo "if ($2 > 0) $3 / $2 else 0" | bc -l)
    printf '%-56s %10.4f %10.4f %6.2fx\n' "$1" "$2" "$3" "$growth"
}

# `header TITLE`: the part's header.
header() {
    printf '\n# %s\n' "$1"
    printf '%-56s %10s %10s %7s\n' "path: shape" "t_n (s)" "t_2n (s)" "growth"
}
