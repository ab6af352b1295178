#!/usr/bin/env bash
# `moengine generate --device cuda` on a golden fixture: the ids with CUDA graphs (the default),
# with --eager and on --device cpu are equal, greedy and with seeded sampling; every decode step
# is a graph replay and no arena grows during the generation (the warm-up sized them); the run
# reports prefill and decode tokens/s (text and json); a memory cap below the model's needs is
# refused (exit 2, one line with needed vs available). Exit 77 (skipped) without a usable device,
# unless MOE_REQUIRE_GPU=1. Usage: generate_cuda_cli_test.sh MOENGINE FIXTURE_DIR
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
echo "$gpu_out" | grep -qE '^cuda graphs: on, 11 of 11 decode steps replayed; workspace [0-9.]+ MiB, arena growths during generation: 0$' ||
  fail "graphs not used for every decode step, or an arena grew: $gpu_out"

# --eager: the same ids, no graphs, and still no arena growth after the warm-up.
eager_out=$("$bin" "${common[@]}" --device cuda --eager 2>&1) || fail "--eager: $eager_out"
echo "$eager_out" | tail -n 1
[ "$(echo "$eager_out" | grep '^generated_ids:')" = "$gpu_ids" ] || fail "--eager ids differ: $eager_out"
echo "$eager_out" | grep -qE '^cuda graphs: off \(--eager\); workspace [0-9.]+ MiB, arena growths during generation: 0$' ||
  fail "--eager: no 'cuda graphs: off' line with zero growths: $eager_out"

# Seeded sampling: the step counter reaches the sampler of every replayed step.
sampled=(--temperature 0.8 --top-p 0.95 --seed 7)
s_gpu=$("$bin" "${common[@]}" "${sampled[@]}" --device cuda 2>&1) || fail "sampled cuda: $s_gpu"
s_eager=$("$bin" "${common[@]}" "${sampled[@]}" --device cuda --eager 2>&1) || fail "sampled --eager: $s_eager"
s_cpu=$("$bin" "${common[@]}" "${sampled[@]}" --device cpu 2>&1) || fail "sampled cpu: $s_cpu"
s_ids=$(echo "$s_gpu" | grep '^generated_ids:')
[ -n "$s_ids" ] || fail "no generated_ids line from the sampled cuda run"
[ "$s_ids" = "$(echo "$s_eager" | grep '^generated_ids:')" ] || fail "sampled: graphs '$s_ids' != eager: $s_eager"
[ "$s_ids" = "$(echo "$s_cpu" | grep '^generated_ids:')" ] || fail "sampled: cuda '$s_ids' != cpu: $s_cpu"
echo "$s_gpu" | grep -q '^cuda graphs: on, 11 of 11 decode steps replayed' || fail "sampled: graphs not used: $s_gpu"

# JSON output says whether graphs were used and how much the arenas grew.
json=$("$bin" "${common[@]}" --device cuda --output-format json 2>&1) || fail "json: $json"
echo "$json" | grep -q '"cuda_graphs":true' || fail "json lacks cuda_graphs:true: $json"
echo "$json" | grep -q '"graph_replayed_steps":11' || fail "json lacks graph_replayed_steps:11: $json"
echo "$json" | grep -q '"arena_growths":0' || fail "json lacks arena_growths:0: $json"

# A cap below the model's needs: refused before loading, exit 2, one line with the numbers.
small=$("$bin" "${common[@]}" --device cuda --gpu-memory 0.00001 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "--gpu-memory 0.00001 exited $rc, want 2: $small"
[ "$(echo "$small" | wc -l)" -eq 1 ] || fail "refusal is not one line: $small"
echo "$small" | grep -qE 'does not fit in GPU memory: needs [0-9.]+ GiB .* allowed by --gpu-memory' ||
  fail "refusal lacks needed/available: $small"
echo "$small"
echo "PASS: cuda ids (graphs and --eager) == cpu ids, greedy ($gpu_ids) and sampled ($s_ids)"
