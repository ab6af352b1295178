#!/usr/bin/env bash
# Installs the Debian 12 packages moengine needs (only those missing) and builds the release
# preset into build/. Usage: scripts/setup.sh [--no-build]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

pkgs=(build-essential cmake ninja-build pkg-config git g++ clang clang-format libclang-rt-14-dev
      googletest libgtest-dev nlohmann-json3-dev libpcre2-dev python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# Node.js + npm run the test oracles only; some images ship a nodejs that bundles npm (and
# conflicts with Debian's npm package), so install them only when the commands are absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" != "--no-build" ]; then
  cmake --preset cpu-release >/dev/null
  cmake --build build 2>&1 | tail -n 3
fi
