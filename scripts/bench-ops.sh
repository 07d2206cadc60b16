#!/usr/bin/env bash
# What operations cost on a call (BENCHMARKS.md, scenario 7): the small echo
# through sluice with metrics and the audit log off, with metrics only, with
# metrics and the default SQLite audit log, and with the audit log in
# PostgreSQL (when SLUICE_TEST_POSTGRES_URL is set: `eval "$(scripts/services.sh start)"`).
# stdio at concurrency 1 and 16, HTTP at 16; ROUNDS rounds alternating the
# variants; medians printed, raw results in target/bench/ops.jsonl. Release
# builds; not part of the test suite.
#
#   scripts/bench-ops.sh [ROUNDS] [REQUESTS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RESULTS_FILE=ops.jsonl
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh "$@"

# variant NAME STATE METRICS: a config dir of its own (its own audit.db).
VARIANTS=()
variant() {
    mkdir -p "$DIR/$1"
    cat >"$DIR/$1/sluice.toml" <<TOML
[ratelimit]
default = "1000000/s"
[metrics]
enabled = $3
[state]
$2
[[upstream]]
name = "fx"
command = "$FIX"
prefix = false
TOML
    VARIANTS+=("$1")
}
variant "metrics off, audit off" "audit = false" false
variant "metrics on, audit off" "audit = false" true
variant "metrics on, audit SQLite" "audit = true" true
if [ -n "${SLUICE_TEST_POSTGRES_URL:-}" ]; then
    variant "metrics on, audit PostgreSQL" "url = \"$SLUICE_TEST_POSTGRES_URL\"" true
fi


echo "== 7. operations overhead: stdio echo" >&2
for c in 1 16; do
    for _ in $(seq "$ROUNDS"); do
        for v in "${VARIANTS[@]}"; do
            run "7 stdio echo c=$c" "$v" --requests "$REQUESTS" --concurrency "$c" -- "$SLUICE" serve --stdio --config "$DIR/$v/sluice.toml"
        done
    done
done

echo "== 7. operations overhead: HTTP echo, c=16" >&2
declare -A URLS
for v in "${VARIANTS[@]}"; do
    log="$DIR/$v/serve.log"
    "$SLUICE" serve --listen 127.0.0.1:0 --config "$DIR/$v/sluice.toml" 2>"$log" & PIDS+=($!)
    for _ in $(seq 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
    URLS[$v]="$(grep -o 'http://[^ ]*/mcp' "$log" | head -1)"
    [ -n "${URLS[$v]}" ] || { echo "bench: sluice ($v) did not start" >&2; cat "$log" >&2; exit 1; }
done
for _ in $(seq "$ROUNDS"); do
    for v in "${VARIANTS[@]}"; do
        run "7 http echo c=16" "$v" --requests "$REQUESTS" --concurrency 16 --connections 16 "${URLS[$v]}"
    done
done

"$PY" - "$RESULTS" <<'PY'
import json, statistics, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1])]
by = defaultdict(list)
for r in rows:
    by[(r["scenario"], r["path"])].append(r)
scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
for s in scenarios:
    paths = [p for (sc, p) in by if sc == s]
    base = statistics.median(x["throughput_rps"] for x in by[(s, paths[0])])
    base_p50 = statistics.median(x["latency_ms"]["p50"] for x in by[(s, paths[0])])
    print(f"\n{s}")
    print(f"  {'variant':32} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>9} {'p50 vs first':>13} {'req/s vs first':>15}")
    for p in paths:
        rs = by[(s, p)]
        p50 = statistics.median(x["latency_ms"]["p50"] for x in rs)
        p99 = statistics.median(x["latency_ms"]["p99"] for x in rs)
        tput = statistics.median(x["throughput_rps"] for x in rs)
        print(f"  {p:32} {p50:8.3f} {p99:8.3f} {tput:9.0f} {p50 / base_p50:12.3f}x {tput / base:14.3f}x")
PY
