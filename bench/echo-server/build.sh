#!/usr/bin/env bash
# Build the C libwebsockets echo/relay baseline into bench/out/echo.
# Installs the Debian packages it needs when they are missing (run as root).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/bench/out"
packages=(libwebsockets-dev libwebsockets-evlib-ev libev-dev pkg-config gcc libc6-dev)

missing_packages() {
    local p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
            || printf '%s\n' "$p"
    done
}

ensure_packages() {
    local missing
    missing="$(missing_packages)"
    [[ -z "$missing" ]] && return 0
    echo "installing: $(echo "$missing" | tr '\n' ' ')" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq $missing >&2
}

ensure_packages
mkdir -p "$out"
# shellcheck disable=SC2046
cc -O2 -g -Wall -Wextra -std=gnu11 -o "$out/echo" "$here/echo.c" \
    $(pkg-config --cflags --libs libwebsockets) -lev
echo "$out/echo"
