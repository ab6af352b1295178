#!/usr/bin/env bash
# Session 64 (carry ["build-run/s64/rs"]; ~250 s): the FP8 GEMMs' activations from registers
# (GroupedLaunch::wip_rs, experiments/2026-12-07-register-a.patch; build-run/s64/rs = 51e9bbd +
# that patch, built here). FP8 prefill runs at the 700 W cap (session 63): does reading the
# tokens' fragments from shared memory once per k-block (ldmatrix) instead of once per quarter
# (40 instead of 64 KB per warpgroup and k-block) buy clock?
# 1. bench/wgmma: the register-A patterns checked against their descriptor forms (same sums),
#    then every pattern; then `power` (~2 s per pattern, twice in turn) with nvidia-smi beside it.
# 2. WipRegisterActivationsAreBitIdentical.
# 3. The layer in sustained blocks (both orders) and interleaved, and --phases.
# Logs: $OUT/rs.log, $OUT/smi.csv; experiments/abtab.py rs.log.
set -u
LOG=rs
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
B=build-run/s64/rs
TMO=60 TAIL=40 run wgmma $B/wgmma_bench 20000
TMO=300 TAIL=40 run test env MOE_REQUIRE_GPU=1 $B/moe_grouped_tests \
  --gtest_filter='MoeGroupedTest.WipRegisterActivationsAreBitIdentical'
nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_throttle_reasons.active \
  --format=csv -lms 250 >"$o/smi.csv" 2>&1 &
smi=$!
TMO=120 TAIL=40 run wgmma-power $B/wgmma_bench 2000000 power
F="--fmt fp8 --shape glm5,dsv3 --tokens 4096,8192 --iters 10 --sustain-ms 800 --ab-blocks 4"
TMO=60 run on-off-rs $B/moe_bench $F --ab "--wip-rs 1"
TMO=60 run off-on-rs $B/moe_bench $F --wip-rs 1 --ab "--wip-rs 0"
kill $smi
TMO=60 run interleaved-rs $B/moe_bench --fmt fp8 --shape glm5,dsv3,glm5-ep8,glm5-tp8 \
  --tokens 1024,4096,8192 --iters 10 --ab "--wip-rs 1"
TMO=30 TAIL=30 run phases $B/moe_bench --phases 1 --fmt fp8 --shape glm5,dsv3 --tokens 8192 \
  --iters 10 --wip-rs 1
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
