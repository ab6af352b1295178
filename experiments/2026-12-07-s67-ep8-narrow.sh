#!/usr/bin/env bash
# Session 67 (H100, after -s66-next.sh's H100 branch on a warm machine; needs its build-gpu/):
# the NARROW instance on EP8 past the rule's 192 per expert (session 65-67: EP8 gains at 259-292
# per expert where unsharded glm5 / dsv3 lose): interleaved A/B at T 6144..24576 (192..776 per
# local expert) for glm5-ep8 / dsv3-ep8 and TP8 T 8192, sustained blocks both orders at T 12288 /
# 16384 (glm5-ep8), `--phases 1` narrow 0 / 1 at T 16384. Logs: $OUT/ep8.log.
set -u
LOG=ep8
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_build
[ -x build-gpu/bin/moe_bench ] || gpu_build moe_bench || exit 1
P=build-gpu/bin/moe_bench
TMO=120 run interleaved $P --fmt fp8 --shape glm5-ep8,dsv3-ep8 \
  --tokens 6144,8192,10240,12288,16384,24576 --iters 10 --ab "--narrow 1"
TMO=40 run interleaved-tp8 $P --fmt fp8 --shape glm5-tp8 --tokens 8192,16384 --iters 10 \
  --ab "--narrow 1"
F="--fmt fp8 --shape glm5-ep8 --tokens 12288,16384 --iters 10 --sustain-ms 800 --ab-blocks 4"
TMO=60 run on-off $P $F --narrow 1 --ab "--narrow 0"
TMO=60 run off-on $P $F --ab "--narrow 1"
for n in 0 1; do
  TMO=30 TAIL=40 run "phases-narrow$n" $P --phases 1 --narrow $n --fmt fp8 \
    --shape glm5-ep8,dsv3-ep8 --tokens 16384 --iters 10
done
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
