#!/usr/bin/env bash
# Runs sluice on the bundled example config (examples/sluice.toml): Streamable
# HTTP at http://127.0.0.1:8787/mcp, in front of real MCP servers installed by
# scripts/test-peers.sh. Extra arguments go to `sluice serve` (e.g. --stdio).
# Only sluice writes to stdout: the installs' output goes to stderr, so that
# with --stdio the client reads nothing but JSON-RPC.
#
#   scripts/run-example.sh
#   scripts/run-example.sh --stdio
#   SLUICE_BIN=target/debug/sluice scripts/run-example.sh   # a built sluice: no release build
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PEERS="${PEERS:-$PWD/.peers}"
scripts/test-peers.sh >&2
if [ -z "${SLUICE_BIN:-}" ]; then
    cargo build --release --locked --bin sluice >&2
    SLUICE_BIN=target/release/sluice
fi
mkdir -p .sluice/example-files .sluice/example-memory
[ -f .sluice/example-files/hello.txt ] || echo "hello from sluice's example" > .sluice/example-files/hello.txt
# examples/sluice.toml reads ${PWD} (the repo root) for server-memory's file.
export PWD
exec "$SLUICE_BIN" serve --config examples/sluice.toml "$@"
