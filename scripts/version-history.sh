#!/usr/bin/env bash
# How did IMPLEMENTATION's figures move over every release from FROM to TO?
# Runs each release of its crate between them (cargo's index: yanked ones
# left out and named), each built in isolation, interleaved in one run, and
# renders the report: a table and a chart per load, release by release, and
# the steps between consecutive releases that clear the noise, worst first.
#   scripts/version-history.sh tokio 1.45.0 1.54.1 [compare run options]
# Default options: --connections 10,1000 --threads 1; any given replace
# them. Writes reports/<date>-<host>-<cpus>cpu-<implementation>-history/.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 IMPLEMENTATION FROM TO [compare run options]" >&2
    exit 2
fi
impl=$1 from=$2 to=$3
shift 3
options=(--connections 10,1000 --threads 1)
[ $# -eq 0 ] || options=("$@")
cd "$(dirname "$0")/.."
out="reports/$(date -u +%Y-%m-%d)-$(hostname -s)-$(nproc)cpu-$impl-history"
n=1
suffix=""
while [ -e "$out$suffix" ]; do
    n=$((n + 1))
    suffix="-$n"
done
out="$out$suffix"
mkdir -p "$out"
cargo run --release --quiet -p compare -- run --runtimes "$impl@$from..$to" --out "$out" "${options[@]}" | tee "$out/tables.txt"
