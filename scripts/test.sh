#!/usr/bin/env bash
# Rust tests, then the Python tests (including the plain-vs-PYTHONPOPPY=1 differential runs).
set -euo pipefail
source "$(dirname "$0")/install.sh"
# Ray (the [ray] extra) for tests/test_executors.py's Ray case: about 25 s to install, 50 s to
# test. Optional: without it (no network, or POPPY_TEST_RAY=0) that case is skipped with a reason.
if [ "${POPPY_TEST_RAY:-1}" != "0" ]; then
    "$PYTHON" -c 'import ray' 2>/dev/null || "$PYTHON" -m pip install --quiet "ray>=2.9" \
        || echo "Ray could not be installed: the Ray tests will be skipped" >&2
fi
cargo test --release
status=0
"$PYTHON" -m pytest -q tests || status=$?
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests" >&2
fi
exit "$status"
