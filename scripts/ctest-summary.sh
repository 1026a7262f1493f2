#!/usr/bin/env bash
# Reads a ctest log and prints one closing line: "ctest: N passed, N failed, N skipped".
# Under CI (second argument "true") it fails when a test skipped for any reason but the
# absence of a GPU: such a skip means a fixture or tool was missing, and a green run
# would claim tests that never ran.
#   scripts/ctest-summary.sh CTEST_LOG [true|false]
set -euo pipefail
log="$1"
in_ci="${2:-false}"

total="$(grep -oE 'tests failed out of [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n1 || true)"
failed="$(grep -oE '[0-9]+ tests failed out of' "$log" | grep -oE '^[0-9]+' | tail -n1 || true)"
if [ -z "$total" ]; then
  echo "ctest-summary: no ctest summary in $log" >&2
  exit 1
fi
# ctest lists skipped tests as "  123 - Suite.Name (Skipped)".
mapfile -t skipped < <(grep -E '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" |
  sed -E 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/' || true)
# GPU tests skip on machines without one (CI never has a GPU); their names say CUDA or GPU.
not_gpu=()
for t in "${skipped[@]}"; do
  if ! grep -qiE 'cuda|gpu' <<<"$t"; then not_gpu+=("$t"); fi
done

# The slowest tests, from ctest's per-test lines ("Test #12: Suite.Name .....   Passed   3.21 sec").
echo "slowest tests:"
grep -E 'Test +#[0-9]+: .* sec$' "$log" |
  sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' | sort -rn | head -n 3 |
  awk '{ printf "  %8.1f s  %s\n", $1, $2 }' || true

n_skipped=${#skipped[@]}
passed=$((total - failed - n_skipped))
echo "skipped without a GPU: $((n_skipped - ${#not_gpu[@]})); skipped for other reasons: ${#not_gpu[@]}"
for t in "${not_gpu[@]}"; do echo "  skipped: $t"; done
status=0
if [ "$in_ci" = "true" ] && [ ${#not_gpu[@]} -gt 0 ]; then
  echo "test: CI: ${#not_gpu[@]} test(s) skipped for a reason other than a missing GPU (listed above)"
  status=1
fi
echo "ctest: $passed passed, $failed failed, $n_skipped skipped"
exit "$status"
