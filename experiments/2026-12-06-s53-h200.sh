#!/usr/bin/env bash
# Session 53, on an H200 only (exits at once on anything else; carry build-run/s53/head: db5ff5f's
# moe_bench built here, scripts/stage-wip.sh s53/head "" db5ff5f moe_bench; or D=<a later staged
# build> for the clean-flush coverage too). Sessions 51-53's
# defaults were set on an H100: the NVFP4 hybrid's split and the full launch's split against what
# they replaced (h200-questions.sh's nvfp4 phase), sibling_defer against --defer 0, and NVFP4 /
# FP8 decode coverage for the targets (% of 4.8 TB/s). Log: $OUT/h200.log.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
D=${D:-build-run/s53/head}
LOG=h200
source "$(dirname "$0")/device-run.sh"  # $L, run
R="--routing uniform,zipf1,zipf1.5,hot8"
OLD="--f4p2-big 1 --f4p2-split 0 --f4p2-split-share 0"
TMO=90 run hybrid-below-512 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 192,256,384,448 --ab "--hybrid-min 48 $OLD"
TMO=60 run hybrid-from-512 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 512,576 --ab "--hybrid-min 32 $OLD"
TMO=90 run full-split $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 640,1024,1536 --ab "--f4p2-split 0"
TMO=60 run defer-nvfp4 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 192,256,384,512 --ab "--defer 0"
TMO=60 run defer-fp8 $D/moe_bench --fmt fp8,bf16 --shape glm5-ep8,glm5-tp8 $R --tokens 64,256,512 --ab "--defer 0"
TMO=90 run coverage $D/moe_bench --fmt nvfp4,fp8 --shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1,2,4,8,16,32,64,128,256 --iters 20
# (with build-run/s53/flush or later: the same with the clean flush, docs/perf.md session 53)
if $D/moe_bench --flush read --shape glm5 --fmt nvfp4 --tokens 1 --iters 3 >/dev/null 2>&1; then
  TMO=90 run coverage-read $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 --shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1,2,4,8,16,32,64,128,256 --iters 20
fi
echo "== done $(date +%T)" >>"$L"
