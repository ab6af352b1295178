#!/usr/bin/env bash
# The next session's first call (carry [".deps"]; ~350 s, ~550 s on an H200): scripts/gpu-test.sh
# on the tree (432409b, the stream-K fix-up's batched loads, has not run on a GPU), then (~30 s)
# the NVFP4 ring at T 1..4 with 12 warps per SM (the heuristic's, set on the H200 in session 36)
# against 16 (--ctas 4), alternated 3 times (session 54's ncu: glm5 NVFP4 T 1's GEMMs run 12 per
# SM with their SMs idle 14-20% of the time; T 8's 16 reach 84-88% of DRAM peak), then on an H200
# only experiments/2026-12-06-s54-h200.sh with the device build's moe_bench (its first 200 s).
set -u
LOG=first
source "$(dirname "$0")/device-run.sh"  # $o, $L, gpu_test
gpu_test
A="--flush read --fmt nvfp4 --shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1,2,3,4 --iters 40"
for i in 1 2 3; do
  TMO=30 run "ctas-heuristic-$i" build-gpu/bin/moe_bench $A
  TMO=30 run "ctas-4-$i" build-gpu/bin/moe_bench $A --ctas 4 --warps 4
done
echo "== done $(date +%T)" >>"$L"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  D=build-gpu/bin timeout 200 bash "$(dirname "$0")/2026-12-06-s54-h200.sh"
  echo "h200 rc=$?" >>"$o/summary.txt"
fi
