# Sourced by demo.sh and test.sh: checks for CPython 3.11, installs the Python dependencies and
# builds and installs the package (the Rust extension poppy_jit._core, release mode). Sets PYTHON.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "poppy_jit needs CPython 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi
"$PYTHON" -m pip install --quiet maturin pytest hypothesis openai httpx2 aiolimiter matplotlib
"$PYTHON" -m pip install --quiet --force-reinstall --no-deps .
