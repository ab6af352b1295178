#!/usr/bin/env bash
# Builds the libFuzzer targets (`cmake --preset fuzz`, clang) and runs each tests/fuzz/*_fuzz
# for the given number of seconds, starting from a temporary copy of its seed corpus
# (tests/fuzz/corpus/<fuzzer>/, dictionary tests/fuzz/corpus/<fuzzer>.dict if present), so the
# repository is never modified. Exits non-zero if any fuzzer finds a crash, leak or sanitizer
# report; the reproducer is kept under build-fuzz/fuzz-artifacts/<fuzzer>/.
#
# Usage: scripts/fuzz.sh [seconds-per-fuzzer=60] [fuzzer-name...]
set -euo pipefail

seconds="${1:-60}"
shift || true
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ $# -gt 0 ]]; then
  fuzzers=("$@")
  targets=("$@")
else
  fuzzers=()
  for src in tests/fuzz/*_fuzz.cc; do fuzzers+=("$(basename "$src" .cc)"); done
  targets=(moe_fuzzers)
fi

cmake --preset fuzz >/dev/null
build_dir="$root/build-fuzz"
cmake --build "$build_dir" --target "${targets[@]}"

work="$(mktemp -d "${TMPDIR:-/tmp}/moe-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
failed=()
for name in "${fuzzers[@]}"; do
  bin="$build_dir/bin/$name"
  if [[ ! -x "$bin" ]]; then
    echo "fuzz.sh: $bin was not built" >&2
    failed+=("$name")
    continue
  fi
  corpus="$work/$name"
  mkdir -p "$corpus"
  if [[ -d "tests/fuzz/corpus/$name" ]]; then cp -r "tests/fuzz/corpus/$name/." "$corpus/"; fi
  artifacts="$build_dir/fuzz-artifacts/$name"
  mkdir -p "$artifacts"
  args=(-max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096
        -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [[ -f "tests/fuzz/corpus/$name.dict" ]]; then args+=(-dict="tests/fuzz/corpus/$name.dict"); fi
  echo "=== $name: ${seconds}s, seeds: $(ls "$corpus" | wc -l)"
  log="$work/$name.log"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$bin" "${args[@]}" "$corpus" >"$log" 2>&1; then
    grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
    echo "=== $name: OK ($(ls "$corpus" | wc -l) corpus entries)"
  else
    tail -n 60 "$log"
    echo "=== $name: FAILED; reproducer in $artifacts/" >&2
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: all ${#fuzzers[@]} fuzzers ran ${seconds}s without findings"
