#!/usr/bin/env bash
# What `compare check` catches on this machine, and how often it cries wolf.
#
#   scripts/power.sh UNITS ROUNDS TRIAL_ROUNDS... [-- compare run options]
#   scripts/power.sh --judge RUN_FOLDER TRIAL_ROUNDS...
#
# One interleaved run of mio against an identical build of itself (mio at
# the version this workspace locks, built apart as mio@VERSION), whose
# server does UNITS extra units of CPU work per block (the hidden fault
# PINGPONG_FAULT=...:slow=UNITS; 0 for an A/A run). The run's ROUNDS rounds
# are then cut into trials of TRIAL_ROUNDS consecutive rounds, and each trial
# is checked as `compare check RUN --baseline mio --candidate mio@VERSION`
# checks a run of that many rounds. Prints, per figure and trial size, how
# many trials were judged regressed or improved, beside the change measured
# over all ROUNDS (the true effect of the fault on this machine, that day).
# Default run options: 1 thread, 1 connection, 0.1 s windows, 0.02 s warm-up;
# any given replace them (add --counted BLOCKS to judge counted figures).
# The run's folder is results/power-*.
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
    units=$(sed -n 's/.*:slow=\([0-9]*\).*/\1/p' "$out/fault" 2>/dev/null || true)
    units=${units:-0}
else
    units=$1 rounds=$2
    shift 2
    sizes=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        sizes+=("$1")
        shift
    done
    [ $# -eq 0 ] || shift
    options=(--threads 1 --connections 1 --seconds 0.1 --warmup 0.02)
    [ $# -eq 0 ] || options=("$@")
    out="results/power-$units-$rounds-$(date -u +%Y%m%dT%H%M%SZ)"
    mkdir -p "$out"
    fault=()
    [ "$units" -eq 0 ] || fault=("PINGPONG_FAULT=pingpong-mio-$version/pingpong-mio:slow=$units")
    echo "${fault[@]}" >"$out/fault"
    if ! env "${fault[@]}" "$compare" run --runtimes "mio,$candidate" --repeat "$rounds" \
        --out "$out" --quiet "${options[@]}" >"$out/tables.txt" 2>"$out/progress.txt"; then
        echo "$0: the run failed; see $out" >&2
        exit 2
    fi
fi
rounds=$(jq '.cells[0].runs | length' "$out/results.json")
# The verdict lines of one check: "figure<TAB>verdict<TAB>change" (columns 2,
# 8 and 5 of its markdown table).
verdicts() {
    "$compare" check "$1" --baseline mio --candidate "$candidate" --format markdown |
        awk -F' [|] ' '/^\| mio@/ { sub(/ \|$/, "", $8); print $2 "\t" $8 "\t" $5 }'
}
verdicts "$out" >"$out/all.tsv" || true
echo "| slow | figure | change over all $rounds rounds | rounds per trial | trials | regressed | improved |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for size in "${sizes[@]}"; do
    trials=$((rounds / size))
    : >"$out/trials-$size.tsv"
    for ((t = 0; t < trials; t++)); do
        dir="$out/trial-$size-$t"
        mkdir -p "$dir"
        jq --argjson from $((t * size)) --argjson to $(((t + 1) * size)) \
            '.cells |= map(.runs |= .[$from:$to])' "$out/results.json" >"$dir/results.json"
        verdicts "$dir" >>"$out/trials-$size.tsv" || true
    done
    while IFS=$'\t' read -r figure _ change; do
        regressed=$(awk -F'\t' -v f="$figure" '$1 == f && $2 == "REGRESSED"' "$out/trials-$size.tsv" | wc -l)
        improved=$(awk -F'\t' -v f="$figure" '$1 == f && $2 == "improved"' "$out/trials-$size.tsv" | wc -l)
        echo "| $units | $figure | $change | $size | $trials | $regressed | $improved |"
    done <"$out/all.tsv"
done
