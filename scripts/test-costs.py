#!/usr/bin/env python3
"""What the tests cost, from nextest's JUnit report of a run
(target/nextest/default/junit.xml, which scripts/test.sh leaves): each
group of tests with its count and seconds, and the longest tests, as the
markdown table the book includes (docs/src/contributing/test-costs.md).

    scripts/test-costs.py "MACHINE, DATE" > docs/src/contributing/test-costs.md
"""
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

LONGEST = 10


def group(suite: str, name: str) -> str:
    """A test's group: the end-to-end suite's file, else its binary."""
    binary = suite.split("::", 1)[-1]
    if binary == suite:
        return f"{binary} (its library)"
    if binary == "suite":
        return "suite/" + name.split("::", 1)[0] + ".rs"
    return binary


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    where = sys.argv[1]
    report = Path(__file__).resolve().parent.parent / "target/nextest/default/junit.xml"
    root = ET.parse(report).getroot()
    tests = []
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            tests.append((suite.get("name"), case.get("name"), float(case.get("time")), failed))
    if not tests:
        sys.exit(f"{report} holds no test")
    groups = defaultdict(lambda: [0, 0.0])
    for suite, name, seconds, _ in tests:
        g = groups[group(suite, name)]
        g[0] += 1
        g[1] += seconds
    summed = sum(t[2] for t in tests)
    failed = sum(t[3] for t in tests)
    print(f"<!-- made by scripts/test-costs.py from nextest's report of a run: do not edit -->")
    print(f"{len(tests)} tests, {len(tests) - failed} passed, in {float(root.get('time')):.0f} s "
          f"two at a time ({summed:.0f} s summed); {where}.\n")
    print("| group | tests | s summed |\n| --- | ---: | ---: |")
    for name, (count, seconds) in sorted(groups.items(), key=lambda g: -g[1][1]):
        print(f"| `{name}` | {count} | {seconds:.0f} |")
    print("\nThe longest tests:\n\n| test | s |\n| --- | ---: |")
    for suite, name, seconds, _ in sorted(tests, key=lambda t: -t[2])[:LONGEST]:
        print(f"| `{name}` | {seconds:.0f} |")


main()
