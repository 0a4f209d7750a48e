"""A/A pairs drawn from one explanation of a build against itself.

Reads the explain.json of `compare explain RUN --baseline X --candidate X
--wakes --repeat N` (every run's figure of every path and function is kept
there) and draws PAIRS pairs of SIZE runs a side (all where a figure has fewer),
each side's runs from its own without repeats, judging each path or function by the rule of
compare/src/explain/moved.rs (restated here, not imported):

- traced wake-ups and sleeps: every run of one side past every run of the
  other, the move of the medians past the widest trimmed range of either
  side's runs (from four runs, less the run farthest from their median),
  and 0.1 a block at least;
- sampled CPU time: the move past three times that range, past three times
  its sampling error (as the full explanation measured it), and past 50 ns
  or 1% of the side's CPU a block.

Prints how many pairs told nothing, and what the others told.

    python3 aa.py DIR/explain.json [PAIRS] [SIZE] [SEED]
"""

import json
import random
import statistics
import sys


def spread(values):
    kept = sorted(values)
    if len(kept) >= 4:
        middle = statistics.median(kept)
        if middle - kept[0] > kept[-1] - middle:
            kept.pop(0)
        else:
            kept.pop()
    return kept[-1] - kept[0] if kept else 0.0


def told_traced(b, c):
    moved = abs(statistics.median(c) - statistics.median(b))
    apart = min(b) > max(c) or min(c) > max(b)
    return apart and moved >= 0.1 and moved > max(spread(b), spread(c))


def told_cpu(b, c, error, floor):
    moved = abs(statistics.median(c) - statistics.median(b))
    variation = max(spread(b), spread(c))
    return moved > 3 * variation and moved > 3 * error and moved >= floor


def main():
    explained = json.load(open(sys.argv[1]))
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    judged = []
    for side in explained["sides"]:
        woken = side.get("woken") or {}
        for kind in ("wakes", "sleeps"):
            for f in woken.get(kind, []):
                judged.append(("traced", side["side"], kind, f))
        sampled = side.get("sampled")
        if sampled:
            floor = max(50.0, 0.01 * sampled["cpu_ns"][0])
            for f in side["functions"]:
                judged.append(("cpu", side["side"], floor, f))
    quiet, told = 0, []
    for _ in range(pairs):
        draws = {}
        named = []
        for what, side, extra, f in judged:
            n = len(f["runs"][0])
            assert n == len(f["runs"][1]), f"as many runs a side: {f['name']}"
            if n not in draws:
                k = min(size, n)
                draws[n] = (rng.sample(range(n), k), rng.sample(range(n), k))
            b_runs, c_runs = draws[n]
            b = [f["runs"][0][i] for i in b_runs]
            c = [f["runs"][1][i] for i in c_runs]
            if what == "traced" and told_traced(b, c):
                named.append(f"{side} {extra}: {f['name']}")
            if what == "cpu" and told_cpu(b, c, f["error"], extra):
                named.append(f"{side} CPU: {f['name']}")
        quiet += not named
        told.extend(named)
    print(f"{quiet} of {pairs} pairs of up to {size} runs a side told nothing")
    for name in sorted(set(told)):
        print(f"  told {told.count(name)} times: {name}")


main()
