#!/usr/bin/env bash
# The next session's first call (carry [".deps"]; ~480 s on an H100): scripts/gpu-test.sh on the
# tree (c90a46d's narrow rule, FP8 up to 128 tokens per expert, has not run it), then on its
# device-built moe_bench the NARROW instance past 128 per expert: T 5120 / 6144 (160 / 192 per
# expert; 6144 was 3% faster in sustained blocks, not measured interleaved) in sustained blocks,
# both orders, and interleaved, with T 4096 as the check that the default now takes it (level).
# "on-off-narrow": the variant on the command line (A), off in --ab (B): B/A = speed-up.
# Logs: $OUT/gpu-test.out, summary.txt, gpu-test-logs.tgz, $OUT/next.log (experiments/abtab.py).
set -u
LOG=next
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
gpu_test  # (device-run.sh: $OUT/gpu-test.out, summary.txt)
P=build-gpu/bin/moe_bench  # (gpu-test.sh's build)
S="--iters 10 --sustain-ms 800 --ab-blocks 4"
F="--fmt fp8 --shape glm5,dsv3 --tokens 5120,6144 $S"
TMO=60 run on-off-narrow $P $F --narrow 1 --ab "--narrow 0"
TMO=60 run off-on-narrow $P $F --ab "--narrow 1"
TMO=40 run interleaved-narrow $P --fmt fp8 --shape glm5,dsv3,glm5-ep8 --tokens 4096,5120,6144 \
  --iters 10 --ab "--narrow 1"
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
