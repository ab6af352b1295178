#!/usr/bin/env bash
# Session 66 (carry [".deps"]; exec'd by -s66-next.sh on an H200, or run alone). Issue 5's table
# and its verdicts on the issue's GPU (last measured there in session 41): bench/moe/run.sh with
# MOE_BENCH_PRESET=issue5 (since session 66 glm5 / dsv3 T 1..256 included), read flush,
# --phases 1, no parity tests (gpu-test.sh covers them; with them run.sh outgrew the call in
# session 65's form), torch's grouped GEMMs on the same routing, then bench/moe/targets.py
# ($OUT/table/targets.md). Then, while the call's 600 s hold it, torch's whole layer
# (moe_vs_torch.py --layer full) on the prefill rows.
# (Session 68: MOE_TABLE_TMO, run.sh's timeout, default 500 s; MOE_NO_FULL=1 skips torch's whole
# layer, for a caller that used part of the call's 600 s before.)
# Logs: $OUT/h200.log, $OUT/run.out, $OUT/table/ (summary.txt, bench.log, ours.jsonl,
# torch.log, torch.jsonl, table.md, targets.md), $OUT/full/.
set -u
LOG=h200
source "$(dirname "$0")/device-run.sh"  # $o, $L, run
# MOE_PREBUILT (session 67): a moe_bench built on the build machine and carried (saves the
# device build, ~70 s), e.g. MOE_PREBUILT=build-run/s67 with carry [".deps", "build-run/s67/bin"].
[ -n "${MOE_PREBUILT:-}" ] && [ ! -x "$MOE_PREBUILT/bin/moe_bench" ] && unset MOE_PREBUILT
OUT=$o/table MOE_SKIP_TESTS=1 MOE_BENCH_PRESET=issue5 MOE_BENCH_FLUSH=read MOE_BENCH_PHASES=1 \
  MOE_TORCH_TIMEOUT=200 timeout "${MOE_TABLE_TMO:-500}" bash bench/moe/run.sh >"$o/run.out" 2>&1
echo "== table rc=$? $(date +%T) (${SECONDS}s)" >>"$L"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
if [ ! -s "$o/table/targets.md" ] && [ -s "$o/table/ours.jsonl" ]; then  # run.sh cut short
  tj=()
  [ -s "$o/table/torch.jsonl" ] && tj=(--torch "$o/table/torch.jsonl")
  python3 bench/moe/targets.py --ours "$o/table/ours.jsonl" "${tj[@]}" --gpu "$gpu" \
    --md "$o/table/targets.md" >/dev/null 2>>"$L"
fi
tail -n 40 "$o/table/targets.md" >>"$L" 2>/dev/null
if [ -z "${MOE_NO_FULL:-}" ] && [ "$SECONDS" -lt 480 ] && [ -s "$o/table/ours.jsonl" ]; then
  mkdir -p "$o/full"
  grep -E '"T": ?(4096|8192),' "$o/table/ours.jsonl" | grep -E '"shape": ?"(glm5|dsv3)"' \
    >"$o/full/ours.jsonl"
  timeout $((585 - SECONDS)) python3 bench/moe/moe_vs_torch.py --routing-dir /tmp/moe-routing \
    --ours "$o/full/ours.jsonl" --layer full --flush read --json "$o/full/torch.jsonl" \
    --md "$o/full/table.md" >"$o/full/torch.log" 2>&1
  python3 bench/moe/targets.py --ours "$o/full/ours.jsonl" --torch "$o/full/torch.jsonl" \
    --gpu "$gpu" --md "$o/full/targets.md" >/dev/null 2>&1
  echo "== full layer $(date +%T) (${SECONDS}s)" >>"$L"
  grep "layer vs torch" "$o/full/targets.md" >>"$L" 2>/dev/null
fi
echo "== done $(date +%T) (${SECONDS}s)" >>"$L"
