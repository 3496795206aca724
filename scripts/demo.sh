#!/usr/bin/env bash
# CityExcursions on the simulated LLM service: plain CPython vs PYTHONPOPPY=1.
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
"$PYTHON" -m poppy_jit.demo "$@"
