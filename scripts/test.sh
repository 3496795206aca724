#!/usr/bin/env bash
# The whole test suite on every supported CPython found on this machine (docs/versions.md):
#
#   3.11  always (PYTHON, default python3): build and install, cargo test, the full pytest suite.
#   3.12, 3.13  when an interpreter is found (PYTHON312 / PYTHON313, else python3.12 / python3.13
#         on PATH, else pyenv's versions/3.1x.*): the wheel for that version built and installed
#         (into that interpreter if it is a venv, else into a venv under target/), the Rust tests
#         of that version's modules (cargo test --lib pyver:: py31x::), and
#         the golden files (lift/3.1x/ where its lift differs) and the full pytest suite but
#         for the cases listed in DESELECT_312 / DESELECT_313 below (both compile: their
#         bytecode is normalised into 3.11's forms).
#         A version not found is reported as skipped, with why.
#
# POPPY_TEST_VERSIONS="3.11 3.12" restricts the versions run. Each version builds into its own
# target/ subdirectory, so switching versions does not rebuild the others.
set -euo pipefail
source "$(dirname "$0")/install.sh"
# Ray (the [ray] extra) for tests/test_executors.py's Ray case: about 25 s to install, 50 s to
# test. Optional: without it (no network, or POPPY_TEST_RAY=0) that case is skipped with a reason.
if [ "${POPPY_TEST_RAY:-1}" != "0" ]; then
    "$PYTHON" -c 'import ray' 2>/dev/null || "$PYTHON" -m pip install --quiet "ray>=2.9" \
        || echo "Ray could not be installed: the Ray tests will be skipped" >&2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VERSIONS="${POPPY_TEST_VERSIONS:-3.11 3.12 3.13}"

# On 3.12 and 3.13 the compiled path runs: the full suite but for these cases, each with why.
DESELECT_312=()
DESELECT_313=()
# Their golden suites: all but regions_golden, whose Bezoar numbers constants after the
# comprehension code objects 3.11 has in co_consts (3.12's and 3.13's made ones come last); lift
# goldens are per version (tests/golden/lift/3.12/, 3.13/), the regions one is 3.11's.
GOLDEN_OTHER=(lift_golden bezoar_text_golden lambda_o_text_golden lower_golden)

summary=()
status=0

run_311() {
    if cargo test --release && "$PYTHON" -m pytest -q tests; then
        summary+=("3.11: passed (cargo test, full pytest suite)")
    else
        status=1
        summary+=("3.11: FAILED")
    fi
}

find_python() {  # $1 = 3.12: prints a working interpreter for that version, or nothing
    local v="$1" var="PYTHON${1/./}" cand
    local cands=("${!var:-}" "$(command -v "python$v" || true)")
    cands+=("${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python)
    for cand in "${cands[@]}"; do
        if [ -n "$cand" ] && [ -x "$cand" ] &&
            "$cand" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$v'.split('.'))))" 2>/dev/null; then
            echo "$cand"
            return
        fi
    done
}

run_other() {  # $1 = 3.12
    local v="$1" py target="$PWD/target/py$1"
    py="$(find_python "$v")"
    if [ -z "$py" ]; then
        summary+=("$v: skipped (no CPython $v found: set PYTHON${v/./}, or put python$v on PATH)")
        return
    fi
    if ! "$py" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
        # Not a venv: install into one of ours, never into the interpreter itself.
        [ -x "$target/venv/bin/python" ] || "$py" -m venv "$target/venv"
        py="$target/venv/bin/python"
    fi
    echo "=== CPython $v ($py)"
    "$py" -m pip install --quiet maturin pytest hypothesis openai httpx2 aiolimiter matplotlib
    local deselect=()
    case "$v" in
        3.12) deselect=(${DESELECT_312[@]+"${DESELECT_312[@]}"}) ;;
        3.13) deselect=(${DESELECT_313[@]+"${DESELECT_313[@]}"}) ;;
    esac
    local mod="py${v/./}::"
    if CARGO_TARGET_DIR="$target" "$py" -m pip install --quiet --force-reinstall --no-deps . &&
        PYO3_PYTHON="$py" CARGO_TARGET_DIR="$target" cargo test --release --lib -- pyver:: "$mod" &&
        PYO3_PYTHON="$py" CARGO_TARGET_DIR="$target" cargo test --release --test golden -- "${GOLDEN_OTHER[@]}" &&
        "$py" -m pytest -q tests ${deselect[@]+"${deselect[@]}"}; then
        summary+=("$v: passed (cargo test pyver:: $mod, the golden files, the full pytest suite${deselect[0]+ but the deselected cases}; compiled)")
    else
        status=1
        summary+=("$v: FAILED")
    fi
}

for v in $VERSIONS; do
    case "$v" in
        3.11) run_311 ;;
        3.12 | 3.13) run_other "$v" ;;
        *) summary+=("$v: skipped (not a supported version)") ;;
    esac
done
printf '%s\n' "--- versions" "${summary[@]}"
exit "$status"
