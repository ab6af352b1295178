#!/usr/bin/env bash
# What CI runs: install, build, run every CPU test (release and ASan+UBSan), check formatting,
# and fuzz each parser for FUZZ_SECONDS (default 60). Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc)

echo "== setup"
scripts/setup.sh --no-build
scripts/npm-oracles.sh

echo "== format"
scripts/check-format.sh

echo "== release build + tests"
cmake --preset cpu-release >/dev/null
cmake --build build -j "$jobs" 2>&1 | tail -n 2
ctest --test-dir build -L cpu -j "$jobs" --output-on-failure --timeout 900

echo "== ASan + UBSan build + tests"
cmake --preset cpu-debug >/dev/null
cmake --build build-asan -j "$jobs" 2>&1 | tail -n 2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L cpu -j "$jobs" --output-on-failure --timeout 1800

echo "== fuzz (${FUZZ_SECONDS:-60} s per target)"
scripts/fuzz.sh "${FUZZ_SECONDS:-60}"

echo "== all checks passed"
