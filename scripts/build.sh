#!/usr/bin/env bash
# Configures and builds fsq (Release, Ninja) into $FSQ_BUILD_DIR (default: build/).
# Usage: scripts/build.sh [extra cmake -D options...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"
jobs="${FSQ_JOBS:-$(nproc)}"

# ccache (when installed) makes rebuilds and second build folders cheap.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build/build.ninja" ] || [ "$#" -gt 0 ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
fi
cmake --build "$build" -j "$jobs"
echo "build: fsq is at $build/tools/fsq/fsq"
