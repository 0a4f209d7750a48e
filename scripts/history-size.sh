#!/usr/bin/env bash
# The history at the size a team reaches with one run a night: RUNS
# nightly runs of a committed run's shape written into a new SQLite
# history (compare/examples/nightly_history.rs), then what the team's
# commands cost on it, each timed with its peak memory: the appends,
# `compare check` of the last two nights with the thresholds the history
# taught, and `compare site` three times: made from nothing with all but
# the last night, built again unchanged, and built again once the last
# night is appended (what a nightly job does). Nothing else should run
# beside it. $HISTORY, a postgres:// URL of an empty database, puts the
# history there instead.
#
#   scripts/history-size.sh [RUNS] [TEMPLATE]   (default: 1000, reports/2026-11-30-vm-2cpu-precise)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000}
template=${2:-reports/2026-11-30-vm-2cpu-precise}
work=results/history-size-$runs
rm -rf "$work"
mkdir -p "$work"
history=${HISTORY:-$work/history.sqlite}
cargo build --release --quiet -p compare --example nightly_history
cargo build --release --quiet -p compare
measured() {
    local what=$1
    shift
    /usr/bin/time -f "$what: %e s, peak %M KiB" "$@"
}
site() {
    measured "$1" target/release/compare site --history "$history" \
        --out "$work/site" --book none | tail -n 2
    echo "site: $(du -sh "$work/site" | cut -f1), $(find "$work/site" -name '*.html' | wc -l) pages"
}
measured "generate and append $((runs - 1))" target/release/examples/nightly_history \
    "$template" "$history" "$((runs - 1))"
[ -f "$history" ] && echo "history: $(du -h "$history" | cut -f1)"
site "site, made from nothing"
site "site, built again"
measured "append the last night" target/release/examples/nightly_history \
    "$template" "$history" "$runs" "$work/last" --after "$((runs - 1))"
site "site, the last night added"
measured check target/release/compare check "$work/last/before" "$work/last/after" \
    --history "$history" >"$work/check.txt" || true
tail -n 3 "$work/check.txt"
