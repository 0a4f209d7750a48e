#!/usr/bin/env bash
# What `compare check` catches on this machine, and how often it cries wolf.
#
#   scripts/power.sh FAULT ROUNDS TRIAL_ROUNDS... [-- compare run options]
#   scripts/power.sh --judge RUN_FOLDER TRIAL_ROUNDS...
#
# One interleaved run of mio against an identical build of itself (mio at
# the version this workspace locks, built apart as mio@VERSION), whose
# server has the hidden fault FAULT (PINGPONG_FAULT=...:FAULT): slow=UNITS,
# extra units of CPU work per block, or wake-every=N, a wake-up of an idle
# thread every N blocks; a bare number is slow=NUMBER, and 0 an A/A run.
# The run's ROUNDS rounds (and as many cost runs, where it has them) are
# then cut into trials of TRIAL_ROUNDS consecutive rounds, and each trial
# is checked as `compare check RUN --baseline mio --candidate mio@VERSION`
# checks a run of that many rounds. Prints, per figure and trial size, how
# many trials confirmed it regressed or improved, beside the change measured
# over all ROUNDS (the true effect of the fault on this machine, that day),
# and per trial size how many checks exited 1 (a confirmed regression: with
# no fault, a false alarm of the check as a whole).
# Default run options: 1 thread, 1 connection, 0.1 s windows, 0.02 s warm-up;
# any given replace them (add --counted BLOCKS to judge counted figures,
# --rates R --cost-runs ROUNDS to judge the cost figures at a part of
# capacity). The run's folder is results/power-*.
set -euo pipefail
usage="usage: $0 UNITS ROUNDS TRIAL_ROUNDS... [-- compare run options], or $0 --judge RUN_FOLDER TRIAL_ROUNDS..."
if [ $# -lt 3 ]; then
    echo "$usage" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
cargo build --release --quiet -p compare
compare=target/release/compare
version=$(cargo pkgid -p mio@1 | sed 's/.*@//')
candidate="mio@$version"
if [ "$1" = --judge ]; then
    out=$2
    shift 2
    sizes=("$@")
    fault=$(sed -n 's/.*pingpong-mio:\(.*\)/\1/p' "$out/fault" 2>/dev/null || true)
    fault=${fault:-0}
else
    fault=$1 rounds=$2
    shift 2
    sizes=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        sizes+=("$1")
        shift
    done
    [ $# -eq 0 ] || shift
    options=(--threads 1 --connections 1 --seconds 0.1 --warmup 0.02)
    [ $# -eq 0 ] || options=("$@")
    case "$fault" in
        *=*) ;;
        *) fault="slow=$fault" ;;
    esac
    [ "$fault" != slow=0 ] || fault=0
    out="results/power-$fault-$rounds-$(date -u +%Y%m%dT%H%M%SZ)"
    mkdir -p "$out"
    env=()
    [ "$fault" = 0 ] || env=("PINGPONG_FAULT=pingpong-mio-$version/pingpong-mio:$fault")
    echo "${env[@]}" >"$out/fault"
    if ! env "${env[@]}" "$compare" run --runtimes "mio,$candidate" --repeat "$rounds" \
        --out "$out" --quiet "${options[@]}" >"$out/tables.txt" 2>"$out/progress.txt"; then
        echo "$0: the run failed; see $out" >&2
        exit 2
    fi
fi
rounds=$(jq '.cells[0].runs | length' "$out/results.json")
# The verdict lines of one check: "figure<TAB>verdict<TAB>change" (columns 2,
# 8 and 5 of its markdown table); its exit status into $1/status.
verdicts() {
    local status=0
    "$compare" check "$1" --baseline mio --candidate "$candidate" --format markdown \
        >"$1/check.md" || status=$?
    echo "$status" >"$1/status"
    awk -F' [|] ' '/^\| mio@/ { sub(/ \|$/, "", $8); print $2 "\t" $8 "\t" $5 }' "$1/check.md"
}
verdicts "$out" >"$out/all.tsv" || true
echo "| fault | figure | change over all $rounds rounds | rounds per trial | trials | regressed | improved |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for size in "${sizes[@]}"; do
    trials=$((rounds / size))
    : >"$out/trials-$size.tsv"
    for ((t = 0; t < trials; t++)); do
        dir="$out/trial-$size-$t"
        mkdir -p "$dir"
        jq --argjson from $((t * size)) --argjson to $(((t + 1) * size)) \
            '.cells |= map((.runs |= .[$from:$to])
                | if .cost_runs then .cost_runs |= .[$from:$to] else . end)' \
            "$out/results.json" >"$dir/results.json"
        verdicts "$dir" >>"$out/trials-$size.tsv" || true
    done
    while IFS=$'\t' read -r figure _ change; do
        regressed=$(awk -F'\t' -v f="$figure" '$1 == f && $2 == "REGRESSED"' "$out/trials-$size.tsv" | wc -l)
        improved=$(awk -F'\t' -v f="$figure" '$1 == f && $2 == "improved"' "$out/trials-$size.tsv" | wc -l)
        echo "| $fault | $figure | $change | $size | $trials | $regressed | $improved |"
    done <"$out/all.tsv"
    failed=$(cat "$out"/trial-"$size"-*/status | grep -c '^1$' || true)
    echo "| $fault | **checks that exit 1** | | $size | $trials | $failed | |"
done
