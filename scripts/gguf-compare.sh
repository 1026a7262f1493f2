#!/usr/bin/env bash
# fsq's GGUF export against llama-quantize, measured inside llama.cpp, on SmolLM2-135M.
# One run, one source, one text, one protocol: the F32 GGUF (the exact dequantization of the
# fetched Q4_1 file) is quantized per type four ways:
#   llama-quantize                    plain
#   llama-quantize --imatrix          llama-imatrix on the calibration text
#   fsq export                        fsq's block search, no calibration (magnitude weights)
#   fsq export --calib                weighted by E[x^2] from fsq calibrate on the same text
#   fsq export --calib --awq          and activation-aware column scales folded into the norms
# (Q4_K and Q3_K are llama-quantize's Q4_K_M and Q3_K_M mixes; fsq follows the same per-tensor
# types, with and without an importance matrix, so each pair of files has the same size)
# and each file is scored by llama-perplexity against the F32 logits (--kl-divergence-base):
# perplexity, mean KL divergence, top-1 agreement ("same top p"), bits/weight, file size.
# Then `fsq eval --protocol llama.cpp` on fsq's first file checks that fsq reads its own
# export as llama.cpp does (same windows).
#
# Text: wikitext-2 test, split at a line boundary: the first 80 % is evaluated, the rest
# calibrates (llama-imatrix and fsq calibrate: FSQ_CALIB_CHUNKS windows of 512 tokens).
# Protocol: llama-perplexity -c FSQ_CTX (2048) --chunks FSQ_CHUNKS (16): each chunk scores its
# second half.
#
#   scripts/gguf-compare.sh                       (FSQ_GGUF_TYPES="Q4_0 IQ4_NL Q4_K Q3_K")
#   FSQ_GGUF_TYPES="Q4_0 Q4_1 Q5_0 Q5_1 IQ4_NL Q8_0" FSQ_CHUNKS=8 scripts/gguf-compare.sh
#   FSQ_QUANTIZERS="llama-quantize+imatrix fsq+calib+awq" scripts/gguf-compare.sh   (a subset of rows)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
types="${FSQ_GGUF_TYPES:-Q4_0 IQ4_NL Q4_K Q3_K}"
quantizers="${FSQ_QUANTIZERS:-llama-quantize llama-quantize+imatrix fsq fsq+calib fsq+calib+awq}"
chunks="${FSQ_CHUNKS:-16}"
ctx="${FSQ_CTX:-2048}"
calib_chunks="${FSQ_CALIB_CHUNKS:-64}"
threads="${FSQ_THREADS:-$(nproc)}"
text="${FSQ_TEXT:-$root/../shared/data/wikitext-2-raw/wiki.test.raw}"
fsq="$("$root/scripts/build-fsq.sh" gguf-compare)"
llama="$("$root/scripts/llama-cpp.sh" | tail -n 1)"
source_gguf="$(FSQ_BIN="$fsq" "$root/scripts/fetch-model.sh" smollm2-135m | tail -n 1)"
cache="$(dirname "$source_gguf")/gguf-compare"
work="${FSQ_WORK_DIR:-$cache/run}"
mkdir -p "$cache" "$work"

f32="$cache/smollm2-F32.gguf"
if [[ ! -f $f32 ]]; then
  "$llama/llama-quantize" --allow-requantize "$source_gguf" "$f32.tmp" F32 >"$work/f32.log" 2>&1 ||
    { tail -n 20 "$work/f32.log" >&2; exit 1; }
  mv "$f32.tmp" "$f32"
fi

python3 - "$text" "$work/eval.txt" "$work/calib.txt" <<'PY'
import sys
src, head, tail = sys.argv[1:4]
lines = open(src, encoding="utf-8").read().split("\n")
total, acc = sum(len(l) + 1 for l in lines), 0
for i, l in enumerate(lines):
    acc += len(l) + 1
    if acc >= 0.8 * total:
        break
open(head, "w", encoding="utf-8").write("\n".join(lines[: i + 1]) + "\n")
open(tail, "w", encoding="utf-8").write("\n".join(lines[i + 1 :]))
PY

run() {  # log command...: runs quietly, shows the log's tail on failure
  local log="$1"; shift
  "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; echo "gguf-compare: failed: $*" >&2; exit 1; }
}

imatrix="$work/imatrix.dat"
calib="$work/calib.safetensors"
start=$SECONDS
run "$work/imatrix.log" "$llama/llama-imatrix" -m "$f32" -f "$work/calib.txt" -o "$imatrix" -c 512 \
  --chunks "$calib_chunks" -t "$threads"
imatrix_s=$((SECONDS - start)); start=$SECONDS
run "$work/calibrate.log" "$fsq" calibrate --model "$f32" --data "$work/calib.txt" --samples "$calib_chunks" \
  --seq-len 512 --allow-overlap --threads "$threads" --progress off --force --out "$calib"
calib_s=$((SECONDS - start))

base="$work/base.kld"
run "$work/base.log" "$llama/llama-perplexity" -m "$f32" -f "$work/eval.txt" -c "$ctx" --chunks "$chunks" \
  -t "$threads" --kl-divergence-base "$base"
base_ppl="$(grep -o 'Final estimate: PPL = [0-9.]*' "$work/base.log" | awk '{print $NF}')"

bits_per_weight() {  # gguf -> tensor data bits per parameter (fsq inspect)
  "$fsq" inspect "$1" | awk '/^tensors/ {gsub(",", ""); printf "%.3f", 8 * $6 / $4}'
}

score() {  # gguf -> "ppl kld top1"
  local log="$work/score-$(basename "$1" .gguf).log"
  run "$log" "$llama/llama-perplexity" -m "$1" -f "$work/eval.txt" -c "$ctx" --chunks "$chunks" -t "$threads" \
    --kl-divergence-base "$base" --kl-divergence
  awk '$1 == "Mean" && $2 == "PPL(Q)" {p = $4} /^Mean +KLD:/ {k = $3} /^Same top p:/ {t = $4} END {print p, k, t}' "$log"
}

rows="$work/rows.txt"
: >"$rows"
make_file() {  # type quantizer file
  local t="$1" who="$2" f="$3" log="$work/q-$(basename "$3" .gguf).log"
  case $who in
    llama-quantize) run "$log" "$llama/llama-quantize" "$f32" "$f" "$t" "$threads" ;;
    llama-quantize+imatrix) run "$log" "$llama/llama-quantize" --imatrix "$imatrix" "$f32" "$f" "$t" "$threads" ;;
    fsq) run "$log" "$fsq" export --format gguf --type "$t" --threads "$threads" --progress off --force "$f32" "$f" ;;
    fsq+calib) run "$log" "$fsq" export --format gguf --type "$t" --calib "$calib" --threads "$threads" \
      --progress off --force "$f32" "$f" ;;
    fsq+calib+awq) run "$log" "$fsq" export --format gguf --type "$t" --calib "$calib" --awq --threads "$threads" \
      --progress off --force "$f32" "$f" ;;
    *) echo "gguf-compare: unknown quantizer $who" >&2; exit 1 ;;
  esac
}

for t in $types; do
  for who in $quantizers; do
    f="$work/${who//+/-}-$t.gguf"
    start=$SECONDS
    make_file "$t" "$who" "$f"
    secs=$((SECONDS - start))
    read -r ppl kld top1 <<<"$(score "$f")"
    printf '%-7s %-23s %8s %11s %9s %9s %7s %6s\n' "$t" "$who" "$(bits_per_weight "$f")" "$(stat -c %s "$f")" \
      "$ppl" "$kld" "$top1" "$secs" >>"$rows"
  done
done

# fsq reads its own export as llama.cpp does: same windows, llama.cpp protocol.
first="$(set -- $types; echo "$1")"
last_fsq="$(for q in $quantizers; do [[ $q == fsq* ]] && echo "$q"; done | tail -n 1)"
[[ -n $last_fsq ]] || { cat "$rows"; exit 0; }
check="$work/${last_fsq//+/-}-$first.gguf"
run "$work/fsq-eval.log" "$fsq" eval --model "$check" --data "$work/eval.txt" --protocol llama.cpp --seq-len "$ctx" \
  --max-windows "$chunks" --no-speed --threads "$threads" --progress off --force --json "$work/fsq-eval.json"
fsq_ppl="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['perplexity']['ppl'])" "$work/fsq-eval.json")"
llama_ppl="$(awk -v t="$first" -v f="$last_fsq" '$1 == t && $2 == f {print $5}' "$rows")"

echo "SmolLM2-135M (F32 = exact dequantization of the Q4_1 source), $(head -n 1 "$llama/../VERSION"), fsq $("$fsq" --version | awk '{print $2, $3, $4}')"
echo "eval: first 80 % of $(basename "$text"), llama-perplexity -c $ctx --chunks $chunks (second half of each chunk scored); F32 PPL $base_ppl"
echo "calibration: the last 20 %, $calib_chunks x 512 tokens (llama-imatrix ${imatrix_s} s, fsq calibrate ${calib_s} s)"
printf '%-7s %-23s %8s %11s %9s %9s %7s %6s\n' type quantizer bits/w bytes PPL KLD "top1 %" "s"
cat "$rows"
echo "fsq eval --protocol llama.cpp on $(basename "$check"): PPL $fsq_ppl vs llama-perplexity $llama_ppl ($(python3 -c "print(f'{100 * ($fsq_ppl / $llama_ppl - 1):+.3f} %')"))"
