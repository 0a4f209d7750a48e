#!/usr/bin/env bash
# Did IMPLEMENTATION get slower from OLD to NEW (exact crate versions)?
# Runs both versions in one interleaved run (A B A B ..., so that the
# machine's drift hits both alike), then checks NEW against OLD.
#   scripts/version-regression.sh tokio 1.47.0 1.54.1 [compare run options]
# Default options: --connections 1,100 --threads 1 --seconds 0.1 --warmup
# 0.02 --repeat 200 (what caught a 5% slowdown in every trial here: README,
# "measured power"); any given replace them. Exit 0: nothing regressed;
# 1: something did; 2: the run or the check could not be done. The run's folder is results/regression-*.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 IMPLEMENTATION OLD_VERSION NEW_VERSION [compare run options]" >&2
    exit 2
fi
impl=$1 old=$2 new=$3
shift 3
options=(--connections 1,100 --threads 1 --seconds 0.1 --warmup 0.02 --repeat 200)
[ $# -eq 0 ] || options=("$@")
cd "$(dirname "$0")/.."
out="results/regression-$impl-$old-$new-$(date -u +%Y%m%dT%H%M%SZ)"
compare=(cargo run --release --quiet -p compare --)
mkdir -p "$out"
# The run's tables go to its folder; stdout is the check's alone.
if ! "${compare[@]}" run --runtimes "$impl@$old,$impl@$new" --out "$out" "${options[@]}" >"$out/tables.txt"; then
    echo "$0: the run failed; see $out" >&2
    exit 2
fi
exec "${compare[@]}" check "$out" --baseline "$impl@$old" --candidate "$impl@$new" --format markdown
