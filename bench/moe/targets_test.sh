#!/usr/bin/env bash
# CPU test of bench/moe/targets.py: a run's rows written here (byte counts from moe_bench's model,
# times chosen to land each target on a known side of its bound) -> the verdicts it must print;
# then bad inputs, each refused with exit status 2 and a message naming the problem.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Rows: name pct-of-4.8-TB/s (or us=N) per cell; bytes = the touched experts' weights + the
# activations as moe_bench counts them (3 D I bytes per weight and expert, 2 for BF16).
python3 - "$tmp/ours.jsonl" <<'EOF' || { echo "FAIL: cannot write the fixture"; exit 1; }
import json, sys
SH = {"glm5": (6144, 2048, 8), "dsv3": (7168, 2048, 8), "glm5-tp8": (6144, 256, 8),
      "glm5-ep8": (6144, 2048, 1)}
WB = {"bf16": 2.0, "fp8": 1.0, "nvfp4": 0.5625}
def row(shape, fmt, T, uniq, pct=None, us=None, routing="uniform", gemm_tf=None, heur_pct=None):
    D, I, K = SH[shape]
    b = uniq * 3 * D * I * WB[fmt] + 2 * T * D * 2
    flop = 2.0 * T * K * 3 * D * I
    if us is None:
        us = b / (pct / 100 * 4800.0) / 1e3
    r = {"shape": shape, "routing": routing, "fmt": fmt, "T": T, "rows": T, "K": K,
         "unique": uniq, "us": us, "bytes": b, "flop": flop, "gbs": b / (us * 1e3)}
    if heur_pct:  # --sweep: us is the fastest candidate's, heuristic_us the engine's launch
        r["heuristic_us"] = b / (heur_pct / 100 * 4800.0) / 1e3
    if gemm_tf:
        r["gemm_us"] = flop / (gemm_tf * 1e6)
    return r
rows = [
    row("glm5", "bf16", 8, 57, 94.0), row("dsv3", "bf16", 256, 256, 95.5),  # BF16 T 8..256 met
    row("glm5", "bf16", 64, 217, 99.0, heur_pct=93.2),  # swept: the heuristic's time counts
    row("glm5", "fp8", 8, 57, 95.0), row("glm5", "fp8", 64, 217, 91.9),     # FP8 not met
    row("glm5", "nvfp4", 256, 256, us=1200.0),                               # <= 1248 us: met
    row("glm5", "bf16", 1, 8, 86.0), row("dsv3", "bf16", 4, 32, 85.2),       # T 1..4 BF16 met
    row("glm5", "fp8", 2, 16, 84.9),                                         # T 1..4 FP8 not
    row("glm5-tp8", "fp8", 64, 217, 80.0), row("glm5-ep8", "fp8", 128, 32, 92.0),
    row("glm5-tp8", "bf16", 64, 217, 91.0), row("glm5-ep8", "bf16", 256, 32, 90.5),
    row("glm5-tp8", "bf16", 8, 57, us=150.0),  # 1.5x Triton needs 114 us: beyond the memory
    row("glm5-tp8", "fp8", 1, 8, us=50.0),     # <= 54 us: met
    row("glm5", "fp8", 8192, 256, us=6987.0, gemm_tf=850.0),
    row("glm5", "nvfp4", 8192, 256, us=9139.0, gemm_tf=580.0),
    row("dsv3", "fp8", 4096, 256, us=4900.0, gemm_tf=910.0),
    row("glm5", "fp8", 64, 180, 60.0, routing="zipf1"),  # skewed: reported against uniform's
]
with open(sys.argv[1], "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
EOF
cat >"$tmp/torch.jsonl" <<'EOF'
{"shape": "glm5", "routing": "uniform", "T": 8192, "layer": "full", "flush": "read", "bf16_us": 12559.0, "fp8_us": 8236.0}
{"shape": "dsv3", "routing": "uniform", "T": 4096, "layer": "full", "flush": "read", "bf16_us": 10000.0, "fp8_us": 7000.0}
{"shape": "glm5", "routing": "uniform", "T": 8, "layer": "full", "flush": "read"}
EOF

out=$(python3 "$here/targets.py" --ours "$tmp/ours.jsonl" --torch "$tmp/torch.jsonl" \
  --gpu "NVIDIA H100 80GB HBM3" --md "$tmp/targets.md" 2>&1) || fail "targets.py exited $?: $out"
expect() {  # expect TARGET-PREFIX VERDICT [TEXT]: the line for TARGET ends in VERDICT and has TEXT
  local line
  line=$(grep -F "| $1" <<<"$out" | head -n 1)
  [ -n "$line" ] || { fail "no line for '$1'"; return; }
  [[ "$line" == *"| $2 |" ]] || fail "'$1': expected $2, got: $line"
  [ -z "${3:-}" ] || [[ "$line" == *"$3"* ]] || fail "'$1': expected '$3' in: $line"
}
expect "unsharded T 8..256, bf16" MET "93.2% (glm5 uniform bf16 T 64)"
expect "unsharded T 8..256, fp8" "NOT MET" "91.9% (glm5 uniform fp8 T 64)"
expect "glm5 NVFP4 T 256" MET "1200 us"
expect "unsharded T 1..4, bf16" MET "85.2% (dsv3 uniform bf16 T 4)"
expect "unsharded T 1..4, fp8" "NOT MET" "84.9%"
expect "unsharded T 1..4, nvfp4" "NO DATA"
expect "sharded T 64..256, fp8" "NOT MET" "80.0% (glm5-tp8 uniform fp8 T 64)"
expect "sharded T 64..256, bf16" MET "90.5% (glm5-ep8 uniform bf16 T 256)"
expect "sharded T 1..32, bf16: 1.5x Triton" "NOT MET" "beyond the memory system"
expect "sharded T 1..32, fp8: 1.5x Triton" MET "<= 54 us"
expect "prefill T 4096 / 8192: expert GEMMs" "NOT MET" "850 TF/s (glm5 uniform fp8 T 8192)"
expect "prefill T 4096 / 8192: layer vs torch FP8 (full)" "NOT MET" \
  "1.18x (glm5 uniform fp8 T 8192)"
grep -q "indicative only" <<<"$out" || fail "an H100's run is not marked indicative"
grep -qF "| glm5 zipf1 fp8 T 64 |" <<<"$out" || fail "the skewed row is not reported"
zr=$(grep -F "| glm5 zipf1 fp8 T 64 |" <<<"$out" | awk -F'|' '{print $5}' | tr -d ' ')
# zipf1 at 60% of 4.8 TB/s with 180 experts against uniform's 91.9% with 217: time ratio
want=$(python3 -c "print(f'{(180 / 60.0) / (217 / 91.9):.2f}x')")
[ "$zr" = "$want" ] || fail "skewed row's ratio to uniform: $zr, expected $want"
cmp -s <(printf '%s\n' "$out") "$tmp/targets.md" || fail "--md differs from the printed checklist"
out2=$(python3 "$here/targets.py" --ours "$tmp/ours.jsonl" --gpu "NVIDIA H200" 2>&1)
grep -q "indicative" <<<"$out2" && fail "an H200's run is marked indicative"
grep -qF "| prefill T 4096 / 8192: layer vs torch FP8 | 0 | - (no torch rows)" <<<"$out2" &&
  grep -q "NO DATA |$" <<<"$out2" || fail "without --torch the torch target is not NO DATA"
# --peak: the bandwidth targets against another GPU's peak (an H100's 3.35 TB/s): FP8 T 64's
# 91.9% of 4.8 TB/s is 131.7% of 3.35; time bounds unchanged; the checklist says so.
out3=$(python3 "$here/targets.py" --ours "$tmp/ours.jsonl" --gpu "NVIDIA H100 80GB HBM3" \
  --peak 3350 2>&1) || fail "targets.py --peak exited $?: $out3"
line=$(grep -F "| unsharded T 8..256, fp8" <<<"$out3")
[[ "$line" == *"| MET |" && "$line" == *"131.7% (glm5 uniform fp8 T 64)"* ]] ||
  fail "--peak 3350: FP8 T 8..256 expected MET at 131.7%, got: $line"
grep -q "against 3.35 TB/s (--peak)" <<<"$out3" || fail "--peak 3350 is not said in the checklist"
grep -qF "| glm5 NVFP4 T 256 (1.25 ms; 3.5x Triton BF16, 2x Triton FP8) | 1 | 1200 us | <= 1248 us | MET |" \
  <<<"$out3" || fail "--peak changed a time bound"
grep -q "of 3.35 TB/s | / uniform" <<<"$out3" || fail "--peak: the skewed table's header"

# Bad inputs: exit status 2 and a message that says what is wrong.
refuse() {  # refuse WHAT EXPECTED-TEXT ARGS...
  local what=$1 text=$2 msg rc
  shift 2
  msg=$(python3 "$here/targets.py" "$@" 2>&1)
  rc=$?
  [ "$rc" = 2 ] || fail "$what: exit status $rc, expected 2 ($msg)"
  [[ "$msg" == *"$text"* ]] || fail "$what: message '$msg' lacks '$text'"
}
refuse "missing file" "cannot read" --ours "$tmp/none.jsonl"
refuse "a peak in TB/s" "--peak 3.35: expected a memory bandwidth in GB/s" --ours "$tmp/ours.jsonl" \
  --peak 3.35
printf '{"shape": "glm5"\n' >"$tmp/bad.jsonl"
refuse "truncated JSON" "bad.jsonl:1: not JSON" --ours "$tmp/bad.jsonl"
printf '[1, 2]\n' >"$tmp/list.jsonl"
refuse "not an object" "not a JSON object" --ours "$tmp/list.jsonl"
printf '{"shape": "glm5", "fmt": "fp8", "T": 8, "us": 10}\n' >"$tmp/short.jsonl"
refuse "missing fields" "missing bytes, flop" --ours "$tmp/short.jsonl"
printf '{"shape": "glm5", "fmt": "fp8", "T": 8, "us": "fast", "bytes": 1, "flop": 1}\n' \
  >"$tmp/str.jsonl"
refuse "a time that is not a number" "us is 'fast', not a number" --ours "$tmp/str.jsonl"
printf '{"shape": "glm5", "fmt": "fp8", "T": 8, "us": 0, "bytes": 1, "flop": 1}\n' \
  >"$tmp/zero.jsonl"
refuse "a zero time" "has time 0" --ours "$tmp/zero.jsonl"
: >"$tmp/empty.jsonl"
refuse "no rows" "has no rows" --ours "$tmp/empty.jsonl"
printf '{"T": 8}\n' >"$tmp/torch-bad.jsonl"
refuse "torch rows without shapes" "missing shape" --ours "$tmp/ours.jsonl" \
  --torch "$tmp/torch-bad.jsonl"

if [ "$fails" -gt 0 ]; then
  echo "$fails failure(s); the checklist was:"
  echo "$out"
  exit 1
fi
echo "targets.py: all checks passed"
