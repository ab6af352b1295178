#!/usr/bin/env bash
# On an H200 only (exits at once on anything else; ~200 s). D: a moe_bench of 5508ac6 or later,
# default build-gpu/bin (gpu-test.sh's device build; or one built here, scripts/stage-wip.sh
# s54/bench "" HEAD moe_bench, carry build-run/s54/bench, D=build-run/s54/bench). Sessions 43-54's
# defaults were set on an H100: early down against its off switch, decode coverage for the targets
# (% of 4.8 TB/s) with the read flush, sibling_defer against --defer 0, the NVFP4 hybrid's split
# and the full launch's split (h200-questions.sh's nvfp4 cells), coverage with the memset flush.
# Log: $OUT/h200.log.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
D=${D:-build-gpu/bin}
LOG=h200
source "$(dirname "$0")/device-run.sh"  # $L, run
R="--routing uniform,zipf1,zipf1.5,hot8"
OLD="--f4p2-big 1 --f4p2-split 0 --f4p2-split-share 0"
TMO=40 run early-down $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 --shape glm5,glm5-tp8,glm5-ep8 --routing uniform,zipf1 --tokens 1,2 --iters 60 --ab "--early-down 0"
TMO=90 run coverage-read $D/moe_bench --flush read --fmt nvfp4,fp8,bf16 --shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1,2,4,8,16,32,64,128,256 --iters 20
TMO=60 run defer-nvfp4 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 192,256,384,512 --ab "--defer 0"
TMO=90 run hybrid-below-512 $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 192,256,384,448 --ab "--hybrid-min 48 $OLD"
TMO=90 run full-split $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 $R --tokens 640,1024,1536 --ab "--f4p2-split 0"
TMO=90 run coverage-memset $D/moe_bench --fmt nvfp4,fp8 --shape glm5,dsv3,glm5-tp8,glm5-ep8 --tokens 1,4,8,64,256 --iters 20
echo "== done $(date +%T)" >>"$L"
