#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (tests/fuzz) for the untrusted-input readers.
#   scripts/fuzz.sh [SECONDS]   (default 60)
# Each fuzzer first replays the past findings in tests/fuzz/regressions/<kind> (each must
# now be handled), then runs for SECONDS; the fuzzers run at the same time,
# starting from the committed seeds in tests/fuzz/corpus/<kind>; new inputs go to the
# build dir, never into the committed corpus. Builds a standalone clang project in $FSQ_FUZZ_BUILD_DIR
# (default build-fuzz), so the main g++ build is untouched.
# Exit status: 0 when no fuzzer crashed (or clang is absent: nothing to do), 1 on a
# crash (the reproducer's path is printed), 2 on a build failure.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build="${FSQ_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${FSQ_FUZZ_BUILD_JOBS:-2}"
fuzzers=(fuzz_gguf fuzz_safetensors fuzz_packed)

if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [SECONDS]  (a positive whole number)" >&2
  exit 2
fi

cxx="${FSQ_FUZZ_CXX:-}"
if [ -z "$cxx" ]; then
  for c in clang++ clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then cxx="$c"; break; fi
  done
fi
if [ -z "$cxx" ]; then
  echo "fuzz: clang++ not found; libFuzzer needs clang, nothing to do"
  exit 0
fi

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
echo "fuzz: building ${fuzzers[*]} with $cxx in $build"
if ! cmake -S "$root/tests/fuzz" -B "$build" "${generator[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
       -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1; then
  cat "$build.configure.log" >&2
  echo "fuzz: configure failed" >&2
  exit 2
fi
rm -f "$build.configure.log"
if ! cmake --build "$build" -j "$jobs" --target "${fuzzers[@]}"; then
  echo "fuzz: build failed" >&2
  exit 2
fi

# One fuzzer: replay its past findings, then fuzz. Its summary line goes to $build/$f.summary;
# exit status 1 on a failure.
fuzz_one() {
  local f="$1" kind="${1#fuzz_}"
  local work="$build/corpus-$kind" artifacts="$build/artifacts-$kind/" log="$build/$1.log"
  local summary_file="$build/$1.summary"
  mkdir -p "$work" "$artifacts"
  local dict=() regressions=()
  if [ -f "$root/tests/fuzz/$kind.dict" ]; then dict=(-dict="$root/tests/fuzz/$kind.dict"); fi
  if [ -d "$root/tests/fuzz/regressions/$kind" ]; then
    mapfile -t regressions < <(find "$root/tests/fuzz/regressions/$kind" -type f | sort)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    echo "fuzz: replaying ${#regressions[@]} past finding(s) through $f"
    if ! "$build/$f" "${regressions[@]}" >"$log" 2>&1; then
      echo "$f: FAILED replaying tests/fuzz/regressions/$kind (see $log); not fuzzed" >"$summary_file"
      grep -E 'Running: |ERROR: |what\(\)|runtime error' "$log" | head -n 5 | sed 's/^/    /' >&2
      return 1
    fi
  fi
  echo "fuzz: running $f for ${seconds}s (log: $log)"
  # The first corpus dir receives new inputs; the committed seeds are read only.
  "$build/$f" "$work" "$root/tests/fuzz/corpus/$kind" "${dict[@]}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts" >"$log" 2>&1
  local rc=$?
  local runs took cov
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n1)"
  took="$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' | tail -n1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | grep -o '[0-9]*')"
  if [ "$rc" -eq 0 ]; then
    echo "$f: ok, ${runs:-?} runs in ${took:-$seconds}s, coverage ${cov:-?} edges" >"$summary_file"
    return 0
  fi
  local crash
  crash="$(grep -o 'Test unit written to .*' "$log" | tail -n1 | sed 's/Test unit written to //')"
  echo "$f: FAILED (exit $rc) after ${runs:-?} runs; reproducer: ${crash:-see $log}" >"$summary_file"
  grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -n 5 | sed 's/^/    /' >&2
  return 1
}

# The fuzzers run side by side: SECONDS of wall time in all rather than per fuzzer, each
# with a share of the cores (CI's budget; the summary counts each one's runs).
status=0
pids=()
for f in "${fuzzers[@]}"; do
  rm -f "$build/$f.summary"
  fuzz_one "$f" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
summary=()
for f in "${fuzzers[@]}"; do
  if [ -f "$build/$f.summary" ]; then summary+=("$(cat "$build/$f.summary")"); else summary+=("$f: no result"); status=1; fi
done

echo "fuzz summary (${seconds}s per fuzzer):"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$status"
