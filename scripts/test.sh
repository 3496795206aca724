#!/usr/bin/env bash
# Rust tests, then the Python tests (including the plain-vs-PYTHONPOPPY=1 differential runs).
set -euo pipefail
source "$(dirname "$0")/install.sh"
cargo test --release
status=0
"$PYTHON" -m pytest -q tests || status=$?
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests" >&2
fi
exit "$status"
