#!/usr/bin/env bash
# Reads a ctest log and prints one closing line: "ctest: N passed, N failed, N skipped".
# Under CI (second argument "true") it fails when a test skipped for any reason but the
# absence of hardware: a GPU, or a CPU feature (a kernel for AVX-512 VNNI on an AVX2-only
# machine). Any other skip means a fixture or tool was missing, and a green run would claim
# tests that never ran.
#   scripts/ctest-summary.sh CTEST_LOG [true|false] [CTEST_JUNIT_XML]
# A test counts as skipped for a CPU feature only when the junit file (ctest --output-junit)
# holds its skip message and that message says "this CPU" (the tests' wording for it).
set -euo pipefail
log="$1"
in_ci="${2:-false}"
junit="${3:-}"

total="$(grep -oE 'tests failed out of [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n1 || true)"
failed="$(grep -oE '[0-9]+ tests failed out of' "$log" | grep -oE '^[0-9]+' | tail -n1 || true)"
if [ -z "$total" ]; then
  echo "ctest-summary: no ctest summary in $log" >&2
  exit 1
fi
# ctest lists skipped tests as "  123 - Suite.Name (Skipped)".
mapfile -t skipped < <(grep -E '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" |
  sed -E 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/' || true)
# Tests whose skip message says the CPU lacks what they test, one name per line.
cpu_skips=""
if [ -n "$junit" ] && [ -f "$junit" ]; then
  cpu_skips="$(python3 - "$junit" <<'PY'
import re, sys
import xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.get("status") != "notrun":
        continue
    out = case.findtext("system-out") or ""
    # GoogleTest prints "file:line: Skipped", the message, then "[  SKIPPED ] Name".
    m = re.search(r": Skipped\n(.*?)\[  SKIPPED \]", out, re.S)
    if m and "this CPU" in m.group(1):
        print(case.get("name"))
PY
)"
fi
# GPU tests skip on machines without one (CI never has a GPU); their names say CUDA or GPU.
not_gpu=()
not_cpu=()
for t in "${skipped[@]}"; do
  if grep -qiE 'cuda|gpu' <<<"$t"; then continue; fi
  not_gpu+=("$t")
  if ! grep -qxF -- "$t" <<<"$cpu_skips"; then not_cpu+=("$t"); fi
done

# The slowest tests, from ctest's per-test lines ("Test #12: Suite.Name .....   Passed   3.21 sec").
echo "slowest tests:"
grep -E 'Test +#[0-9]+: .* sec$' "$log" |
  sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' | sort -rn | head -n 3 |
  awk '{ printf "  %8.1f s  %s\n", $1, $2 }' || true

n_skipped=${#skipped[@]}
passed=$((total - failed - n_skipped))
echo "skipped without a GPU: $((n_skipped - ${#not_gpu[@]})); for a CPU feature this CPU lacks:" \
  "$((${#not_gpu[@]} - ${#not_cpu[@]})); for other reasons: ${#not_cpu[@]}"
for t in "${not_gpu[@]}"; do
  if grep -qxF -- "$t" <<<"$cpu_skips"; then echo "  skipped (CPU): $t"; else echo "  skipped: $t"; fi
done
status=0
if [ "$in_ci" = "true" ] && [ ${#not_cpu[@]} -gt 0 ]; then
  echo "test: CI: ${#not_cpu[@]} test(s) skipped for a reason other than missing hardware (listed above)"
  status=1
fi
echo "ctest: $passed passed, $failed failed, $n_skipped skipped"
exit "$status"
