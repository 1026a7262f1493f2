#!/usr/bin/env bash
# Quantization quality table: for one model, quantize with each method x bit width, then
# `fsq eval --compare` every result against the unquantized model on each text. Prints
# perplexity, mean KL divergence, top-1 agreement, bits per weight, file size and quantize
# wall time, all from this run (DESIGN.md protocols, FSQ_PROTOCOLS, default "gptq":
# non-overlapping windows; "gptq llama.cpp" adds a column group per protocol).
#
# Calibration comes from one text only, FSQ_CALIB_TEXT (default TinyStories): it is split
# at a line boundary, its first FSQ_EVAL_FRACTION (default 0.5: 16 windows of 2048 to
# evaluate, 128 x 512 tokens to calibrate) is evaluated and the rest is the calibration
# folder. Every other text of FSQ_TEXTS (default WikiText-2's test set) is evaluated whole
# and never calibrates: it measures quality on text the calibration never saw (issue 57).
# One row per configuration and text (the "text" column). FSQ_HALVES=1 also evaluates the
# first and second half of each other text ("wiki.test.raw:1/2", ":2/2"): choose a setting
# on the first half, report the second.
#
#   scripts/quant-table.sh MODEL_DIR
#   FSQ_CONFIGS="rtn:4:32 awq:4:32" FSQ_SEQ_LEN=256 FSQ_MAX_WINDOWS=64 scripts/quant-table.sh models/stories260K
#
# A config is method:bits:group, or for SqueezeLLM squeezellm:bits:VARIANT with VARIANT one
# of unweighted (plain k-means, dense only), dense (Fisher-weighted, dense only) or sparse
# (Fisher-weighted with the default 0.45 % sparse part). The Fisher diagonals come from one
# `fsq calibrate --fisher` on the calibration folder, timed separately ("fisher s").
#   FSQ_CONFIGS="awq:3:128 squeezellm:3:unweighted squeezellm:3:dense squeezellm:3:sparse" ...
# W8A8 methods (w8a8 = naive, smoothquant, intonly) take method:ACT:ALPHA, ACT per-token,
# per-block or per-tensor, ALPHA a number, auto, or - (naive W8A8 has none); the "bits"
# column shows ACT.
# With a fixed alpha they read one shared `fsq calibrate` file ("calibration pass", timed
# separately, like the Fisher pass); auto and intonly calibrate inside quantize.
#   FSQ_CONFIGS="w8a8:per-token:- smoothquant:per-token:0.5 smoothquant:per-token:auto" ...
# A fourth field gptq (smoothquant:per-token:0.7:gptq) adds --gptq: GPTQ int8 weights, which
# need calibration inputs, so that config calibrates inside quantize like auto. SqueezeLLM
# takes it too (squeezellm:4:sparse:gptq: the k-means centroids, GPTQ's codes), and so do
# rtn and awq (awq:4:128:gptq: GPTQ after AWQ's scales, on calibration text like AWQ's).
#
# Mixed precision (fsq plan): METHOD:plan:TARGET (METHOD awq, rtn or squeezellm) runs
# `fsq plan --calib` on the shared calibration file (LLM-PQ's variance indicator, widths 3
# and 4, and 8 above a 4-bit target) for TARGET average code bits, then quantizes with --plan; its bits/w is measured
# on the written file (fsq inspect). METHOD:linplan:TARGET plans one
# width per linear instead of per layer (fsq plan --per-linear).
#   FSQ_CONFIGS="awq:3:128 awq:plan:3.5 squeezellm:3:sparse squeezellm:plan:3.5 squeezellm:linplan:3.5" ...
#
# The unquantized model's scored logits are computed once per protocol and text and kept in
# the work folder (fsq eval --reference-cache), not recomputed for every checkpoint.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"
shared="${FSQ_SHARED_DIR:-$root/../shared}"
model="${1:?usage: scripts/quant-table.sh MODEL_DIR}"
threads="${FSQ_THREADS:-$(nproc)}"
configs="${FSQ_CONFIGS:-rtn:4:128 awq:4:128 rtn:3:128 awq:3:128}"   # method:bits:group
calib_text="${FSQ_CALIB_TEXT:-$shared/data/tinystories/tinystories_val.txt}"
texts="${FSQ_TEXTS:-$shared/data/wikitext-2-raw/wiki.test.raw}"   # evaluated, never calibrated on
halves="${FSQ_HALVES:-0}"
seq_len="${FSQ_SEQ_LEN:-2048}"
max_windows="${FSQ_MAX_WINDOWS:-0}"
samples="${FSQ_SAMPLES:-128}"
calib_seq="${FSQ_CALIB_SEQ_LEN:-512}"
fraction="${FSQ_EVAL_FRACTION:-0.5}"
protocols="${FSQ_PROTOCOLS:-gptq}"
work="${FSQ_WORK_DIR:-$(mktemp -d)}"
fsq="$build/tools/fsq/fsq"
[[ -x "$fsq" ]] || { echo "quant-table: build fsq first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$work/eval" "$work/calib" "$work/q" "$work/reports" "$work/refcache"

# The calibration text: head -> evaluation, tail -> calibration. The other texts: evaluated
# whole (and by halves with FSQ_HALVES=1).
split_text() {  # SRC FRACTION HEAD TAIL
  python3 - "$@" <<'PY'
import sys
src, frac, head, tail = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
data = open(src, "rb").read()
cut = data.rfind(b"\n", 0, int(len(data) * frac)) + 1
open(head, "wb").write(data[:cut]); open(tail, "wb").write(data[cut:])
PY
}
eval_files=()
calib_name="$(basename "$calib_text")"
split_text "$calib_text" "$fraction" "$work/eval/$calib_name" "$work/calib/$calib_name.txt"
eval_files+=("$work/eval/$calib_name")
for t in $texts; do
  name="$(basename "$t")"
  [[ $(realpath "$t") == $(realpath "$calib_text") ]] && { echo "quant-table: $t is the calibration text; give it as FSQ_CALIB_TEXT only" >&2; exit 1; }
  cp "$t" "$work/eval/$name"
  eval_files+=("$work/eval/$name")
  if [[ $halves == 1 ]]; then
    split_text "$t" 0.5 "$work/eval/$name.1of2" "$work/eval/$name.2of2"
    eval_files+=("$work/eval/$name.1of2" "$work/eval/$name.2of2")
  fi
done

echo "model $model; protocols $protocols, seq-len $seq_len, windows ${max_windows/#0/all}; threads $threads"
echo "calibration: $calib_name only, after its first $fraction ($samples x $calib_seq tokens, seed 42);" \
  "evaluated: $calib_name's first $fraction (:head) and $(for t in $texts; do basename "$t"; done | paste -sd, -) whole$([[ $halves == 1 ]] && echo ' and by halves')"
printf '%-6s %4s %5s %8s %10s %10s %-22s' method bits group "bits/w" "MiB" "quant s" text
for p in $protocols; do printf ' | %-28s' "$p: ppl  KL  top1"; done
echo
mib() { python3 -c 'import os,sys; print(os.path.getsize(sys.argv[1]) / 2**20)' "$1"; }
text_label() {  # an evaluated file's name in the text column
  local n; n="$(basename "$1")"
  case "$n" in
    "$calib_name") echo "$n:head" ;;
    *.1of2) echo "${n%.1of2}:1/2" ;;
    *.2of2) echo "${n%.2of2}:2/2" ;;
    *) echo "$n" ;;
  esac
}
row() {  # name dir bits group bpw seconds: one line per evaluated text
  for f in "${eval_files[@]}"; do
    printf '%-6s %4s %5s %8s %10.3f %10s %-22s' "$1" "$3" "$4" "$5" "$(mib "$2/model.safetensors")" "$6" "$(text_label "$f")"
    for p in $protocols; do
      local r="$work/reports/$1-$3-$4-$p-$(basename "$f").json"
      # f32 activations: the table measures the quantizers, each on its exact weights (the
      # runtime's int8 prefill activations, the default, add KL ~1 % to the uniform types only;
      # W8A8 linears quantize their activations whatever this flag says).
      "$fsq" eval --model "$2" --compare "$model" --data "$f" --protocol "$p" --seq-len "$seq_len" \
        --max-windows "$max_windows" --threads "$threads" --no-speed --progress off --json "$r" \
        --prefill-activations f32 \
        --reference-cache "$work/refcache" >/dev/null
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); p=r["perplexity"]; c=r["compare"]
print(" | %9.4f %8.5f %8.4f" % (p["ppl"], c["mean_kl"], c["top1_agreement"]), end="")' "$r"
    done
    echo
  done
}
fp_row() {
  for f in "${eval_files[@]}"; do
    printf '%-6s %4s %5s %8s %10.3f %10s %-22s' fp 32 - 32 "$(mib "$model/model.safetensors")" - "$(text_label "$f")"
    for p in $protocols; do
      local r="$work/reports/fp-$p-$(basename "$f").json"
      "$fsq" eval --model "$model" --data "$f" --protocol "$p" --seq-len "$seq_len" --max-windows "$max_windows" \
        --threads "$threads" --no-speed --progress off --json "$r" >/dev/null
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(" | %9.4f %8.5f %8.4f" % (r["perplexity"]["ppl"], 0, 1), end="")' "$r"
    done
    echo
  done
}
# FSQ_SKIP_FP=1: no fp row (its numbers do not change between runs of the same texts).
[[ ${FSQ_SKIP_FP:-0} == 1 ]] || fp_row
fisher="$work/fisher.safetensors"
stats="$work/stats.safetensors"
# One `fsq calibrate` on the calibration folder into FILE, unless FILE exists; timed apart from
# quantize and shared by every config that reads it.   calibrate_once FILE LABEL [FLAGS...]
calibrate_once() {
  local file="$1" label="$2"; shift 2
  [[ -f $file ]] && return 0
  local start; start=$(date +%s.%N)
  "$fsq" calibrate --model "$model" --data "$work/calib" "$@" --samples "$samples" --seq-len "$calib_seq" \
    --threads "$threads" --progress off --out "$file" >/dev/null
  echo "$label: $(python3 -c "print('%.1f' % ($(date +%s.%N) - $start))") s ($samples x $calib_seq tokens)"
}
for c in $configs; do
  IFS=: read -r method bits group extra <<<"$c"
  out="$work/q/$method-w$bits-g$group${extra:+-$extra}"
  rm -rf "$out" "$out.partial"
  calib=(); [[ $method != rtn ]] && calib=(--calib-data "$work/calib" --samples "$samples" --seq-len "$calib_seq")
  shape=(--group-size "$group")
  plan_flags=()
  is_plan=false; [[ $bits == plan || $bits == linplan ]] && is_plan=true
  if $is_plan; then
    calibrate_once "$stats" "calibration pass"
    plan="$work/$bits-$method-$group.json"
    widths=3,4; python3 -c 'import sys; sys.exit(float(sys.argv[1]) <= 4)' "$group" && widths=3,4,8
    per_linear=(); [[ $bits == linplan ]] && per_linear=(--per-linear)
    "$fsq" plan --model "$model" --calib "$stats" --bits "$widths" --target-bits "$group" "${per_linear[@]}" --force \
      --out "$plan" >/dev/null
    plan_flags=(--plan "$plan")
    shape=(--group-size 128)
  fi
  if [[ $method == w8a8 || $method == smoothquant || $method == intonly ]]; then
    shape=(--act-quant "$bits"); [[ $group != - ]] && shape+=(--alpha "$group")
    [[ ${extra:-} == gptq ]] && shape+=(--gptq)
    if [[ $method != intonly && $group != auto && ${extra:-} != gptq ]]; then
      calibrate_once "$stats" "calibration pass"
      shape+=(--calib "$stats"); calib=()
    fi
  elif [[ $method == squeezellm ]]; then
    calibrate_once "$fisher" "fisher pass" --fisher
    variant="$group"; $is_plan && variant=sparse
    case "$variant" in
      unweighted) shape=(--unweighted --dense-only) ;;
      dense) shape=(--calib "$fisher" --dense-only) ;;
      sparse) shape=(--calib "$fisher") ;;
      *) echo "quant-table: unknown squeezellm variant '$group' (unweighted, dense or sparse)" >&2; exit 1 ;;
    esac
    # gptq: the codes chosen by GPTQ on calibration inputs run inside quantize (the Fisher
    # diagonals still come from the shared file).
    if [[ ${extra:-} == gptq ]]; then shape+=(--gptq); else calib=(); fi
  fi
  if [[ ${extra:-} == gptq && ($method == rtn || $method == awq) ]]; then
    shape+=(--gptq); calib=(--calib-data "$work/calib" --samples "$samples" --seq-len "$calib_seq")
  fi
  start=$(date +%s.%N)
  bits_flag=(--bits "$bits"); [[ ${shape[0]} == --act-quant ]] || $is_plan && bits_flag=()
  $is_plan && [[ $method == squeezellm ]] && shape=(--calib "$fisher")
  "$fsq" quantize --model "$model" --method "$method" "${bits_flag[@]}" "${plan_flags[@]}" "${shape[@]}" "${calib[@]}" \
    --threads "$threads" --progress off --out "$out" --json "$out.json" >/dev/null
  secs=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $start))")
  if $is_plan; then  # the quantize plan assumes one width: measure the file instead
    bpw=$("$fsq" inspect "$out" --json | python3 -c 'import json,sys; q=json.load(sys.stdin)["quantized"]
print("%.3f" % (sum(e["bits_per_weight"] * e["weights"] for e in q) / sum(e["weights"] for e in q)))')
  else
    bpw=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["plan"]["bits_per_weight"])' "$out.json")
  fi
  row "$method${extra:++$extra}" "$out" "$bits" "$group" "$bpw" "$secs"
done
echo "work folder: $work (packed checkpoints, reports)"
