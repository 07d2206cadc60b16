#!/usr/bin/env bash
# Runs sluice on the bundled example config (examples/sluice.toml): Streamable
# HTTP at http://127.0.0.1:8787/mcp, in front of real MCP servers installed by
# scripts/test-peers.sh. Extra arguments go to `sluice serve` (e.g. --stdio).
#
#   scripts/run-example.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PEERS="${PEERS:-$PWD/.peers}"
export PWD  # the example's memory file is under ${PWD}
scripts/test-peers.sh
cargo build --release --locked --bin sluice
mkdir -p .sluice/example-files .sluice/example-memory
[ -f .sluice/example-files/hello.txt ] || echo "hello from sluice's example" > .sluice/example-files/hello.txt
exec target/release/sluice serve --config examples/sluice.toml "$@"
