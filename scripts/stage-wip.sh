#!/usr/bin/env bash
# Builds an experiment here for the GPU machine, so a device call runs binaries instead of
# building (scripts/gpu-test.sh builds on the device; a wip build only needs its benchmarks and
# tests). A git worktree of REV (default HEAD) with PATCH applied (none: REV as it is) is built
# in its own folder (the checkout's build-cuda is left alone), and the targets' binaries, stripped
# (static cudart, sm_90a), go to build-run/NAME/ (git-ignored). Prints the carry list: the folder
# is what a device call takes along (64 MiB with the tree, ~7 MB; two of these builds do not fit in
# one call). On the device, the binaries want MOE_SOURCE_DIR_OVERRIDE=<repo root> (test fixtures).
# Usage: scripts/stage-wip.sh NAME [PATCH] [REV] [TARGETS...]
#   PATCH: one file, or several joined by commas, applied in that order (each 3-way onto the
#   worktree with the ones before it committed; a conflict stops with the files to resolve by hand)
#   TARGETS default: moe_bench moe_grouped_tests
# e.g.   scripts/stage-wip.sh s39/dyn experiments/2026-12-04-dyn-static-rounds.patch
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/stage-wip.sh NAME [PATCH] [REV] [TARGETS...]" >&2
  exit 2
fi
name=$1
patch=${2:-}
rev=${3:-HEAD}
shift $(($# < 3 ? $# : 3))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(moe_bench moe_grouped_tests)
case "$name" in
  */../* | ../* | /*) echo "stage-wip: NAME is a folder under build-run/ (got $name)" >&2; exit 2 ;;
esac
IFS=, read -r -a patches <<<"$patch"
for p in "${patches[@]}"; do
  if [ ! -f "$p" ]; then
    echo "stage-wip: no patch file $p" >&2
    exit 2
  fi
done
git -C "$root" rev-parse --verify -q "$rev^{commit}" >/dev/null ||
  { echo "stage-wip: $rev is not a commit here" >&2; exit 2; }
wt="$root/build-run/.wt-${name//\//-}"
out="$root/build-run/$name"
if [ -e "$wt" ]; then git -C "$root" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"; fi
git -C "$root" worktree prune
git -C "$root" worktree add -q --detach "$wt" "$rev"
base=$(git -C "$wt" rev-parse --short HEAD)
trap 'git -C "$root" worktree remove --force "$wt" 2>/dev/null || true' EXIT
applied=""  # the patches before this one
for p in "${patches[@]}"; do
  p_abs=$(cd "$(dirname "$p")" && pwd)/$(basename "$p")
  if ! git -C "$wt" apply -3 "$p_abs"; then
    echo "stage-wip: $p does not apply on $rev${applied:+ + $applied}" \
      "(conflicts: $(git -C "$wt" diff --name-only --diff-filter=U | tr '\n' ' '))" >&2
    exit 3
  fi
  git -C "$wt" -c user.name=stage-wip -c user.email=stage-wip@localhost commit -qam "wip: $p" ||
    { echo "stage-wip: cannot commit $p in the worktree" >&2; exit 3; }
  applied+="${applied:+ + }$p"
done
(cd "$wt" && cmake --preset cuda-release >/dev/null)
ninja -C "$wt/build-cuda" "${targets[@]}" >"$wt/build.log" 2>&1 ||
  { grep -E "error" "$wt/build.log" | head -n 20; echo "stage-wip: build failed" >&2; exit 4; }
grep "Registers are spilled" "$wt/build.log" | sed -E "s/.*function '([^']*)'/\1/" >"$wt/spills.txt" || true
mkdir -p "$out"
for t in "${targets[@]}"; do
  cp "$wt/build-cuda/bin/$t" "$out/$t"
  strip "$out/$t"
done
{
  echo "rev $base${patch:+ + ${patch//,/ + }}"
  echo "built $(date -u +%FT%TZ)"
  echo "ptxas spills:"
  sed 's/^/  /' "$wt/spills.txt"
} >"$out/BUILD.txt"
du -sh "$out" | awk '{print "stage-wip: " $2 ", " $1}'
echo "carry: [\"build-run/$name\"]"
