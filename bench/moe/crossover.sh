#!/usr/bin/env bash
# Where the warpgroup-MMA launch overtakes the streaming one on this GPU (the thresholds of
# moe_heuristic_config, src/backends/cuda/moe_config/moe_config.cc): moe_bench with the heuristic's
# configuration (BASE=2: the streaming one) and with `--wg 1`, alternated ROUNDS times, each case
# held under load (--sustain-ms) before it is timed, then per case the median of each and wg /
# base (< 1: the warpgroup-MMA launch is faster). Separate runs, not interleaved replays: the two launches have
# different configurations, which `--ab` cannot compare.
# Usage: bench/moe/crossover.sh MOE_BENCH [moe_bench flags: --shape, --fmt, --tokens, --routing]
#   e.g. bench/moe/crossover.sh build-gpu/bin/moe_bench --shape glm5-tp8 --fmt fp8 --tokens 128,256,384
# Env: ROUNDS (2), SUSTAIN_MS (600), ITERS (30), OUT (the JSON lines go to $OUT/crossover-*.jsonl;
# default a temporary folder), BASE (0: the heuristic's configuration; 2: the streaming one,
# moe_bench --wg 2, for cases where the heuristic already takes a tile GEMM).
set -euo pipefail
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 MOE_BENCH [moe_bench flags]  (MOE_BENCH: an executable moe_bench)" >&2
  exit 2
fi
bin=$1
shift
rounds=${ROUNDS:-2}
base=${BASE:-0}
case "$base" in 0 | 2) ;; *) echo "BASE is 0 (the heuristic's) or 2 (streaming), not $base" >&2; exit 2 ;; esac
dir=${OUT:-$(mktemp -d)}
mkdir -p "$dir"
for r in $(seq 1 "$rounds"); do
  for slot in 0 1; do  # the baseline (--wg $base), then the warpgroup-MMA launch (--wg 1)
    wg=$([ "$slot" = 0 ] && echo "$base" || echo 1)
    "$bin" "$@" --wg "$wg" --sustain-ms "${SUSTAIN_MS:-600}" --iters "${ITERS:-30}" \
      --json "$dir/crossover-$r-$slot.jsonl" >"$dir/crossover-$r-$slot.log" 2>&1 ||
      { tail -n 5 "$dir/crossover-$r-$slot.log" >&2; exit 1; }
  done
done
python3 - "$dir" "$rounds" "$base" <<'EOF'
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
runs = {}
for r in range(1, rounds + 1):
    for wg in (0, 1):
        for line in open(f"{d}/crossover-{r}-{wg}.jsonl"):
            j = json.loads(line)
            key = (j["shape"], j["routing"], j["fmt"], j["T"])
            runs.setdefault(key, ({}, [], []))
            runs[key][0].update(rows=j["rows"], E=j["E"], K=j["K"], ep=j["E"] < j["E_global"])
            runs[key][1 + wg].append(j["us"])
base = "the heuristic" if sys.argv[3] == "0" else "streaming, --wg 2"
print(f"shape routing fmt T tokens/expert base_us wg_us wg/base  (base: {base})")
for (shape, routing, fmt, T), (m, h, w) in runs.items():
    if not h or not w:
        continue
    per = m["rows"] * (1 if m["ep"] else m["K"]) / m["E"]  # EP: a local slot per row
    hu, wu = statistics.median(h), statistics.median(w)
    print(f"{shape} {routing} {fmt} {T} {per:.1f} {hu:.1f} {wu:.1f} {wu / hu:.3f}")
EOF
