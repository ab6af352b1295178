#!/usr/bin/env bash
# The main job on a built-in default: install, build, create a tiny GLM-5-architecture model,
# inspect it and generate from it on the CPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
bin=build/bin/moengine
model=${MOE_DEMO_DIR:-$root/build/tiny-glm5}
$bin make-tiny --arch glm_moe_dsa --out "$model" --seed 1
$bin inspect --model-path "$model"
$bin generate --model-path "$model" --prompt-ids 11,22,33,44,55,66,77,88,99,111,122,133 \
  --max-new-tokens 24 --ignore-eos --device cpu
$bin generate --model-path "$model" --prompt-ids 11,22,33 --max-new-tokens 8 --temperature 0.8 \
  --top-p 0.9 --seed 7 --output-format json
