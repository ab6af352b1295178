# shellcheck shell=bash
# Sourced (from the repo root) by scripts/gpu-test.sh and bench/moe/run.sh on the GPU machine,
# which has no Debian packages and no network: `moe_unpack_deps` unpacks the .deb files carried
# in .deps/ (scripts/gpu-deps.sh on the build machine) into a private prefix and exports what a
# CMake configure needs. Sets prefix, arch and pkg_config_args (an array of extra CMake flags);
# exports PKG_CONFIG_PATH and LD_LIBRARY_PATH. Returns 2, with a message, if .deps has no .deb.
# `moe_configure BUILD LOG` then configures BUILD (Release, sm_90a, Ninja) against that prefix,
# its output in LOG; returns CMake's status.
prefix=/tmp/moe-deps
arch=x86_64-linux-gnu
pkg_config_args=()

moe_unpack_deps() {
  if ! ls .deps/*.deb >/dev/null 2>&1; then
    echo "${0##*/}: .deps/ has no .deb files; run scripts/gpu-deps.sh on the build machine and carry .deps" >&2
    return 2
  fi
  rm -rf "$prefix" && mkdir -p "$prefix"
  local f pc
  for f in .deps/*.deb; do dpkg-deb -x "$f" "$prefix"; done
  # The .pc files say prefix=/usr: point them into the private prefix.
  for pc in "$prefix"/usr/lib/$arch/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|" "$pc"
  done
  export PKG_CONFIG_PATH="$prefix/usr/lib/$arch/pkgconfig:$prefix/usr/share/pkgconfig"
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$prefix/usr/lib/$arch"
  pkg_config_args=()
  if ! command -v pkg-config >/dev/null 2>&1; then
    pkg_config_args=(-DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf")
  fi
  return 0
}

moe_configure() {
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_PREFIX_PATH="$prefix/usr" \
    -DGTest_DIR="$prefix/usr/lib/$arch/cmake/GTest" \
    -Dnlohmann_json_DIR="$prefix/usr/share/cmake/nlohmann_json" \
    -DCMAKE_CXX_FLAGS="-isystem $prefix/usr/include" \
    -DCMAKE_CUDA_FLAGS="-isystem $prefix/usr/include" \
    "${pkg_config_args[@]}" >"$2" 2>&1
}
