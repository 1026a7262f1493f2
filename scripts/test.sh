#!/usr/bin/env bash
# Fresh machine -> installed dependencies -> build -> every test. Idempotent.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
FSQ_BUILD_DIR="$build" "$root/scripts/build.sh"

if [ ! -d "$root/../shared/models/stories260K" ]; then
  echo "test: ../shared/models/stories260K is absent; real-model tests will skip"
fi
cd "$build"
ctest --output-on-failure -j "${FSQ_TEST_JOBS:-2}" --timeout 900
