#!/usr/bin/env bash
# sluice's memory under two loads (scenario 5 of BENCHMARKS.md): peak RSS
# (VmHWM) of `sluice serve` with 1,000 idle legacy HTTP sessions open, and
# while an upstream answers one call with a 100 MB line (sluice must refuse
# it without holding it). Release builds. Not part of the test suite.
#
#   scripts/bench-memory.sh [SESSIONS] [LINE_BYTES]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SESSIONS="${1:-1000}"; LINE="${2:-100000000}"
export PEERS="${PEERS:-$PWD/.peers}"
cargo build --release --locked -q --bin sluice --bin sluice-fixture --bin sluice-bench
PY="$PEERS/venv/bin/python"; [ -x "$PY" ] || PY=python3
DIR="$(mktemp -d)"
SLUICE_PID=""
cleanup() { [ -n "$SLUICE_PID" ] && kill "$SLUICE_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT

# One sluice in front of the fixture over stdio; read_budget 1 MiB, transport
# ceiling 16 MiB (the defaults).
cat >"$DIR/sluice.toml" <<TOML
[server]
max_sessions = $((SESSIONS + 10))
[ratelimit]
default = "off"
[[upstream]]
name = "fx"
command = "$PWD/target/release/sluice-fixture"
prefix = false
TOML
target/release/sluice serve --listen 127.0.0.1:0 --config "$DIR/sluice.toml" 2>"$DIR/sluice.log" &
SLUICE_PID=$!
for _ in $(seq 100); do grep -q "listening on" "$DIR/sluice.log" && break; sleep 0.1; done
URL="$(grep -o 'http://[^ ]*/mcp' "$DIR/sluice.log" | head -1)"
[ -n "$URL" ] || { echo "bench-memory: sluice did not start:" >&2; cat "$DIR/sluice.log" >&2; exit 1; }
rss() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$SLUICE_PID/status"; }

# Settle: one call, so the upstream is connected and its catalog read.
target/release/sluice-bench --requests 10 --warmup 0 "$URL" >/dev/null
idle_kib=$(rss VmRSS)

"$PY" - "$URL" "$SESSIONS" <<'PY'
import json, sys, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}).encode()
for _ in range(n):
    req = urllib.request.Request(url, data=body, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.headers["mcp-session-id"], "no session id"
        r.read()
PY
sessions_kib=$(rss VmRSS)
echo "rss with sluice idle: $((idle_kib / 1024)) MiB; with $SESSIONS idle legacy sessions: $((sessions_kib / 1024)) MiB ($(( (sessions_kib - idle_kib) / SESSIONS )) KiB a session)"

# One call whose answer is a LINE-byte line (read-only tool: the read
# budget applies; the transport ceiling drops the line while reading it).
target/release/sluice-bench --requests 1 --warmup 0 --tool huge_read --args "{\"bytes\": $LINE}" --json "$URL" >"$DIR/huge.json" || true
peak_kib=$(rss VmHWM)
echo "peak rss (VmHWM) after a $LINE-byte answer: $((peak_kib / 1024)) MiB (bound: 4 x read budget + 50 MiB = 54 MiB)"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print("  the call:", "ok" if r["ok"] else "refused", "in", r["latency_ms"]["max"], "ms")' "$DIR/huge.json"
