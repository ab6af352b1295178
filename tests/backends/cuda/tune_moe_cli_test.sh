#!/usr/bin/env bash
# `moengine tune-moe` on the GPU: a model directory whose config.json (the fixture's, with MoE
# widths the grouped kernels take: D 1024, I 256, 16 experts, top-4, one shared expert) is tuned
# for every format at T 1, 8 and 64; the cache then holds one entry per (format, T bucket) with a
# positive time and a configuration, the T 1 / 8 entries keyed by the shape with the shared
# expert folded in (E 17, K 5) and T 64 by the routed one; a second run with --tokens 256 keeps
# them and adds T <= 256 (the cache is extended, not replaced); `generate --device cuda
# --moe-tune-cache` reads the file (the fixture's own shape has no entry: the heuristic, no
# warning for this GPU) and gives the CPU's ids. Exit 77 (skipped) without a usable device,
# unless MOE_REQUIRE_GPU=1. Usage: tune_moe_cli_test.sh MOENGINE FIXTURE_DIR
set -u
bin=$1
fixture=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$fixture/config.json" "$tmp/config.json" <<'EOF' || fail "cannot write the test config"
import json, sys
c = json.load(open(sys.argv[1]))
c.update(hidden_size=1024, moe_intermediate_size=256, n_routed_experts=16, num_experts_per_tok=4,
         n_shared_experts=1, n_group=1, topk_group=1)
json.dump(c, open(sys.argv[2], "w"))
EOF

out=$("$bin" tune-moe --model-path "$tmp" --tokens 1,8,64 --fmt bf16,fp8,nvfp4 --iters 3 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "no usable GPU"; then
  [ "${MOE_REQUIRE_GPU:-0}" = 1 ] && fail "no usable device (MOE_REQUIRE_GPU=1): $out"
  echo "skipped: $out"
  exit 77
fi
echo "$out"
[ $rc -eq 0 ] || fail "tune-moe exited $rc"
[ -f "$tmp/moe_tune.json" ] || fail "no $tmp/moe_tune.json"
check() {  # check WANT_ENTRIES KEY_PATTERN...: the cache has exactly WANT entries, one per pattern
  python3 - "$tmp/moe_tune.json" "$@" <<'EOF'
import json, re, sys
j = json.load(open(sys.argv[1]))
assert j.get("version") == 1, "version"
ent = j["entries"]
want, pats = int(sys.argv[2]), sys.argv[3:]
assert len(ent) == want, f"{len(ent)} entries, want {want}: {sorted(ent)}"
for p in pats:
    hits = [k for k in ent if re.search(p, k)]
    assert len(hits) == 1, f"{p}: {hits}"
    e = ent[hits[0]]
    assert e["us"] > 0 and e["nb"] >= 1 and e["warps_per_cta"] >= 1 and e["ctas_per_sm"] >= 1, e
print(f"cache: {len(ent)} entries, as expected")
EOF
}
pats=()
for f in bf16 fp8_block128 nvfp4; do
  pats+=("\\|D1024\\|I256\\|E17\\|K5\\|T<=1\\|$f\$" "\\|D1024\\|I256\\|E17\\|K5\\|T<=8\\|$f\$"
         "\\|D1024\\|I256\\|E16\\|K4\\|T<=64\\|$f\$")
done
check 9 "${pats[@]}" || fail "first run's cache"

out2=$("$bin" tune-moe --model-path "$tmp" --tokens 256 --fmt bf16,fp8,nvfp4 --iters 3 2>&1) ||
  fail "second run: $out2"
for f in bf16 fp8_block128 nvfp4; do pats+=("\\|D1024\\|I256\\|E16\\|K4\\|T<=256\\|$f\$"); done
check 12 "${pats[@]}" || fail "second run did not extend the cache"

ids=$(python3 -c "import json,sys;print(','.join(map(str,json.load(open(sys.argv[1]))['prompt_ids'])))" \
  "$fixture/golden.json") || fail "golden.json"
common=(generate --model-path "$fixture" --prompt-ids "$ids" --max-new-tokens 6 --ignore-eos)
g=$("$bin" "${common[@]}" --device cuda --moe-tune-cache "$tmp/moe_tune.json" 2>&1) ||
  fail "generate with the cache: $g"
echo "$g" | grep -q "warning: MoE tune cache" && fail "generate warned about the cache: $g"
c=$("$bin" "${common[@]}" --device cpu 2>&1) || fail "cpu: $c"
[ "$(echo "$g" | grep '^generated_ids:')" = "$(echo "$c" | grep '^generated_ids:')" ] ||
  fail "ids with the cache differ from cpu: $g"
echo "PASS: tune-moe wrote and extended the cache; generate read it"
