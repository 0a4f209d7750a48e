#!/usr/bin/env bash
# The service load generator (pingpong-load) beside wrk, on the example
# service's GET /health, which answers at once: requests a second of each,
# with the same connections and threads, interleaved rounds. The service
# runs on CPU 0 with one thread, each load on CPU 1.
#
#   scripts/load-vs-wrk.sh [ROUNDS] [SECONDS] [CONNECTIONS...]
#
# Needs wrk (Debian's package) and GNU time. Prints one line per run:
# "round connections tool requests/s CPU-µs/request" (the load's own user
# and system time over the requests it counted), then the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
seconds=${2:-5}
shift 2 || true
connections=("${@:-10}")
[ ${#connections[@]} -gt 0 ] || connections=(10)
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release --quiet -p pingpong-load
(cd services/example && CARGO_TARGET_DIR=../../target/services/example-release cargo build --release --quiet)
service=target/services/example-release/release/example-service
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 0 "$service" --port "$port" --threads 1 >/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
    sleep 0.05
done
plan=$(mktemp)
cat >"$plan" <<'JSON'
{"protocol":"http1","requests":[{"method":"GET","path":"/health","weight":1}],"expect":{"status":200,"body_contains":"ok"}}
JSON
results=$(mktemp)
for round in $(seq "$rounds"); do
    for c in "${connections[@]}"; do
        out=$(/usr/bin/time -f "cpu %U %S" taskset -c 1 wrk -t1 -c"$c" -d"${seconds}s" "http://127.0.0.1:$port/health" 2>&1)
        echo "$out" | python3 -c '
import re, sys
t = sys.stdin.read()
requests = int(re.search(r"(\d+) requests in", t).group(1))
rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", t).group(1))
user, system = map(float, re.search(r"cpu ([0-9.]+) ([0-9.]+)", t).groups())
print(sys.argv[1], sys.argv[2], "wrk", rate, round((user + system) / requests * 1e6, 2))' "$round" "$c" | tee -a "$results"
        out=$(/usr/bin/time -f "cpu %U %S" taskset -c 1 target/release/pingpong-load --plan "$plan" \
            --connect "127.0.0.1:$port" --connections "$c" --threads 1 --warmup 0.5 --seconds "$seconds" 2>&1)
        echo "$out" | python3 -c '
import json, re, sys
t = sys.stdin.read()
o = json.loads(next(l for l in t.splitlines() if l.startswith("{")))
assert not o["errors"] and not o["before_window"], o
user, system = map(float, re.search(r"cpu ([0-9.]+) ([0-9.]+)", t).groups())
# Its CPU time paid for every answer of its run, the warm-up too.
print(sys.argv[1], sys.argv[2], "pingpong-load", round(o["answered"] / o["seconds"], 1), round((user + system) / o["all_answered"] * 1e6, 2))' "$round" "$c" | tee -a "$results"
    done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for c in sorted({int(r[1]) for r in rows}):
    med = lambda t, i: statistics.median(float(r[i]) for r in rows if int(r[1]) == c and r[2] == t)
    rate = {t: med(t, 3) for t in ("wrk", "pingpong-load")}
    cpu = {t: med(t, 4) for t in ("wrk", "pingpong-load")}
    print(f"{c} connections: wrk {rate['wrk']:.0f}/s {cpu['wrk']:.2f} µs CPU a request, "
          f"pingpong-load {rate['pingpong-load']:.0f}/s {cpu['pingpong-load']:.2f} µs, "
          f"rate ratio {rate['pingpong-load']/rate['wrk']:.3f}")
PY
rm -f "$plan" "$results"
