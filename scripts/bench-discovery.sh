#!/usr/bin/env bash
# How long a complete catalog read takes: `sluice check` (spawn the
# upstream, walk every page of every list, compare with the lockfile, exit)
# on a sluice-fixture catalog of 10,015 tools served 9 per page (1,113
# pages), ROUNDS times; prints each run and the median. Release builds.
# Not part of the test suite.
#
#   scripts/bench-discovery.sh [ROUNDS] [TOOLS] [PAGE_SIZE]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS="${1:-5}"; TOOLS="${2:-10000}"; PAGE="${3:-9}"
cargo build --release --locked -q --bin sluice --bin sluice-fixture
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
printf '[[upstream]]\nname = "fx"\ncommand = "%s"\nargs = ["--tools", "%s", "--page-size", "%s"]\n' \
    "$PWD/target/release/sluice-fixture" "$TOOLS" "$PAGE" >"$DIR/sluice.toml"
target/release/sluice lock --config "$DIR/sluice.toml" >/dev/null
for _ in $(seq "$ROUNDS"); do
    start=$(date +%s%N)
    target/release/sluice check --config "$DIR/sluice.toml" >/dev/null
    end=$(date +%s%N)
    echo $(( (end - start) / 1000000 ))
done | tee "$DIR/ms" | sed 's/$/ ms/'
sort -n "$DIR/ms" | awk '{a[NR]=$1} END {print "median: " a[int((NR+1)/2)] " ms for '"$TOOLS"' generated tools, '"$PAGE"' per page"}'
