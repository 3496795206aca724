#!/usr/bin/env bash
# CityExcursions on the simulated LLM service: plain CPython vs PYTHONPOPPY=1.
set -euo pipefail
source "$(dirname "$0")/install.sh"
"$PYTHON" -m poppy_jit.demo "$@"
