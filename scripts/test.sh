#!/usr/bin/env bash
# Rust tests, then the Python tests (including the plain-vs-PYTHONPOPPY=1 differential runs).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "poppy_jit needs CPython 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi
"$PYTHON" -m pip install --quiet maturin pytest hypothesis openai httpx matplotlib
# Build the Rust extension (poppy_jit._core) in release mode and install the package.
"$PYTHON" -m pip install --quiet --force-reinstall --no-deps .
cargo test --release
status=0
"$PYTHON" -m pytest -q tests || status=$?
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests" >&2
fi
exit "$status"
