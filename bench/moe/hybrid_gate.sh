#!/usr/bin/env bash
# GPU-machine check of the hybrid's gate (GroupedLaunch::hybrid_min_bytes): the same moe_bench
# rows as they run by default (the gate), with --hybrid-gb 0 (the hybrid whenever an expert
# reaches GroupedLaunch::wgmma_min_tokens, the behaviour before the gate) and with
# --hybrid-min 0 (no hybrid), then one markdown table: per row the three times, the gate's
# decision (moe_bench's column big: the hybrid's 128-token tiles, 0 = every expert streamed) and
# the gate's time over the better of the other two. Logs and table.md under $OUT.
# Env: MOE_BENCH_BIN (default build-gpu/bin/moe_bench; a binary built on the build machine with
# the cuda-release preset runs too), MOE_GATE_SETS lines "shapes routings tokens fmts" (default:
# GLM-5 / TP8 / EP8 at T 64..1024 under uniform, Zipf and hot8 routing, every format),
# MOE_GATE_ITERS (10).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
out=${OUT:-$root/build-gpu/logs}
mkdir -p "$out"
bin=${MOE_BENCH_BIN:-build-gpu/bin/moe_bench}
[ -x "$bin" ] || { echo "hybrid_gate.sh: no moe_bench at $bin (set MOE_BENCH_BIN)" >&2; exit 2; }
sets=${MOE_GATE_SETS:-$'glm5,glm5-tp8,glm5-ep8 uniform,zipf1,zipf1.5,hot8 64,128,256,512,1024 nvfp4\nglm5,glm5-tp8,glm5-ep8 uniform,zipf1,hot8 64,256,1024 bf16,fp8'}
iters=${MOE_GATE_ITERS:-10}
: >"$out/gate.log"
for mode in gate before none; do
  case $mode in
    gate) flags=() ;;
    before) flags=(--hybrid-gb 0) ;;
    none) flags=(--hybrid-min 0) ;;
  esac
  while read -r shapes routings tokens fmts; do
    [ -z "${shapes:-}" ] && continue
    echo "== $mode $shapes $routings $tokens $fmts" >>"$out/gate.log"
    timeout 300 "$bin" --shape "$shapes" --routing "$routings" --tokens "$tokens" --fmt "$fmts" \
      --iters "$iters" "${flags[@]}" >>"$out/gate.log" 2>&1 ||
      echo "hybrid_gate.sh: moe_bench failed ($mode $shapes $fmts), see gate.log" >&2
  done <<<"$sets"
done
# Rows: shape routing fmt T rows uniq nb pipe time_us GB/s % TFLOP/s heur_us cfg big.
awk '
  /^== /{mode = $2; next}
  NF >= 15 && $4 ~ /^[0-9]+$/ {
    k = $1 " " $3 " " $2 " " $4; t[k, mode] = $9
    if (mode == "gate") big[k] = $15
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
  }
  END {
    print "| shape fmt routing T | gate | before (--hybrid-gb 0) | none (--hybrid-min 0) | big | gate / better |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= n; ++i) {
      k = order[i]; b = t[k, "before"]; o = t[k, "none"]
      best = (b != "" && (o == "" || b + 0 < o + 0)) ? b : o
      r = (best + 0 > 0 && t[k, "gate"] != "") ? sprintf("%.3f", t[k, "gate"] / best) : "-"
      printf "| %s | %s | %s | %s | %s | %s |\n", k, t[k, "gate"], b, o, big[k], r
    }
  }' "$out/gate.log" >"$out/table.md"
cat "$out/table.md"
