#!/usr/bin/env bash
# Builds only the fsq binary (or another cmake target) into $FSQ_BUILD_DIR (default build/),
# configuring the folder the first time (Release, Ninja); a no-op when it is up to date. The
# build log is shown only when the build fails. Prints the fsq binary's path on stdout (for
# another target, the build folder). Used by the benchmark and check scripts.
#   fsq="$(scripts/build-fsq.sh NAME)"   (NAME prefixes the failure message)
#   build="$(scripts/build-fsq.sh NAME bench_lut_kernels)"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"
name="${1:-build-fsq}"
target="${2:-fsq}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { [[ -f "$build/build.ninja" || -f "$build/Makefile" ]] ||
       cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release; } >"$log" 2>&1 ||
   ! cmake --build "$build" --target "$target" -j "${FSQ_JOBS:-2}" >>"$log" 2>&1; then
  cat "$log" >&2
  echo "$name: build failed" >&2
  exit 1
fi
if [[ "$target" == fsq ]]; then echo "$build/tools/fsq/fsq"; else echo "$build"; fi
