#!/usr/bin/env bash
# fsq export --format compressed-tensors, checked with the format's own Python code and
# loaded by transformers on CPU (scripts/golden/check_compressed_tensors.py says what is
# checked). SmolLM2-135M is quantized five ways, exported, and compared on three prompts
# against `fsq generate --logits` of the packed checkpoint:
#   rtn w4g64 asymmetric and symmetric, awq w4g64 (float32 exports: the logits tolerance 1e-2
#   applies), rtn w4g64 asymmetric as float16 (what engines serve: greedy tokens must agree,
#   the logits differ by fp16 rounding of the dense tensors and the scale products), and a
#   3-stage mixed-precision plan (3/4/8 bits, symmetric, quantized with fsq quantize --plan) exported
#   with --emit-launch, whose vLLM launch script is checked with bash -n and whose
#   VLLM_PP_LAYER_PARTITION must equal the plan's stages. vLLM itself is not installable here
#   and is not run.
#
# Not part of CI: the venv holds PyPI's torch 2.10 with its CUDA libraries (about 7 GB, pinned
# below), which compressed-tensors 0.20 requires. Cached in $FSQ_CACHE (default ~/.cache/fsq).
#
#   scripts/check-compressed-tensors.sh        (FSQ_THREADS sets the threads, default nproc)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FSQ_CACHE:-$HOME/.cache/fsq}"
venv="$cache/ct-venv"
shared="${FSQ_SHARED_DIR:-$root/../shared}"
threads="${FSQ_THREADS:-$(nproc)}"

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import compressed_tensors, transformers" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "torch==2.10.0" "compressed-tensors==0.20.0" "transformers==5.24.0" "safetensors==0.8.0"
fi
fsq="${FSQ_BIN:-$("$root/scripts/build-fsq.sh" check-compressed-tensors)}"
FSQ_BIN="$fsq" "$root/scripts/fetch-model.sh" smollm2-135m >/dev/null
hf="$cache/models/smollm2-135m/hf"
[[ -f "$hf/model.safetensors" ]] || { echo "check-compressed-tensors: $hf is missing (fetch-model.sh)" >&2; exit 1; }
text="$shared/data/wikitext-2-raw/wiki.test.raw"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

run() {  # log command...
  local log="$1"; shift
  "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; echo "check-compressed-tensors: failed: $*" >&2; exit 1; }
}
prompts=("Once upon a time, there was a little" "The capital of France is" "def fibonacci(n):")

check() {  # NAME PACKED_DIR [export flags...]
  local name="$1" packed="$2"; shift 2
  run "$work/$name.export.log" "$fsq" export --format compressed-tensors "$@" "$packed" "$work/$name-ct"
  cat "$work/$name.export.log"
  local logits=()
  for i in "${!prompts[@]}"; do
    run "$work/$name.gen$i.log" "$fsq" generate --model "$packed" --prompt "${prompts[$i]}" -n 32 --threads "$threads" \
      --logits "$work/$name-prompt$i.safetensors"
    logits+=("$work/$name-prompt$i.safetensors")
  done
  echo "== $name"
  "$venv/bin/python" "$root/scripts/golden/check_compressed_tensors.py" "$packed" "$work/$name-ct" "${logits[@]}" 2>&1 |
    grep -E '^(ok|BAD)|Error'
  [[ "${PIPESTATUS[0]}" == 0 ]]
}

quantize() {  # NAME flags...
  local name="$1"; shift
  run "$work/$name.quantize.log" "$fsq" quantize --model "$hf" --threads "$threads" --progress off --out "$work/$name" "$@"
}

head -c 200000 "$text" >"$work/calib.txt"
quantize rtn-w4g64a --method rtn --bits 4 --group-size 64
quantize rtn-w4g64s --method rtn --bits 4 --group-size 64 --sym
quantize awq-w4g64a --method awq --bits 4 --group-size 64 --calib-data "$work/calib.txt" --samples 16 --seq-len 512
check rtn-w4g64a "$work/rtn-w4g64a" --model-dtype float32
check rtn-w4g64s "$work/rtn-w4g64s" --model-dtype float32
check awq-w4g64a "$work/awq-w4g64a" --model-dtype float32
FSQ_CT_MAX_ABS=0.1 check rtn-w4g64a-f16 "$work/rtn-w4g64a" --model-dtype float16

# A mixed plan over three small CPU-like devices (as scripts/rpc-loopback.sh makes it).
run "$work/calibrate.log" "$fsq" calibrate --model "$hf" --data "$work/calib.txt" --samples 16 --seq-len 512 \
  --progress off --out "$work/calib.safetensors"
run "$work/plan.log" "$fsq" plan --model "$hf" --calib "$work/calib.safetensors" \
  --cluster "$root/scripts/plans/three-cpu-nodes.json" --gpu-specs "$root/scripts/plans/cpu-core-specs.json" \
  --bits 3,4,8 --batch 4 --prompt-len 128 --new-tokens 32 --quality-of 4 --target-bits 5 \
  --out "$work/plan.json"
# Symmetric: transformers decodes asymmetric layers through one route that applies the first
# config group's scheme to all of them (compressed_tensors.h); vLLM matches per layer.
quantize plan-mixed --method rtn --group-size 64 --sym --plan "$work/plan.json"
check plan-mixed "$work/plan-mixed" --model-dtype float32 --plan "$work/plan.json" --emit-launch "$work/serve-vllm.sh"
bash -n "$work/serve-vllm.sh"
partition="$(sed -n 's/^export VLLM_PP_LAYER_PARTITION="\(.*\)"$/\1/p' "$work/serve-vllm.sh")"
stages="$(python3 -c "import json,sys; print(','.join(str(s['layers']) for s in json.load(open(sys.argv[1]))['plan']['stages'] if s['layers']))" "$work/plan.json")"
echo "plan widths: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['plan']['bits_per_layer'])" "$work/plan.json")"
echo "vLLM launch: $(grep -o 'serve .*' "$work/serve-vllm.sh")"
[[ "$partition" == "$stages" ]] || { echo "check-compressed-tensors: VLLM_PP_LAYER_PARTITION $partition, plan stages $stages" >&2; exit 1; }
echo "ok  VLLM_PP_LAYER_PARTITION=$partition equals the plan's stages; bash -n accepts the launch script (vLLM not run)"
echo "check-compressed-tensors: OK"
