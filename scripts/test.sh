#!/usr/bin/env bash
# The tests, as CI runs them: real processes, real sockets on loopback, and
# the HTML report rendered in a real browser. Installs Debian's chromium for
# that test where it is missing (apt-get; as root or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing Debian's chromium for the HTML report test" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
exec cargo test --workspace "$@"
