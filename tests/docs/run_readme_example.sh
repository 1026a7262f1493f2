#!/usr/bin/env bash
# Runs README.md's worked example as a user would, so that it cannot go stale.
#   run_readme_example.sh FSQ_BIN SOURCE_DIR SHARED_DIR stories260k|gguf
# The example's code blocks sit between HTML comments in README.md:
#   <!-- worked-example:begin --> ... <!-- worked-example:end -->            (stories260K)
#   <!-- worked-example-gguf:begin --> ... <!-- worked-example-gguf:end -->  (into llama.cpp)
# The block runs from SOURCE_DIR under `set -euo pipefail`, rewritten only where a test must
# differ from a user: FSQ= names the fsq under test, OUT= a temporary folder, ../shared/ the
# SHARED_DIR, and LLAMA= the llama.cpp tools in FSQ_LLAMA_CPP_BIN. The gguf part first runs
# the stories260K block's variable lines (the README runs both parts in one shell).
# Then: every "$OUT/..." path the block names exists, every `fsq eval ... --json` report has a
# finite perplexity, and llama-perplexity's final estimate is finite.
# Exit 77 (ctest's skip) when the gguf part's SmolLM2 GGUF was never fetched, outside CI only.
set -euo pipefail
fsq="${1:?usage: run_readme_example.sh FSQ_BIN SOURCE_DIR SHARED_DIR stories260k|gguf}"
root="${2:?}"
shared="${3:?}"
part="${4:?}"
readme="$root/README.md"

in_ci=false
case "${CI:-}" in "" | 0 | false | FALSE | no) ;; *) in_ci=true ;; esac
fail() {
  echo "readme-example: $*" >&2
  exit 1
}

# The lines of the fenced code block between <!-- NAME:begin --> and <!-- NAME:end -->.
block() {
  awk -v b="<!-- $1:begin -->" -v e="<!-- $1:end -->" '
    $0 == b { inside = 1; next }
    $0 == e { inside = 0; found = 1; next }
    inside && !/^```/ { print }
    END { if (!found) exit 1 }' "$readme" || fail "README.md has no block marked <!-- $1:begin/end -->"
}

case "$part" in
  stories260k) name=worked-example ;;
  gguf) name=worked-example-gguf ;;
  *) fail "unknown part '$part' (stories260k or gguf)" ;;
esac
code="$(block "$name")"
[[ -n $code ]] || fail "the block marked $name is empty"

work="$(mktemp -d "${TMPDIR:-/tmp}/fsq-readme-example.XXXXXX")"
trap 'rm -rf "$work"' EXIT

prelude=""
if [[ $part == gguf ]]; then
  # The example fetches SmolLM2 with scripts/fetch-model.sh; a test never downloads, so the
  # GGUF must already be in the cache (scripts/test.sh fetches it).
  gguf="${FSQ_CACHE:-$HOME/.cache/fsq}/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"
  if [[ ! -f $gguf ]]; then
    $in_ci && fail "$gguf absent under CI: run scripts/fetch-model.sh smollm2-135m"
    echo "readme-example: $gguf absent: run scripts/fetch-model.sh smollm2-135m; skipped"
    exit 77
  fi
  # The variables the stories260K block defines (FSQ, MODEL, TEXT, OUT).
  prelude="$(block worked-example | grep -E '^[A-Z_]+=' || true)"
  if [[ -z ${FSQ_LLAMA_CPP_BIN:-} ]]; then
    $in_ci && fail "FSQ_LLAMA_CPP_BIN is not set under CI (scripts/test.sh sets it from scripts/llama-cpp.sh)"
    echo "readme-example: FSQ_LLAMA_CPP_BIN is not set: the llama.cpp lines are left out" \
      "(scripts/llama-cpp.sh builds the tools; scripts/test.sh sets it under CI)"
  fi
fi

# Rewrite: the fsq under test, a temporary OUT, the shared folder, llama.cpp's tools.
# A value quoted for bash, then escaped for the right-hand side of sed's s###.
sed_value() { printf '%q' "$1" | sed -e 's/[\\&#]/\\&/g'; }
rewrite() {
  local q_fsq q_work q_shared q_llama
  q_fsq="$(sed_value "$fsq")"
  q_work="$(sed_value "$work")"
  q_shared="$(sed_value "$shared")"
  q_llama="$(sed_value "${FSQ_LLAMA_CPP_BIN:-}")"
  sed -e "s#^FSQ=.*#FSQ=$q_fsq#" -e "s#^OUT=.*#OUT=$q_work#" -e "s#\\.\\./shared/#$q_shared/#g" |
    if [[ -n ${FSQ_LLAMA_CPP_BIN:-} ]]; then
      sed -e "s#^LLAMA=.*#LLAMA=$q_llama#"
    else
      grep -v -E '^LLAMA=|\$LLAMA|\$\{LLAMA\}' || true
    fi
}
# Backslash-continued lines joined, so that each command is one line.
joined() { sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}'; }

script="$work/example.sh"
{
  echo "set -euo pipefail"
  printf '%s\n' "$prelude" "$code" | rewrite
} >"$script"
[[ $(grep -c '^FSQ=' "$script") -ge 1 ]] || fail "the example defines no FSQ= line to point at the fsq under test"
[[ $(grep -c '^OUT=' "$script") -ge 1 ]] || fail "the example defines no OUT= line for its outputs"
echo "readme-example: running README.md's $name block from $root:"
sed 's/^/  | /' "$script"

log="$work/example.log"
set +e
(cd "$root" && FSQ_BIN="$fsq" bash "$script") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
[[ $rc == 0 ]] || fail "README.md's $name block failed (exit $rc)"

# Every "$OUT/..." path the block names exists.
mapfile -t outs < <(printf '%s\n' "$code" | grep -oE '"\$OUT/[^"]+"' | sed -E 's/^"\$OUT\/(.*)"$/\1/' | sort -u)
[[ ${#outs[@]} -gt 0 ]] || fail "the block writes nothing under \$OUT"
for o in "${outs[@]}"; do
  [[ -e $work/$o ]] || fail "the block names \$OUT/$o but did not write it"
done

# Every fsq eval report (--json) has a finite, positive perplexity.
mapfile -t reports < <(printf '%s\n' "$code" | joined | grep -E '(fsq|\$FSQ"?) eval ' |
  grep -oE -- '--json "\$OUT/[^"]+"' | sed -E 's/^--json "\$OUT\/(.*)"$/\1/')
[[ ${#reports[@]} -gt 0 ]] || fail "the block runs no fsq eval with --json"
for r in "${reports[@]}"; do
  python3 - "$work/$r" <<'PY' || fail "the eval report $r has no finite perplexity"
import json, math, sys
report = json.load(open(sys.argv[1]))
ppl = report["perplexity"]["ppl"]
print(f"readme-example: {sys.argv[1].rsplit('/', 1)[-1]}: perplexity {ppl:.4f}")
sys.exit(0 if isinstance(ppl, (int, float)) and math.isfinite(ppl) and ppl > 0 else 1)
PY
done

# llama.cpp's own perplexity of fsq's GGUF, when its line ran.
if grep -q 'llama-perplexity' "$script"; then
  ppl="$(grep -oE 'Final estimate: PPL = [0-9.]+' "$log" | grep -oE '[0-9.]+$' | tail -n 1 || true)"
  [[ -n $ppl ]] || fail "llama-perplexity printed no final estimate"
  awk -v p="$ppl" 'BEGIN { exit !(p > 0 && p < 1e30) }' || fail "llama-perplexity's estimate $ppl is not finite"
  echo "readme-example: llama-perplexity on fsq's GGUF: PPL $ppl"
fi
echo "readme-example: README.md's $name block ran and wrote what it names"
