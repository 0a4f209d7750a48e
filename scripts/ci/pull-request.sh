#!/usr/bin/env bash
# A runtime's pull request against its base, for the runtime's own CI: both
# revisions built from the runtime's repository as git: versions, the cells
# the maintainers choose run interleaved, and compare check's verdicts
# written as a pull-request comment (markdown). Exits 1 only for a confirmed
# regression: a figure whose whole interval lies past its threshold, and
# which holds with every figure of the check judged together (a head no
# different from its base fails at most 1 check in 20); 2 where nothing
# could be compared or a cell failed (the comment says which); else 0. The
# comment is written whatever happens.
#
#   scripts/ci/pull-request.sh RUNTIME REPO BASE HEAD [compare run options]
#
# RUNTIME is one of the suite's implementations (tokio, smol, ...); REPO the
# runtime's git repository (a folder, file://, or a remote); BASE and HEAD
# commits, tags or branches. The options choose the cells: by default
# --preset services, a service's partial loads (10 connections at 1 and 2
# server threads, the echo and the split, spawn and pool shapes, the closed
# loop and the open loop at 10% and 30% of the base's capacity), where a
# change to the scheduler moves the CPU, wake-ups and system calls each
# request costs; the verdicts judge those beside throughput. On shared CI
# runners trust counted figures (--counted N: instructions per block under
# valgrind) and system calls per block; wall-clock figures belong on a
# dedicated machine. OUT (default results/pull-request) receives the run,
# and comment.md the comment.
set -euo pipefail
if [ $# -lt 4 ]; then
    sed -n '2,23p' "$0" >&2
    exit 2
fi
runtime=$1 repo=$2 base=$3 head=$4
shift 4
suite="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$suite/results/pull-request}"
case "$repo" in
    /* | *://* | *@*:*) ;;
    *) repo="$(cd "$repo" && pwd)" ;;
esac
options=("$@")
[ ${#options[@]} -gt 0 ] || options=(--preset services)
cd "$suite"
rm -rf "$out"
mkdir -p "$out"
comment="$out/comment.md"
# A cell that fails makes the run exit 1; its comment still follows.
ran=0
cargo run --quiet --release -p compare -- run \
    --runtimes "$runtime@git:$repo#$base,$runtime@git:$repo#$head" \
    --quiet --out "$out" "${options[@]}" 2>"$out/run.log" || ran=$?
if [ ! -f "$out/results.json" ]; then
    {
        echo "**pingpong could not compare $head with $base**: the run stopped before any result (exit $ran)."
        echo
        echo '```'
        tail -n 30 "$out/run.log"
        echo '```'
    } >"$comment"
    cat "$comment"
    exit 2
fi
# The two implementations as the run named them (runtime@REV(commit)).
mapfile -t names < <(python3 -c 'import json, sys
for name in json.load(open(sys.argv[1]))["config"]["runtimes"]:
    print(name)' "$out/results.json")
status=0
target/release/compare check "$out" --baseline "${names[0]}" --candidate "${names[1]}" \
    --format markdown >"$comment" 2>"$out/check.log" || status=$?
if [ "$status" -eq 2 ]; then
    { echo "**pingpong could not compare $head with $base**:"; echo; cat "$out/check.log"; } >>"$comment"
elif [ "$ran" -ne 0 ] && [ "$status" -eq 0 ]; then
    echo "A cell failed in the run (see \"Not compared\" above): this check says nothing of it." >>"$comment"
    status=2
fi
cat "$comment"
exit "$status"
