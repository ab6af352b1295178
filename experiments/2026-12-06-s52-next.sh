#!/usr/bin/env bash
# The next session's first device call (~320 s; carry ["build-run/s51pack"]: the two staged builds,
# 68 MB, are over the tool's 64 MiB, so they travel packed: `tar czf build-run/s51pack/bins.tar.gz
# build-run/s51/p2n build-run/s51/mix` (28 MB), after staging them if the checkout lost them:
# scripts/stage-wip.sh s51/p2n experiments/2026-12-06-p2-two-consumers.patch 59015e4 moe_bench
# moe_grouped_tests; scripts/stage-wip.sh s51/mix experiments/2026-12-06-f4p2-split-mix.patch
# 67fdd9c moe_bench moe_grouped_tests). 0: experiments/2026-12-06-f4p2-split-mix.sh (the split by
# expert in one launch; log mix.log). 1: experiments/2026-12-06-p2-two-consumers.sh (P2 with two
# consumer warpgroups, raw stages by bulk copies; log p2n.log). 2: below 20 tokens per expert
# unsharded the heuristic streams every expert of < 32 tokens (glm5 uniform T 512 2862 us against
# 2524 on the full launch, but zipf1 / zipf1.5 13-18% slower there on it, session 51): the hybrid
# with a lower per-expert threshold and its big tiles always on P2 (`--hybrid-min N --f4p2-big 2`)
# against the heuristic, which may take the best of both (log hybrid-p2.log).
set -u
[ -f build-run/s51pack/bins.tar.gz ] && tar xzf build-run/s51pack/bins.tar.gz
bash "$(dirname "$0")/2026-12-06-f4p2-split-mix.sh"
bash "$(dirname "$0")/2026-12-06-p2-two-consumers.sh"
D=build-run/s51/p2n
LOG=hybrid-p2
source "$(dirname "$0")/device-run.sh"  # $L, run
for n in 12 16 24; do
  TMO=60 run "hybrid-$n" $D/moe_bench --fmt nvfp4 --shape glm5,dsv3 --routing uniform,zipf1,zipf1.5,hot8 --tokens 256,384,512 --ab "--hybrid-min $n --f4p2-big 2"
done
echo "== done $(date +%T)" >>"$L"
