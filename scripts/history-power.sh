#!/usr/bin/env bash
# Between two runs, how often `compare check` cries wolf and how often it
# catches a slowdown, by the default threshold and by the one each cell
# learns from its history.
#
#   scripts/history-power.sh RUNS SLOW_PERCENT [-- compare run options]
#   scripts/history-power.sh --judge FOLDER SLOW_PERCENT
#
# RUNS runs of mio, one after another, each appended to one history
# (default: 1 thread, 10 connections, 6 repetitions of 0.2 s). From the 7th
# on, each run is checked against the one before it twice: as it is (an A/A
# check: every verdict but "no change" is a false alarm) and with every
# repetition's MiB/s cut by SLOW_PERCENT (a slowdown to catch), each once by
# the default rule (--history none) and once with the history of the runs
# before it. Prints the table; the folder is results/history-power-*.
# --judge checks the runs of such a folder again (a committed report keeps
# them compressed), its history made anew from them.
set -euo pipefail
usage="usage: $0 RUNS SLOW_PERCENT [-- compare run options], or $0 --judge FOLDER SLOW_PERCENT"
if [ $# -lt 2 ] || { [ "$1" = --judge ] && [ $# -lt 3 ]; }; then
    echo "$usage" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
cargo build --release --quiet -p compare
compare=target/release/compare
if [ "$1" = --judge ]; then
    out=$2 slow=$3
    runs=$(find "$out" -maxdepth 1 -name 'run-*' -type d | wc -l)
    tmp=$(mktemp -d)
    history="$tmp/history.sqlite"
    "$compare" history import "$out" --history "$history" >/dev/null
else
    runs=$1 slow=$2
    shift 2
    [ $# -eq 0 ] || shift
    options=(--runtimes mio --threads 1 --connections 10 --repeat 6)
    [ $# -eq 0 ] || options=("$@")
    out="results/history-power-$slow-$runs-$(date -u +%Y%m%dT%H%M%SZ)"
    history="$out/history.sqlite"
    tmp=$out
    for i in $(seq 1 "$runs"); do
        echo "run $i of $runs" >&2
        if ! "$compare" run "${options[@]}" --no-cost --quiet --out "$out/run-$i" \
            --history "$history" >"$out/run-$i.txt" 2>&1; then
            echo "$0: run $i failed; see $out/run-$i.txt" >&2
            exit 2
        fi
    done
fi
# Each run with its MiB/s cut, and the runs as check reads them.
mkdir -p "$tmp/slow"
for i in $(seq 1 "$runs"); do
    run="$out/run-$i/results.json"
    [ -e "$run" ] || run="$run.gz"
    zcat -f "$run" | jq ".cells[].runs[].mib_per_s *= (1 - $slow / 100)" >"$tmp/slow/run-$i.json"
done
# The MiB/s verdict and threshold of one check (columns 8 and 7 of its
# markdown table).
verdict() {
    "$compare" check "$@" --format markdown |
        awk -F' [|] ' '$2 == "MiB/s" { sub(/ \|$/, "", $8); print $8 "\t" $7 }' || true
}
echo "check	rule	verdict	threshold" >"$out/verdicts.tsv"
for i in $(seq 7 "$runs"); do
    before="$out/run-$((i - 1))"
    for rule in none "$history"; do
        name=$([ "$rule" = none ] && echo default || echo history)
        verdict "$before" "$out/run-$i" --history "$rule" | sed "s/^/same\t$name\t/" >>"$out/verdicts.tsv"
        verdict "$before" "$tmp/slow/run-$i.json" --history "$rule" | sed "s/^/slow\t$name\t/" >>"$out/verdicts.tsv"
    done
done
count() { awk -F'\t' -v c="$1" -v r="$2" -v v="$3" '$1 == c && $2 == r && (v == "" || $3 == v)' "$out/verdicts.tsv" | wc -l; }
{
    echo "| rule | A/A checks | false alarms | checks of a ${slow}% cut | caught | threshold |"
    echo "|---|---:|---:|---:|---:|---|"
    for rule in default history; do
        same=$(count same "$rule" "") slowed=$(count slow "$rule" "")
        alarms=$((same - $(count same "$rule" "no change")))
        caught=$(count slow "$rule" REGRESSED)
        range=$(awk -F'\t' -v r="$rule" '$2 == r { t = $4 + 0; lo = (n++ && lo < t) ? lo : t; hi = (hi > t) ? hi : t }
            END { print (lo == hi) ? lo "%" : lo "% to " hi "%" }' "$out/verdicts.tsv")
        echo "| $rule | $same | $alarms | $slowed | $caught | $range |"
    done
} | tee "$out/table.md"
echo "verdicts: $out/verdicts.tsv" >&2
