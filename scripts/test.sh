#!/usr/bin/env bash
# Fresh machine -> installed dependencies -> build -> every test. Idempotent.
#   FSQ_SKIP_FETCH=1   do not fetch SmolLM2-135M (its tests then skip with a message)
#   FSQ_FUZZ_SECONDS   seconds per fuzzer (default 30; 0 skips fuzzing)
#   FSQ_CUDA_ARCHS     CUDA architectures to compile (default: cmake/cuda.cmake's list; 90 under CI)
# Under CI (the CI variable set, as .ci/run is called), nothing may be skipped quietly: a
# missing ../shared, a failed SmolLM2 fetch, a missing fuzzer toolchain, FSQ_SKIP_FETCH=1 or
# FSQ_FUZZ_SECONDS=0 fail the run before the tests start, and so does any test that skipped
# for a reason other than the absence of a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"
shared="$(cd "$root/.." && pwd)/shared"

in_ci=false
case "${CI:-}" in "" | 0 | false | FALSE | no) ;; *) in_ci=true ;; esac
# Outside CI a missing piece is a message and its tests skip; under CI it ends the run.
missing() {
  if $in_ci; then
    echo "test: CI: $1" >&2
    exit 1
  fi
  echo "test: $1; its tests will skip"
}

fuzz_seconds="${FSQ_FUZZ_SECONDS:-30}"
if $in_ci; then
  [ "${FSQ_SKIP_FETCH:-0}" != "1" ] || missing "FSQ_SKIP_FETCH=1 would skip every SmolLM2-135M test; unset it"
  [ "$fuzz_seconds" != "0" ] || missing "FSQ_FUZZ_SECONDS=0 would skip the fuzzers; unset it"
fi
[ -d "$shared/models/stories260K" ] ||
  missing "$shared/models/stories260K is absent (the shared fixtures must sit beside the clone)"

"$root/scripts/setup.sh"
# llama.cpp's source download (PyPI, ~80 s under CI) runs beside fsq's build; its build waits.
llama_fetch_pid=""
if $in_ci || [ "${FSQ_LLAMA_CPP:-0}" = "1" ]; then
  llama_fetch_log="$(mktemp)"
  "$root/scripts/llama-cpp.sh" --fetch-only >/dev/null 2>"$llama_fetch_log" &
  llama_fetch_pid=$!
fi
# Under CI the CUDA kernels compile for one architecture, sm_90 (the lent H100/H200): CI has no
# GPU, and the other three of the default list (cmake/cuda.cmake) repeat the same compile with
# another target (the CUDA files took 393 s of compiler CPU with four, 127 s with sm_90 alone,
# in a build of about 3700 s). FSQ_CUDA_ARCHS overrides it.
cmake_args=()
if [ -n "${FSQ_CUDA_ARCHS:-}" ]; then
  cmake_args=("-DFSQ_CUDA_ARCHS=$FSQ_CUDA_ARCHS")
elif $in_ci; then
  cmake_args=(-DFSQ_CUDA_ARCHS=90)
fi
FSQ_BUILD_DIR="$build" "$root/scripts/build.sh" "${cmake_args[@]}"

# The real-model fixture; the download is cached in $FSQ_CACHE (default ~/.cache/fsq).
if [ "${FSQ_SKIP_FETCH:-0}" != "1" ]; then
  FSQ_BIN="$build/tools/fsq/fsq" "$root/scripts/fetch-model.sh" smollm2-135m >/dev/null ||
    missing "SmolLM2-135M could not be fetched (scripts/fetch-model.sh smollm2-135m failed)"
fi

# llama.cpp's tools judge fsq's GGUF exports (tests/tools/fsq/cmd_export_gguf_test.cpp and
# scripts/rpc-loopback.sh): built under CI (or with FSQ_LLAMA_CPP=1, ~6 min on 2 cores, then
# cached); elsewhere a cached build is used when there is one, else those tests skip.
if $in_ci || [ "${FSQ_LLAMA_CPP:-0}" = "1" ]; then
  # A failed download is retried (and reported) by the build below.
  wait "$llama_fetch_pid" || echo "test: llama.cpp's source download failed ($(tail -n 1 "$llama_fetch_log")); retrying"
  rm -f "$llama_fetch_log"
  FSQ_LLAMA_CPP_BIN="$("$root/scripts/llama-cpp.sh" | tail -n 1)" ||
    missing "llama.cpp's tools could not be built (scripts/llama-cpp.sh failed)"
elif FSQ_LLAMA_CPP_BIN="$("$root/scripts/llama-cpp.sh" --if-cached)"; then
  :
else
  FSQ_LLAMA_CPP_BIN=""
  echo "test: llama.cpp's tools are not built (FSQ_LLAMA_CPP=1 builds them); the tests that run them will skip"
fi
if [ -n "$FSQ_LLAMA_CPP_BIN" ]; then export FSQ_LLAMA_CPP_BIN; else unset FSQ_LLAMA_CPP_BIN; fi

# Coverage-guided fuzzing of the file readers (needs clang, which setup.sh installs).
if [ "$fuzz_seconds" -gt 0 ]; then
  if ! command -v clang++ >/dev/null 2>&1 && [ -z "${FSQ_FUZZ_CXX:-}" ]; then
    missing "clang++ not found, so the fuzzers cannot be built"
  fi
  FSQ_FUZZ_BUILD_DIR="$build-fuzz" "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi

# ctest last; then one closing line with the counts, skipped tests included.
# The tests wait as the fsq binary does (tools/fsq/wait_policy.h, which says why) unless the
# caller chose otherwise: with the libraries' default spinning, tests that ctest -j2 runs
# side by side on 2 cores spin for each other's cores between OpenMP regions (two copies of
# the SmolLM2 int8 decode test: 56 s here instead of 11 s alone, 34 s with these settings;
# on one CI machine two such tests timed out at 600 s).
export GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-3000}" OPENBLAS_THREAD_TIMEOUT="${OPENBLAS_THREAD_TIMEOUT:-4}"
# Which CPU ran the tests (kernel paths and timings depend on it).
echo "test: CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
  "ISA flags:$(grep -m1 -o -w -E 'avx2|avx512f|avx512_vnni|avx512vbmi|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ' | sed 's/^/ /')"
cd "$build"
log="$build/ctest-last.log"
# The tests' temp folder: a fresh one in the build tree, which must be empty again after the
# run (each test removes its scratch folders, tests/support/temp_dir.h; a run once left ~25 GB
# in /tmp). fsq's owner records of its temporaries ($TMPDIR/fsq-owners-<uid>/, see
# lib/common/stale_temporaries.h) may stay, since a killed fsq's record waits for the next
# fsq run's sweep; a path that such a record lists and that still exists is a leftover.
tests_tmp="$build/ctest-tmp"
rm -rf "$tests_tmp"
mkdir -p "$tests_tmp"
set +e
junit="$build/ctest-last.xml"  # each test's output, where ctest-summary.sh reads skip reasons
TMPDIR="$tests_tmp" ctest --output-on-failure -j "${FSQ_TEST_JOBS:-2}" --timeout 900 --output-junit "$junit" 2>&1 |
  tee "$log"
rc=${PIPESTATUS[0]}
set -e
"$root/scripts/ctest-summary.sh" "$log" "$in_ci" "$junit" || rc=1
records="fsq-owners-$(id -u)"
leftovers="$(find "$tests_tmp" -mindepth 1 -maxdepth 1 ! -name "$records" | sort)"
if [ -d "$tests_tmp/$records" ]; then
  # A record's first line names its pid namespace; the paths follow.
  for record in "$tests_tmp/$records"/*; do
    [ -f "$record" ] || continue
    while IFS= read -r path; do
      if [ -e "$path" ] || [ -L "$path" ]; then leftovers+=$'\n'"$path (listed in $record)"; fi
    done < <(tail -n +2 "$record")
  done
fi
leftovers="$(sed '/^$/d' <<<"$leftovers")"
if [ -n "$leftovers" ]; then
  echo "test: FAIL: the tests left $(wc -l <<<"$leftovers") path(s) in their temp folder $tests_tmp" \
    "(a test must remove its scratch folders: testing::TempDir, tests/support/temp_dir.h):" >&2
  sed 's/^/  /' <<<"$leftovers" | head -n 50 >&2
  rc=1
else
  rm -rf "$tests_tmp"
fi
exit "$rc"
