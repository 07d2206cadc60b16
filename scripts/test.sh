#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs the pinned MCP peers,
# checks formatting and lints, runs the Rust tests (unit, property and
# integration against misbehaving fixture servers), then drives the real
# sluice binary with real clients (Python mcp 2.3.0, inspector 2.12)
# against real MCP servers, and runs the official conformance suite directly
# against the conformance fixture and through sluice (scripts/conformance.sh).
# The audit and scale-out tests use real PostgreSQL and Redis servers, which
# scripts/services.sh installs (Debian packages) and starts first.
#
#   scripts/test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PEERS="${PEERS:-$PWD/.peers}"

step() { printf '\n== %s\n' "$*" >&2; }

step "test peers (pinned; skipped when already installed)"
scripts/test-peers.sh

step "PostgreSQL and Redis for the audit and scale-out tests (stopped at exit)"
eval "$(scripts/services.sh start)"
trap 'scripts/services.sh stop' EXIT

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "docs: every intra-doc link resolves"
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -A rustdoc::private_intra_doc_links" \
    cargo doc --workspace --no-deps --document-private-items --locked -q

step "no import cycle between the modules of a crate"
python3 scripts/module-cycles.py

step "the core stays pure (no IO crates)"
if cargo tree -p sluice-core -e normal --locked | grep -E '^\S*[ │├└─]*(tokio|axum|reqwest|hyper|sqlx|mio) v'; then
    echo "sluice-core must not depend on IO crates" >&2
    exit 1
fi

step "Rust tests"
cargo nextest run --workspace --locked --no-fail-fast

step "sluice with real MCP clients and servers"
export SLUICE_BIN="$PWD/target/debug/sluice"
"$PEERS/venv/bin/python" -m pytest tests/integration -q

step "the official MCP conformance suite, directly and through sluice"
scripts/conformance.sh "$SLUICE_BIN"

# Last, because it rebuilds the sluice binary with the feature on.
step "OpenTelemetry traces (the otel feature): lints, and spans exported to a collector"
cargo clippy -p sluice-cli --features otel --all-targets --locked -- -D warnings
cargo nextest run -p sluice-cli --features otel --locked --test traces
