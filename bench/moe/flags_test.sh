#!/usr/bin/env bash
# moe_bench's flags are checked before the GPU is touched: each bad one exits 2 with one line on
# stderr naming it and what is expected (CPU test; no device needed). Usage: flags_test.sh MOE_BENCH
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {  # bad NEEDLE ARGS...
  local needle=$1
  shift
  local err rc
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ "$err" != *"$needle"* ]]; then
    echo "FAIL: moe_bench $*: rc $rc, stderr: $err (want exit 2, one line with '$needle')"
    fails=$((fails + 1))
  fi
}
bad "--tokens abc: expected token counts" --tokens 1,abc
bad "--tokens 0: expected" --tokens 0
bad "--tokens -4: expected" --tokens 8,-4
bad "--iters 2: expected 3..100000" --iters 2
bad "--iters 10x: expected" --iters 10x
bad "--nb x: expected" --nb x
bad "--warps 99: expected" --warps 99
bad "--ctas -1: expected" --ctas -1
bad "--pipe 2: expected" --pipe 2
bad "--wg 3: expected" --wg 3
bad "--ab: --wg takes 0" --ab "--wg 3"
bad "--sweep 3: expected 0, 1 or 2" --sweep 3
bad "--shared 5: expected" --shared 5
bad "--sustain-ms -1: expected" --sustain-ms -1
bad "unknown --shape nope" --shape glm5,nope
bad "unknown --fmt x" --fmt bf16,x
bad "unknown --routing nope" --routing nope
bad "unknown --layout x" --layout x
bad "unknown flag --bogus" --bogus 1
bad "--dyn 2: expected 0 or 1" --dyn 2
bad "--x-pos 2: expected 0 or 1" --x-pos 2
bad "--x-pos 2: expected 0 or 1" --ab "--x-pos 2"
bad "--early-gu 3: expected 0 or 1" --early-gu 3
bad "--early-gu x: expected 0 or 1" --ab "--early-gu x"
bad "--group-warp 2: expected 0 or 1" --group-warp 2
bad "--defer x: expected 0 or 1" --defer x
bad "--flush x: expected memset or read" --flush x
bad "--phases 2: expected 0 or 1" --phases 2
bad "--x-scatter 2: expected 0 or 1" --x-scatter 2
bad "--narrow-box 2: expected 0 or 1" --narrow-box 2
bad "--narrow-box x: expected 0 or 1" --ab "--narrow-box x"
bad "--hybrid-gb -1: expected" --hybrid-gb -1
bad "--hybrid-min x: expected" --hybrid-min x
bad "--ab: --bogus is not a launch flag" --ab "--bogus 1"
bad "expected launch flags with their values" --ab "--dyn"
bad "not with --sweep" --sweep 1 --ab "--dyn 0"
bad "--ab-blocks 3: needs --ab" --ab-blocks 3 --sustain-ms 100
bad "--ab-blocks 3: needs --ab" --ab-blocks 3 --ab "--dyn 0"
bad "--ab-blocks -1: expected rounds" --ab-blocks -1
bad "--shared with the expert-parallel shape glm5-ep8" --shape glm5-ep8 --shared 1
bad "--json $tmp/no/such/dir/x.json: cannot write" --json "$tmp/no/such/dir/x.json"
bad "--routing-dir $tmp/none: not a folder" --routing-dir "$tmp/none"
bad "usage" --tokens
[ $fails -eq 0 ] || exit 1
echo "PASS: every bad flag refused with one line"
