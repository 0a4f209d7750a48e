#!/usr/bin/env bash
# The site of the committed reports, as CI builds it: every report under
# reports/ imported into a history made anew, then `compare site` with the
# book copied in (built here where it is not). The history is not
# committed (54 MB, over the 5 MB a committed file may weigh): the
# reports are its source, and it is made again from them in 2 s.
#
#   scripts/site.sh [OUT]        (default: results/site)
#
# $COMPARE names the compare binary (the tests give theirs); by default
# the release build, built here.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/site}
compare=${COMPARE:-}
if [ -z "$compare" ]; then
    cargo build --release --quiet -p compare
    compare=target/release/compare
fi
[ -f docs/book/index.html ] || mdbook build docs
history="$out.history.sqlite"
rm -f "$history"
mkdir -p "$(dirname "$out")"
"$compare" history import reports --history "$history" >/dev/null
"$compare" site --history "$history" --out "$out" --book docs/book
