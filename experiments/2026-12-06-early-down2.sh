#!/usr/bin/env bash
# Second call on build-run/s54/ed (see 2026-12-06-early-down.sh): the ring's early down at T 1..4
# (and EP8 to T 12) under uniform / zipf1 / hot8 routing, each A/B twice with the sides swapped
# (B/A > 1 in "on-off": early down faster; in "off-on" below 1), memset and read flush.
set -u
D=${D:-build-run/s54/ed}
LOG=ed2
source "$(dirname "$0")/device-run.sh"  # $L, run
R="--routing uniform,zipf1,hot8"
for fl in memset read; do
  for rep in 1 2; do
    TMO=60 run "on-off-$fl-$rep" $D/moe_bench --flush $fl --fmt nvfp4,fp8,bf16 --shape glm5,glm5-tp8,glm5-ep8 $R --tokens 1,2,3,4 --iters 60 --wip-early-down 1 --ab "--wip-early-down 0"
    TMO=60 run "off-on-$fl-$rep" $D/moe_bench --flush $fl --fmt nvfp4,fp8,bf16 --shape glm5,glm5-tp8,glm5-ep8 $R --tokens 1,2,3,4 --iters 60 --wip-early-down 0 --ab "--wip-early-down 1"
  done
done
TMO=60 run ep8-on-off $D/moe_bench --fmt nvfp4,bf16 --shape glm5-ep8,dsv3 --tokens 5,6,8,10,12 --iters 60 --wip-early-down 1 --ab "--wip-early-down 0"
echo "== done $(date +%T)" >>"$L"
