# Shared by scripts/bench.sh and scripts/bench-ops.sh (sourced, not run):
# release builds, a results file, a scratch directory, the processes to
# end at exit, and `run`, which appends one tagged sluice-bench result.
#
#   RESULTS_FILE=name.jsonl; source scripts/bench-lib.sh "$@"
ROUNDS="${1:-5}"; REQUESTS="${2:-20000}"
export PEERS="${PEERS:-$PWD/.peers}"
PY="$PEERS/venv/bin/python"; [ -x "$PY" ] || PY=python3
cargo build --release --locked -q --bin sluice --bin sluice-fixture --bin sluice-bench
OUT=target/bench; mkdir -p "$OUT"; RESULTS="$OUT/$RESULTS_FILE"; : >"$RESULTS"
BENCH="$PWD/target/release/sluice-bench"; FIX="$PWD/target/release/sluice-fixture"; SLUICE="$PWD/target/release/sluice"
DIR="$(mktemp -d)"; PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT

# run SCENARIO PATH ARGS...: one sluice-bench run, tagged, appended to RESULTS.
run() {
    local scenario="$1" path="$2"; shift 2
    "$BENCH" --json "$@" | "$PY" -c 'import json,sys; r=json.loads(sys.stdin.read()); r["scenario"]=sys.argv[1]; r["path"]=sys.argv[2]; print(json.dumps(r))' "$scenario" "$path" >>"$RESULTS"
}
