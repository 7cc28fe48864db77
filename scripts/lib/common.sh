# Shared by the scripts in scripts/: repository root, Debian packages, the Python venv.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export ROOT

# Debian packages the daemon builds and runs with.
BUILD_PACKAGES=(pkg-config libwebsockets-dev libwebsockets-evlib-ev libev-dev libssl-dev libsqlite3-dev libcap-dev)
# Extra packages the tests and benchmarks need.
# chromium + chromium-driver: the browser library and demo app in a real browser (selenium);
# nodejs: the browser library's unit tests (node --test); iproute2: ss -K for the browser resume test;
# gdb: the stacks scripts/test prints of a step that hangs (scripts/lib/bounded.sh).
# postgresql (15 on Debian 12) + haproxy: the scale-out fixtures (Tests/e2e/pgserver.py, haproxy.py) run
# their own server and balancer on free ports; they use no packaged cluster or service, started or not.
TEST_PACKAGES=(openssl python3 python3-venv python3-pip curl procps janus chromium chromium-driver nodejs iproute2 systemd gdb
    postgresql haproxy)

log() { printf '==> %s\n' "$*" >&2; }

# The client port `switchboard serve ARGS…` will use: the last --port N (or --port=N) among the
# arguments, else SWITCHBOARD_SERVER_PORT, else the config file's, else 9000.
serve_port() {
    local config="$1" port="" previous=""
    shift
    for arg in "$@"; do
        case "$arg" in
        --port=*) port="${arg#--port=}" ;;
        *) [[ "$previous" == --port ]] && port="$arg" ;;
        esac
        previous="$arg"
    done
    [[ -n "$port" ]] || port="${SWITCHBOARD_SERVER_PORT:-}"
    [[ -n "$port" || ! -r "$config" ]] || port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$config" | head -1)
    echo "${port:-9000}"
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        log "need root to run: $*"; return 1
    fi
}

# Installs the given Debian packages when any is missing (apt-get update first).
ensure_packages() {
    local missing=()
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    log "installing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Creates (once) the Python venv under .venv and installs the test requirements into it.
ensure_venv() {
    local venv="$ROOT/.venv"
    if [ ! -x "$venv/bin/python" ]; then
        log "creating Python venv in .venv"
        python3 -m venv "$venv"
    fi
    local stamp="$venv/.requirements-installed"
    if [ ! -f "$stamp" ] || [ "$ROOT/Tests/e2e/requirements.txt" -nt "$stamp" ]; then
        log "installing Python test requirements"
        "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
        "$venv/bin/python" -m pip install -q -r "$ROOT/Tests/e2e/requirements.txt"
        touch "$stamp"
    fi
    PYTHON="$venv/bin/python"
    export PYTHON
}
