#!/usr/bin/env bash
# The tests, as CI runs them: real processes, real sockets on loopback, the
# HTML report rendered in a real browser, instructions counted under
# valgrind, and two hosts in network namespaces reached over ssh. Installs
# what those need where it is missing, from Debian's packages (apt-get; as
# root or through sudo): chromium, valgrind, and openssh-server with
# iproute2. Without root, the two-host test skips.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v chromium >/dev/null || missing+=(chromium)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh-keygen >/dev/null || missing+=(openssh-client)
command -v ip >/dev/null || missing+=(iproute2)
command -v valgrind >/dev/null || missing+=(valgrind)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing Debian's ${missing[*]} for the browser and two-host tests" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
exec cargo test --workspace "$@"
