#!/usr/bin/env bash
# Fresh machine -> installed dependencies -> build -> every test. Idempotent.
#   FSQ_SKIP_FETCH=1   do not fetch SmolLM2-135M (its tests then skip with a message)
#   FSQ_FUZZ_SECONDS   seconds per fuzzer (default 30; 0 skips fuzzing)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
FSQ_BUILD_DIR="$build" "$root/scripts/build.sh"

if [ ! -d "$root/../shared/models/stories260K" ]; then
  echo "test: ../shared/models/stories260K is absent; real-model tests will skip"
fi
# The real-model fixture; the download is cached in $FSQ_CACHE (default ~/.cache/fsq).
if [ "${FSQ_SKIP_FETCH:-0}" != "1" ]; then
  FSQ_BIN="$build/tools/fsq/fsq" "$root/scripts/fetch-model.sh" smollm2-135m ||
    echo "test: SmolLM2-135M could not be fetched; its tests will skip"
fi

# Coverage-guided fuzzing of the file readers (needs clang; skipped with a message without).
fuzz_seconds="${FSQ_FUZZ_SECONDS:-30}"
if [ "$fuzz_seconds" -gt 0 ]; then
  FSQ_FUZZ_BUILD_DIR="$build-fuzz" "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi

# ctest last, so its summary closes the output.
cd "$build"
ctest --output-on-failure -j "${FSQ_TEST_JOBS:-2}" --timeout 900
