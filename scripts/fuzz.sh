#!/usr/bin/env bash
# Fuzzes every parser of untrusted bytes in sluice-core (crates/sluice-core/tests/fuzz.rs) with
# CASES inputs per target (default 1,000,000), in release, one target at a time so that the
# allocation counts are each target's own. CI runs the same harness with a few hundred inputs.
# Not part of the test suite: at 10^6 inputs a target takes from seconds to minutes.
#
#   scripts/fuzz.sh [CASES] [FILTER]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CASES="${1:-1000000}"
FILTER="${2:-}"
PROPTEST_CASES="$CASES" cargo test --release --locked -p sluice-core --test fuzz -- \
    --test-threads 1 --nocapture $FILTER
