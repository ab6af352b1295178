#!/usr/bin/env bash
# Session 63's first call (carry [".deps", "build-run/s62/xs"]; 342 s on an H100): x_pos's copy
# by token (experiments/2026-12-07-x-pos-scatter.patch) against the gather by position on
# build-run/s62/xs's moe_bench (b568039 + the patch, the switch off there), FP8 / NVFP4 prefill
# both orders; then scripts/gpu-test.sh on the tree, where the patch is applied with
# GroupedLaunch::x_pos_scatter on by default (GateUpActivationsByPositionAreBitIdentical keeps the
# gather by position as its own case), only where the A/B says the scatter is faster (geometric
# mean of the speed-ups of both orders above 1.003; GPU_TEST=1 forces it). Logs: gpu-test.out,
# summary.txt and gpu-test-logs.tgz, which held first.log (gpu-test.sh then packed every *.log of
# $OUT; since session 63 only its own, so first.log now comes back as it is).
set -u
LOG=first
source "$(dirname "$0")/device-run.sh"  # $o, $L, run, gpu_test
P=build-run/s62/xs/bin
F="--fmt fp8,nvfp4 --shape glm5,dsv3,glm5-ep8 --tokens 4096,8192 --iters 10"
TMO=45 run ab $P/moe_bench $F --ab "--x-scatter 1"
TMO=45 run ba $P/moe_bench $F --x-scatter 1 --ab "--x-scatter 0"
python3 - "$L" >>"$L" <<'PY'
import math, re, sys
sp, tag = [], None
for line in open(sys.argv[1]):
    if line.startswith("== "):
        tag = line.split()[1]
    m = re.search(r"B/A ([\d.]+)", line)
    if m and tag in ("ab", "ba"):
        r = float(m.group(1))
        sp.append(1 / r if tag == "ab" else r)
g = math.exp(sum(map(math.log, sp)) / len(sp)) if sp else 0
print(f"scatter speed-up: geomean {g:.4f} over {len(sp)} cells")
open("/tmp/scatter_wins", "w").write("1" if g > 1.003 else "0")
PY
if [ "$(cat /tmp/scatter_wins)" = 1 ] || [ "${GPU_TEST:-0}" = 1 ]; then gpu_test; fi
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
