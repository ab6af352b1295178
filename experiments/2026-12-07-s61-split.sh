#!/usr/bin/env bash
# Session 61 (carry ["build-run/s61/new"]; ~150 s on an H100): where prefill's time goes per
# kernel (ncu gpu__time_duration of each launch of one layer: grouping, gate_up, down, combine)
# for BF16 / FP8 at glm5 and TP8 T 8192, and torch's grouped GEMMs on the same rows (BF16 / FP8
# TP8 and glm5 T 8192; bench/moe/moe_vs_torch.py). Log: $OUT/split.log.
set -u
LOG=split
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
D=build-run/s61/new
for s in glm5-tp8 glm5; do
  for f in bf16 fp8; do
    TMO=90 TAIL=40 run "ncu-$s-$f" ncu --clock-control none --kernel-name 'regex:moe_(wgmma|group|quant|combine|gemm|tile)' \
      --launch-skip 0 --launch-count 8 --metrics gpu__time_duration.sum \
      $D/moe_bench --fmt $f --shape $s --tokens 8192 --iters 3
  done
done
mkdir -p "$o/rd"
for f in bf16 fp8; do
  TMO=60 TAIL=10 run "ours-$f" $D/moe_bench --fmt $f --shape glm5-tp8,glm5 --tokens 8192 --iters 10 \
    --routing-dir "$o/rd" --json "$o/ours-$f.jsonl"
  TMO=120 TAIL=20 run "torch-$f" python3 bench/moe/moe_vs_torch.py --routing-dir "$o/rd" \
    --ours "$o/ours-$f.jsonl" --shape glm5-tp8,glm5 --iters 10
done
rm -rf "$o/rd"
echo "== done $(date +%T)" >>"$L"
