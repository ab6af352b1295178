#!/usr/bin/env bash
# (Landed in session 49 as 17007c5: the patch applies on 82f5008..9a5ab00 only; for the landed
# form see experiments/2026-12-05-f4p2-landed.sh.)
# experiments/2026-12-05-f4-two-producers.patch on the GPU machine (session 48 prepared it; the
# device tool: carry [".deps"] from scripts/gpu-deps.sh). Phases, one device call each (each
# under 600 s): `bash experiments/2026-12-05-f4-two-producers.sh test` (applies the patch to the
# device copy of the tree, builds moe_bench + moe_grouped_tests, the bit-identity test, memcheck,
# racecheck), then `... ab` (interleaved A/B against --wg 1, and against the heuristic,
# whose hybrid then takes its big tiles on P2), then `... more`
# (zipf1, sustained blocks, narrow F4 against full), then `... probe` (the P2 kernel without its
# dequantization / wgmma: what bounds it), `... cross` (the heuristic against the full launch on
# P2 by routing and T, P2 at the upper end, the hybrid's big tiles on P2). Log: $OUT/p2.log.
set -u
o=${OUT:-/tmp/out}; mkdir -p $o; L=$o/p2.log
source scripts/gpu-env.sh; moe_unpack_deps || exit 2
git apply --check experiments/2026-12-05-f4-two-producers.patch 2>/dev/null && git apply experiments/2026-12-05-f4-two-producers.patch ||
  git apply --reverse --check experiments/2026-12-05-f4-two-producers.patch || { echo "patch failed" >> $L; exit 3; }
if [ ! -f build-gpu/build.ninja ]; then
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DGTest_DIR="$prefix/usr/lib/$arch/cmake/GTest" \
  -Dnlohmann_json_DIR="$prefix/usr/share/cmake/nlohmann_json" \
  -DCMAKE_CXX_FLAGS="-isystem $prefix/usr/include" -DCMAKE_CUDA_FLAGS="-isystem $prefix/usr/include" \
  "${pkg_config_args[@]}" > $o/cfg.log 2>&1
fi
echo "== build $(date +%T)" >> $L
cmake --build build-gpu -j16 --target moe_bench moe_grouped_tests > $o/build.log 2>&1 || { grep -B2 -A6 error $o/build.log | head -60 >> $L; exit 4; }
T=build-gpu/bin/moe_grouped_tests; H=build-gpu/bin/moe_bench
run() { local tag=$1; shift; echo "== $tag $(date +%T): $*" >> $L
  timeout ${TMO:-90} "$@" 2>&1 | grep -v "^device\|^shape" | tail -n ${TAIL:-80} >> $L; }
phase=${1:-all}
if [ $phase = test ] || [ $phase = all ]; then
TAIL=12 run test $T --gtest_filter='*WipF4TwoProducers*:*F4ActivationsByTma*'
TAIL=6 TMO=150 run memcheck compute-sanitizer --tool memcheck --error-exitcode 9 $T --gtest_filter='*WipF4TwoProducers*'
TAIL=6 TMO=150 run racecheck compute-sanitizer --tool racecheck --error-exitcode 9 $T --gtest_filter='*WipF4TwoProducers*'
fi
if [ $phase = ab ] || [ $phase = all ]; then
TMO=240 run ab $H --fmt nvfp4 --shape glm5,dsv3,glm5-ep8,glm5-tp8 --tokens 256,512,768,1024,1536,2048 --wg 1 --ab "--wip-f4p2 1"
# the heuristic's launch (A: the heuristic alone; B: where it is the hybrid with F4 big tiles,
# glm5 / dsv3 from T 512, EP8 below its full launch, those tiles on P2; elsewhere B = A)
TMO=240 run ab-heur $H --fmt nvfp4 --shape glm5,dsv3,glm5-ep8,glm5-tp8 --tokens 256,512,768,1024,1280,1536,2048 --ab "--wip-f4p2 1"
fi
if [ $phase = more ] || [ $phase = all ]; then
# main's narrow F4 instances spill (consumers at 216: gate_up 232 / 356 bytes): against the full one
TMO=150 run ab-narrow $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --tokens 512,1024,2048 --wg 1 --ab "--narrow 0"
run ab-zipf-heur $H --fmt nvfp4 --shape glm5,glm5-ep8 --routing zipf1 --tokens 512,1024,2048 --ab "--wip-f4p2 1"
run ab-zipf $H --fmt nvfp4 --shape glm5,glm5-ep8 --routing zipf1 --tokens 512,1024,2048 --wg 1 --ab "--wip-f4p2 1"
TMO=200 run sus $H --fmt nvfp4 --shape glm5,glm5-ep8 --tokens 768,1024,1536 --wg 1 --ab "--wip-f4p2 1" --sustain-ms 800 --ab-blocks 3
fi
if [ $phase = probe ] || [ $phase = all ]; then
# timing probes of the P2 kernel (wrong results): B without the dequantization (1), without the
# consumer's wgmma (2), without either (3: the copy structure alone)
for pr in 1 2 3; do
  TMO=150 run probe-$pr $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --tokens 768,1024,1536 --wg 1 --wip-f4p2 1 --ab "--wip-f4p2-probe $pr"
done
fi
if [ $phase = cross ] || [ $phase = all ]; then
# where the full launch on P2 overtakes the heuristic (A: the heuristic; B: every expert on the
# warpgroup-MMA launch, P2), by routing; then P2 against the one-producer kernel at the upper
# end (where experts take a second 64-token tile); then the hybrid's big tiles on P2 under hot /
# skewed routing at small T (B/A of the heuristic with and without P2 big tiles)
for r in uniform zipf1 hot8; do
  TMO=120 TAIL=200 run cross-$r $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --routing $r --tokens 192,256,320,384,448,512,768,1024 --ab "--wg 1 --wip-f4p2 1"
done
TMO=120 TAIL=200 run cross-dsv3 $H --fmt nvfp4 --shape dsv3 --routing uniform,zipf1 --tokens 256,384,512,1024 --ab "--wg 1 --wip-f4p2 1"
TMO=120 TAIL=200 run upper $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --routing uniform,zipf1 --tokens 1536,1792,2048,2560 --wg 1 --ab "--wip-f4p2 1"
TMO=120 TAIL=200 run big $H --fmt nvfp4 --shape glm5,glm5-ep8,glm5-tp8 --routing hot8,zipf1 --tokens 48,64,128,256,384 --ab "--wip-f4p2 1"
fi
echo "== done $(date +%T)" >> $L
