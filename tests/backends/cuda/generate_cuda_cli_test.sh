#!/usr/bin/env bash
# `moengine generate --device cuda` on a golden fixture: the greedy ids equal the CPU run's, the
# run reports prefill and decode tokens/s, and a memory cap below the model's needs is refused
# (exit 2, one line with needed vs available). Exit 77 (skipped) without a usable device, unless
# MOE_REQUIRE_GPU=1. Usage: generate_cuda_cli_test.sh MOENGINE FIXTURE_DIR
set -u
bin=$1
dir=$2
ids=$(python3 -c "import json,sys;print(','.join(map(str,json.load(open(sys.argv[1]))['prompt_ids'])))" \
  "$dir/golden.json" 2>/dev/null || sed -E 's/.*"prompt_ids": *\[([0-9, ]*)\].*/\1/' "$dir/golden.json" | tr -d ' ')
common=(generate --model-path "$dir" --prompt-ids "$ids" --max-new-tokens 12 --ignore-eos)
fail() { echo "FAIL: $*"; exit 1; }

gpu_out=$("$bin" "${common[@]}" --device cuda 2>&1)
gpu_rc=$?
if [ $gpu_rc -ne 0 ] && echo "$gpu_out" | grep -qE "no usable CUDA driver or device|does not exist \(0 visible\)"; then
  [ "${MOE_REQUIRE_GPU:-0}" = 1 ] && fail "no usable device (MOE_REQUIRE_GPU=1): $gpu_out"
  echo "skipped: $gpu_out"
  exit 77
fi
[ $gpu_rc -eq 0 ] || fail "generate --device cuda exited $gpu_rc: $gpu_out"
cpu_out=$("$bin" "${common[@]}" --device cpu 2>&1) || fail "generate --device cpu: $cpu_out"
echo "$gpu_out"
gpu_ids=$(echo "$gpu_out" | grep '^generated_ids:')
cpu_ids=$(echo "$cpu_out" | grep '^generated_ids:')
[ -n "$gpu_ids" ] || fail "no generated_ids line from the cuda run"
[ "$gpu_ids" = "$cpu_ids" ] || fail "cuda ids '$gpu_ids' != cpu ids '$cpu_ids'"
echo "$gpu_out" | grep -qE '^prefill: [0-9]+ tokens, [0-9.]+ tokens/s; decode: 11 steps, [0-9.]+ tokens/s \(cuda' ||
  fail "no prefill/decode tokens/s line"

# A cap below the model's needs: refused before loading, exit 2, one line with the numbers.
small=$("$bin" "${common[@]}" --device cuda --gpu-memory 0.00001 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "--gpu-memory 0.00001 exited $rc, want 2: $small"
[ "$(echo "$small" | wc -l)" -eq 1 ] || fail "refusal is not one line: $small"
echo "$small" | grep -qE 'does not fit in GPU memory: needs [0-9.]+ GiB .* allowed by --gpu-memory' ||
  fail "refusal lacks needed/available: $small"
echo "$small"
echo "PASS: cuda ids == cpu ids ($gpu_ids)"
