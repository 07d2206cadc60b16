#!/usr/bin/env bash
# Every benchmark of BENCHMARKS.md in one command: what sluice adds to a call
# (stdio and HTTP, both upstream transports, concurrency 1/16/64), large
# read results, complete discovery, memory, and the micro-benches. Each
# scenario runs direct and through sluice in the same invocation, ROUNDS
# times alternating; medians and ratios are printed and every raw result is
# kept in target/bench/results.jsonl. Release builds. Not part of the test
# suite; peers are separate (scripts/bench-peers.sh).
#
#   scripts/bench.sh [ROUNDS] [REQUESTS]
#   SLUICE_BEFORE=/path/to/an/older/sluice scripts/bench.sh   # also measure that build
#                                                           # (scenarios 1-3), for before/after
#   SCENARIOS="1 2" scripts/bench.sh                        # only these scenarios (default: all)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RESULTS_FILE=results.jsonl
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh "$@"

# sluice in front of the fixture, over stdio (`stdio.toml`) or in front of
# the fixture's own HTTP server (`http.toml`, written once it listens).
# The limiter is measured but never hit; read_big's results are reads, and
# the read budget (2 MiB) lets a 1 MiB result through, redacted and measured.
config() {
    cat <<TOML
[limits]
mcp_read_response_max_bytes = 2097152
[ratelimit]
default = "1000000/s"
[[upstream]]
name = "fx"
$1
prefix = false
read_only_tools = ["read_big"]
TOML
}
config "command = \"$FIX\"" >"$DIR/stdio.toml"
BEFORE="${SLUICE_BEFORE:-}"
SCENARIOS="${SCENARIOS:-1 2 3 4 5 micro}"
# Whether scenario $1 was asked for.
want() { [[ " $SCENARIOS " == *" $1 "* ]]; }

# Starts a server whose stderr says `listening on URL`; sets URL.
start() {
    local log="$DIR/$1.log"; shift
    "$@" 2>"$log" & PIDS+=($!)
    for _ in $(seq 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
    URL="$(grep -o 'http://[^ ]*/mcp' "$log" | head -1)"
    [ -n "$URL" ] || { echo "bench: $* did not start" >&2; cat "$log" >&2; exit 1; }
}

want 1 && echo "== 1. stdio client -> sluice (stdio) -> stdio upstream, small echo" >&2
want 1 && for c in 1 16; do
    for _ in $(seq "$ROUNDS"); do
        run "1 stdio echo c=$c" direct --requests "$REQUESTS" --concurrency "$c" -- "$FIX"
        run "1 stdio echo c=$c" sluice --requests "$REQUESTS" --concurrency "$c" -- "$SLUICE" serve --stdio --config "$DIR/stdio.toml"
        [ -z "$BEFORE" ] || run "1 stdio echo c=$c" "sluice before" --requests "$REQUESTS" --concurrency "$c" -- "$BEFORE" serve --stdio --config "$DIR/stdio.toml"
    done
done

if want 2; then
echo "== 2. HTTP client -> sluice (HTTP) -> stdio and HTTP upstreams" >&2
start fixture-http "$FIX" --http 0; FIX_URL="$URL"
config "url = \"$FIX_URL\"
allow_private = true" >"$DIR/http.toml"
start sluice-stdio "$SLUICE" serve --listen 127.0.0.1:0 --config "$DIR/stdio.toml"; S_STDIO="$URL"
start sluice-http "$SLUICE" serve --listen 127.0.0.1:0 --config "$DIR/http.toml"; S_HTTP="$URL"
[ -z "$BEFORE" ] || { start before-stdio "$BEFORE" serve --listen 127.0.0.1:0 --config "$DIR/stdio.toml"; B_STDIO="$URL"; }
for c in 1 16 64; do
    conns=$(( c < 16 ? c : 16 ))
    for _ in $(seq "$ROUNDS"); do
        run "2 http echo c=$c" direct --requests "$REQUESTS" --concurrency "$c" --connections "$conns" "$FIX_URL"
        run "2 http echo c=$c" "sluice, stdio upstream" --requests "$REQUESTS" --concurrency "$c" --connections "$conns" "$S_STDIO"
        run "2 http echo c=$c" "sluice, http upstream" --requests "$REQUESTS" --concurrency "$c" --connections "$conns" "$S_HTTP"
        [ -z "$BEFORE" ] || run "2 http echo c=$c" "before, stdio upstream" --requests "$REQUESTS" --concurrency "$c" --connections "$conns" "$B_STDIO"
    done
done
fi

want 3 && echo "== 3. read-only results of 10 KB, 100 KB, 1 MiB (redacted and measured)" >&2
want 3 && for bytes in 10240 102400 1048576; do
    n=$(( bytes >= 1048576 ? 300 : bytes >= 102400 ? 2000 : 5000 ))
    for _ in $(seq "$ROUNDS"); do
        run "3 read $bytes B" direct --requests "$n" --tool read_big --args "{\"bytes\": $bytes}" -- "$FIX"
        run "3 read $bytes B" sluice --requests "$n" --tool read_big --args "{\"bytes\": $bytes}" -- "$SLUICE" serve --stdio --config "$DIR/stdio.toml"
        [ -z "$BEFORE" ] || run "3 read $bytes B" "sluice before" --requests "$n" --tool read_big --args "{\"bytes\": $bytes}" -- "$BEFORE" serve --stdio --config "$DIR/stdio.toml"
    done
done

[ ! -s "$RESULTS" ] || "$PY" - "$RESULTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
print(f"{'scenario':<22} {'path':<24} {'req/s':>9} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}  {'ratio p50':>9} {'ratio rps':>9}")
for s in scenarios:
    paths = list(dict.fromkeys(r["path"] for r in rows if r["scenario"] == s))
    med = {}
    for p in paths:
        rs = [r for r in rows if r["scenario"] == s and r["path"] == p]
        assert all(r["errors"] == 0 for r in rs), f"{s} {p}: errors {[r['errors'] for r in rs]}"
        med[p] = (statistics.median(r["throughput_rps"] for r in rs),
                  *(statistics.median(r["latency_ms"][k] for r in rs) for k in ("p50", "p90", "p99")))
    for p in paths:
        rps, p50, p90, p99 = med[p]
        ratio = "" if p == "direct" else f"{p50 / med['direct'][1]:>9.2f} {rps / med['direct'][0]:>9.2f}"
        print(f"{s:<22} {p:<24} {rps:>9.0f} {p50:>8.3f} {p90:>8.3f} {p99:>8.3f}  {ratio}")
print(f"(medians of {len(rows) // sum(len(set(r['path'] for r in rows if r['scenario'] == s)) for s in scenarios)} runs each; raw results in {sys.argv[1]})")
PY

want 4 && echo "== 4. complete discovery: 10,000 tools over 1,000 pages" >&2
want 4 && scripts/bench-discovery.sh "$ROUNDS" 10000 10 | tail -1
want 5 && echo "== 5. memory" >&2
want 5 && scripts/bench-memory.sh
want micro && echo "== micro-benches (criterion)" >&2
want micro && cargo bench -q -p sluice-core --bench boundary --bench lists -- --noplot 2>/dev/null | grep -E "time:|^[a-z]" || true
