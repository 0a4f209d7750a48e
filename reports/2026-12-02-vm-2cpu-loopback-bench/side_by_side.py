#!/usr/bin/env python3
"""The tables of README.md: each load the reference published
(reference.csv) beside this run's cells of the same load (results.json.gz,
in parts or whole, beside this script); then, for HTTP/1.1 and WebSocket,
whose figures the reference published as charts alone, every
implementation's round trips a second. Prints Markdown on stdout.

Only the shape compares: the reference ran on another machine, on another
day, with client and server in one process; this run, with them in two
pinned processes on a 2-core VM."""

import csv
import glob
import gzip
import io
import json
import os
import statistics

here = os.path.dirname(os.path.abspath(__file__))
parts = sorted(glob.glob(os.path.join(here, "results.json.gz*")))
data = b"".join(open(p, "rb").read() for p in parts)
results = json.loads(gzip.decompress(data))

with open(os.path.join(here, "reference.csv")) as f:
    rows = list(csv.DictReader(line for line in f if not line.startswith("#")))


def ours(protocol, tls, block, connections, window):
    """(implementation, round trips/s, p99 us) of every ok cell of the load."""
    found = []
    for c in results["cells"]:
        if (
            c.get("protocol", "tcp") == protocol
            and (c.get("tls") is not None) == tls
            and c["block"] == block
            and c["connections"] == connections
            and c["window"] == window
            and c["threads"] == 1
            and c["status"] == "ok"
        ):
            f = c["figures"]
            p99 = f["rtt_p99_us"]["median"] if f.get("rtt_p99_us") else None
            found.append((c["runtime"], f["messages_per_s"]["median"], p99))
    return sorted(found, key=lambda x: -x[1])


def n(x):
    return "-" if x is None or x == "" else f"{float(x):,.0f}"


def us(x):
    return "-" if x is None or x == "" else f"{float(x):,.0f} us"


print("| load | reference (library: round trips/s, p99) | this run: fastest | median of implementations | slowest | mio (no runtime) |")
print("| --- | --- | --- | --- | --- | --- |")
loads = []
for r in rows:
    key = (r["protocol"], r["tls"] == "true", int(r["block"]), int(r["connections"]), int(r["window"]))
    if key not in loads:
        loads.append(key)
for key in loads:
    protocol, tls, block, connections, window = key
    name = {("tcp", False): "TCP", ("tcp", True): "TCP+TLS", ("udp", False): "UDP"}[(protocol, tls)]
    label = f"{name} {block} B, {connections} conn., window {window}"
    ref = "; ".join(
        f"{r['library']}: {n(r['round_trips_per_s'])}, {us(r['p99_us'])}"
        for r in rows
        if (r["protocol"], r["tls"] == "true", int(r["block"]), int(r["connections"]), int(r["window"])) == key
    )
    cells = ours(*key)
    if not cells:
        print(f"| {label} | {ref} | - | - | - | - |")
        continue
    fast, slow = cells[0], cells[-1]
    median = statistics.median(c[1] for c in cells)
    mio = next((c for c in cells if c[0] == "mio"), None)
    cell = lambda c: f"{c[0]}: {n(c[1])}, {us(c[2])}"
    print(
        f"| {label} | {ref} | {cell(fast)} | {n(median)} ({len(cells)} implementations) | {cell(slow)} | "
        + (f"{n(mio[1])}, {us(mio[2])}" if mio else "-")
        + " |"
    )


def figure(protocol, tls, block, connections, window, runtime):
    """A cell's median round trips/s, or why it has none."""
    for c in results["cells"]:
        if (
            c["runtime"] == runtime
            and c.get("protocol", "tcp") == protocol
            and (c.get("tls") is not None) == tls
            and c["block"] == block
            and c["connections"] == connections
            and c["window"] == window
        ):
            if c["status"] == "ok":
                return n(c["figures"]["messages_per_s"]["median"])
            # The one reason here: "no HTTP or WebSocket server".
            return "no server" if c["status"] == "unavailable" else c["status"]
    return "-"


print()
loads = [(1, 1), (16, 16)]
for protocol, label in [("http", "HTTP/1.1"), ("websocket", "WebSocket")]:
    for tls in [False, True]:
        name = {("http", True): "HTTPS", ("websocket", True): "secure WebSocket"}.get((protocol, tls), label)
        print(f"\n{name}, round trips a second (median of 3):\n")
        blocks = [64, 1024, 16384]
        print("| implementation | " + " | ".join(f"{b} B, {c} conn." for b in blocks for c, _ in loads) + " |")
        print("| --- |" + " ---: |" * (len(blocks) * len(loads)))
        runtimes = list(dict.fromkeys(c["runtime"] for c in results["cells"]))
        for rt in runtimes:
            row = [figure(protocol, tls, b, c, w, rt) for b in blocks for c, w in loads]
            print(f"| {rt} | " + " | ".join(row) + " |")
