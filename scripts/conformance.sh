#!/usr/bin/env bash
# The official MCP conformance suite, directly against the conformance
# fixture (tests/conformance/server.py) and through sluice, in one go:
#
#   direct           the fixture over Streamable HTTP
#   sluice/stdio     sluice (HTTP) -> the fixture as a stdio child
#   sluice/http      sluice (HTTP) -> the fixture over Streamable HTTP
#
# For each: @modelcontextprotocol/conformance 0.1.16 (all active scenarios)
# and 0.2.0-alpha.12 with --requirements 2026-07-28. Fails (naming the
# scenarios) when any 0.1.16 scenario fails through sluice, when sluice
# fails a scored 2026-07-28 scenario that passes directly, or when the
# 2026-07-28 set's check totals through sluice (the unscored extension
# scenarios, tasks included) differ from the direct ones. Prints a score
# table. Then the client side: tests/conformance/client.sh runs the suite's
# client scenarios with sluice's upstream connector as the client. Needs
# the test peers (scripts/test-peers.sh) and a built sluice.
#
#   scripts/conformance.sh [SLUICE_BIN]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SLUICE="${1:-${SLUICE_BIN:-target/debug/sluice}}"
PEERS="${PEERS:-$PWD/.peers}"
PY="$PEERS/venv/bin/python"
ALPHA="$PEERS/node/node_modules/conformance-alpha/dist/index.js"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sluice-conformance.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# Starts a server in the background and sets URL once it says
# `listening on URL` on stderr. (Not in a command substitution: the
# server would hold its pipe open.)
URL=""
start() {
    local log="$1"; shift
    "$@" >/dev/null 2>"$log" &
    PIDS+=($!)
    for _ in $(seq 200); do
        URL="$(grep -oE 'listening on http://[0-9.:]+/mcp' "$log" | head -1 | cut -d' ' -f3)" || true
        if [ -n "$URL" ]; then return 0; fi
        sleep 0.1
    done
    echo "conformance.sh: $* did not start:" >&2
    cat "$log" >&2
    return 1
}

start "$WORK/fixture.log" "$PY" tests/conformance/server.py --http 0
FIXTURE_URL="$URL"
cat >"$WORK/stdio.toml" <<TOML
[[upstream]]
name = "conformance"
command = "$PY"
args = ["$PWD/tests/conformance/server.py", "--stdio"]
prefix = false
TOML
cat >"$WORK/http.toml" <<TOML
[[upstream]]
name = "conformance"
url = "$FIXTURE_URL"
allow_private = true
prefix = false
TOML
start "$WORK/sluice-stdio.log" "$SLUICE" serve --listen 127.0.0.1:0 --config "$WORK/stdio.toml"
STDIO_URL="$URL"
start "$WORK/sluice-http.log" "$SLUICE" serve --listen 127.0.0.1:0 --config "$WORK/http.toml"
HTTP_URL="$URL"

status=0
declare -A SCORE FAILS TOTAL
run() {  # run NAME URL SUITE [ARGS...]
    local name="$1" url="$2" suite="$3"; shift 3
    local out="$WORK/${name//\//-}-$suite.out" rc=0
    if [ "$suite" = "alpha" ]; then
        CONFORMANCE_JS="$ALPHA" tests/conformance/run.sh "$url" "$@" >"$out" 2>&1 || rc=$?
    else
        tests/conformance/run.sh "$url" "$@" >"$out" 2>&1 || rc=$?
    fi
    TOTAL["$name/$suite"]="$(grep -oE '^Total: [0-9]+ passed, [0-9]+ failed' "$out" || echo none)"
    SCORE["$name/$suite"]="$( (grep -oE '^Total: [0-9]+ passed, [0-9]+ failed' "$out" || echo 'Total: no result') | sed 's/Total: //') ($(grep -oE '[0-9]+ scenario\(s\), [0-9]+ failing' "$out" || true))"
    FAILS["$name/$suite"]="$( (grep -oE '^  FAIL \S+' "$out" || true) | awk '{print $2}' | sort | tr '\n' ' ')"
    if [ "$rc" -ge 2 ]; then
        echo "conformance.sh: the $suite suite did not complete against $name:" >&2
        tail -40 "$out" >&2
        status=1
    fi
}
for target in direct:"$FIXTURE_URL" sluice/stdio:"$STDIO_URL" sluice/http:"$HTTP_URL"; do
    name="${target%%:*}"; url="${target#*:}"
    run "$name" "$url" 0.1.16
    run "$name" "$url" alpha --requirements 2026-07-28
done

printf '\n%-14s %-46s %s\n' "target" "0.1.16 (active)" "0.2.0-alpha.12 --requirements 2026-07-28"
for name in direct sluice/stdio sluice/http; do
    printf '%-14s %-46s %s\n' "$name" "${SCORE[$name/0.1.16]}" "${SCORE[$name/alpha]}"
done
for name in sluice/stdio sluice/http; do
    if [ -n "${FAILS[$name/0.1.16]}" ]; then
        echo "FAIL through $name (0.1.16): ${FAILS[$name/0.1.16]}"
        status=1
    fi
    if [ "${TOTAL[$name/alpha]}" != "${TOTAL[direct/alpha]}" ]; then
        echo "FAIL through $name (2026-07-28): ${TOTAL[$name/alpha]}, directly ${TOTAL[direct/alpha]}"
        status=1
    fi
    for scenario in ${FAILS[$name/alpha]}; do
        if [[ " ${FAILS[direct/alpha]} " != *" $scenario "* ]]; then
            echo "FAIL through $name (2026-07-28), passes directly: $scenario"
            status=1
        fi
    done
done
echo
echo "client side (sluice's upstream connector against the suite's mock servers):"
tests/conformance/client.sh "$SLUICE" || status=1

if [ "$status" -ne 0 ]; then
    echo "--- sluice (stdio upstream) log tail ---"; tail -20 "$WORK/sluice-stdio.log"
    echo "--- sluice (HTTP upstream) log tail ---"; tail -20 "$WORK/sluice-http.log"
fi
exit "$status"
