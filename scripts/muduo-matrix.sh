#!/usr/bin/env bash
# The muduo article's whole matrix with every implementation: one thread at
# 1 to 10,000 connections, then 1 to 4 threads at 100 and 1,000 connections,
# 16 KiB blocks (--matrix muduo: the default leaves 10,000 connections out). Writes reports/<date>-<host>/ with results.json and the
# tables as printed. Extra arguments go to `compare run` (e.g. --repeat 5).
set -euo pipefail
cd "$(dirname "$0")/.."
out="reports/$(date -u +%Y-%m-%d)-$(hostname -s)-$(nproc)cpu"
# Never over an earlier report: a second run the same day gets a suffix.
n=1
suffix=""
while [ -e "$out$suffix" ]; do
    n=$((n + 1))
    suffix="-$n"
done
out="$out$suffix"
mkdir -p "$out"
cargo run --release -p compare -- run --matrix muduo --out "$out" "$@" | tee "$out/tables.txt"
