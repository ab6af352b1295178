#!/usr/bin/env bash
# Downloads (here, on the build machine) the Debian packages the GPU machine lacks to configure
# and build moengine with its tests: headers, CMake configs, static libs and pkg-config. They go
# into the git-ignored folder .deps/, which the GPU run carries (`carry: [".deps"]`) and
# scripts/gpu-test.sh unpacks into a private prefix there. Usage: scripts/gpu-deps.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/.deps"
cd "$root/.deps"
pkgs=(nlohmann-json3-dev libgtest-dev googletest libpcre2-dev libpcre2-8-0 libpcre2-16-0
      libpcre2-32-0 libpcre2-posix3 pkgconf-bin libpkgconf3)
for p in "${pkgs[@]}"; do
  if ls "${p}"_*.deb >/dev/null 2>&1; then continue; fi
  apt-get download "$p" >/dev/null
done
ls -1 "$root/.deps"
du -sh "$root/.deps"
