#!/usr/bin/env bash
# An fsq plan executed on llama.cpp's distributed (RPC) backend, on loopback: SmolLM2-135M
# planned over three small CPU "devices" (fsq plan, a 3-stage pipeline), exported as a mixed
# GGUF with its launch script (fsq export --plan --emit-launch), then run twice with
# llama-perplexity and with llama-completion (greedy, 32 tokens): through three
# ggml-rpc-server processes on 127.0.0.1 (the launch script) and as one process. Checks that
# llama.cpp put each stage's layers on that stage's server, that both runs give the same
# perplexity and that both generate the same greedy tokens; prints both. Network traffic stays on
# 127.0.0.1, every process runs under a timeout, and the servers stop with the script.
#
#   scripts/rpc-loopback.sh            (FSQ_CHUNKS=4 windows of FSQ_CTX=512 tokens)
#   scripts/rpc-loopback.sh --ctest    as ctest runs it: exit 77 (skipped) when FSQ_LLAMA_CPP_BIN
#                                      is unset; FSQ_BIN and FSQ_LLAMA_CPP_BIN replace the builds
#
# Weight repacking (llama.cpp's CPU-only interleaved layouts) is turned off in the single
# process (--no-repack): RPC servers keep the plain layouts, and repacked kernels round
# differently, so only like-for-like kernels can be compared exactly.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chunks="${FSQ_CHUNKS:-4}"
ctx="${FSQ_CTX:-512}"
text="${FSQ_TEXT:-$root/../shared/data/wikitext-2-raw/wiki.test.raw}"
if [[ ${1:-} == --ctest && -z ${FSQ_LLAMA_CPP_BIN:-} ]]; then
  echo "rpc-loopback: FSQ_LLAMA_CPP_BIN is not set (scripts/test.sh sets it under CI): skipped"
  exit 77
fi
fsq="${FSQ_BIN:-$("$root/scripts/build-fsq.sh" rpc-loopback)}"
llama="${FSQ_LLAMA_CPP_BIN:-$("$root/scripts/llama-cpp.sh" | tail -n 1)}"
source_gguf="$(FSQ_BIN="$fsq" "$root/scripts/fetch-model.sh" smollm2-135m | tail -n 1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

run() {  # log command...
  local log="$1"; shift
  timeout 600 "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; echo "rpc-loopback: failed: $*" >&2; exit 1; }
}

head -c 400000 "$text" >"$work/text.txt"
tail -c 200000 "$text" >"$work/calib.txt"
run "$work/calibrate.log" "$fsq" calibrate --model "$source_gguf" --data "$work/calib.txt" --samples 16 \
  --seq-len 512 --progress off --out "$work/calib.safetensors"

# Three small CPU-like devices on three nodes: the planner must split the 30 layers.
run "$work/plan.log" "$fsq" plan --model "$source_gguf" --calib "$work/calib.safetensors" \
  --cluster "$root/scripts/plans/three-cpu-nodes.json" --gpu-specs "$root/scripts/plans/cpu-core-specs.json" \
  --bits 3,4,8 --batch 4 --prompt-len 128 --new-tokens 32 --quality-of 4 --target-bits 5 \
  --out "$work/plan.json"
read -r -a stage_layers <<<"$(python3 -c "import json,sys; print(*[s['layers'] for s in json.load(open(sys.argv[1]))['plan']['stages']])" "$work/plan.json")"
(( ${#stage_layers[@]} == 3 )) && (( stage_layers[0] > 0 && stage_layers[1] > 0 && stage_layers[2] > 0 )) ||
  { cat "$work/plan.log" >&2; echo "rpc-loopback: the plan does not use three stages" >&2; exit 1; }

run "$work/export.log" "$fsq" export --format gguf --plan "$work/plan.json" --calib "$work/calib.safetensors" \
  --emit-launch "$work/launch.sh" --progress off "$source_gguf" "$work/planned.gguf"

args=(-f "$work/text.txt" -c "$ctx" --chunks "$chunks" -t 1)
run "$work/single.log" "$llama/llama-perplexity" -m "$work/planned.gguf" "${args[@]}" --no-repack
port_base=$((20000 + RANDOM % 20000))
run "$work/rpc.log" env LLAMA_BIN="$llama" LLAMA_TOOL=llama-perplexity PORT_BASE="$port_base" \
  bash "$work/launch.sh" "${args[@]}" -v

# Greedy decoding (temperature 0) of one prompt, as one process and through the servers.
# llama-completion writes the prompt and its continuation to stdout, its log to stderr; the
# same text from the same prompt and tokenizer means the same tokens.
gen=(-p "Once upon a time, in a small village," -n 32 --temp 0 -no-cnv -t 1 --no-warmup --seed 1)
generate() {  # name command...
  local name="$1"; shift
  timeout 600 "$@" >"$work/$name.txt" 2>"$work/$name.log" </dev/null ||
    { tail -n 20 "$work/$name.log" >&2; echo "rpc-loopback: failed: $*" >&2; exit 1; }
}
generate single-gen "$llama/llama-completion" -m "$work/planned.gguf" "${gen[@]}" --no-repack
generate rpc-gen env LLAMA_BIN="$llama" LLAMA_TOOL=llama-completion PORT_BASE="$((port_base + 10))" \
  bash "$work/launch.sh" "${gen[@]}"
single_text="$(cat "$work/single-gen.txt")"
rpc_text="$(cat "$work/rpc-gen.txt")"

single="$(grep -o 'Final estimate: PPL = [0-9.]*' "$work/single.log" | awk '{print $NF}')"
rpc="$(grep -o 'Final estimate: PPL = [0-9.]*' "$work/rpc.log" | awk '{print $NF}')"
placed=()
# Each placement line may be logged more than once (llama.cpp logs a fitting pass too).
grep -o 'layer *[0-9]* assigned to device RPC[0-9]*' "$work/rpc.log" | tr -s ' ' | sort -u >"$work/placed.txt"
for d in 0 1 2; do placed+=("$(grep -c "device RPC$d\$" "$work/placed.txt" || true)"); done

echo "plan: $(sed -n '3,6p' "$work/plan.log" | tr -s ' ' | paste -sd ';')"
echo "export: $(tail -n 2 "$work/export.log" | paste -sd ' ')"
echo "layers per RPC server: ${placed[*]} (plan: ${stage_layers[*]}, the last server also holds the output layer)"
echo "llama-perplexity -c $ctx --chunks $chunks: one process $single, three RPC servers on 127.0.0.1 $rpc"
[[ ${placed[0]} == "${stage_layers[0]}" && ${placed[1]} == "${stage_layers[1]}" &&
   ${placed[2]} == $((stage_layers[2] + 1)) ]] || { echo "rpc-loopback: layer placement differs from the plan" >&2; exit 1; }
echo "llama-completion greedy 32 tokens, one process: $(printf '%s' "$single_text" | tr '\n' ' ')"
echo "                 three RPC servers on 127.0.0.1: $(printf '%s' "$rpc_text" | tr '\n' ' ')"
[[ -n $single && $single == "$rpc" ]] || { echo "rpc-loopback: perplexities differ" >&2; exit 1; }
# The prompt alone would compare equal too: something must have been generated.
(( ${#single_text} > ${#gen[1]} )) || { echo "rpc-loopback: llama-completion generated nothing" >&2; exit 1; }
[[ $single_text == "$rpc_text" ]] || { echo "rpc-loopback: greedy generations differ" >&2; exit 1; }
echo "rpc-loopback: OK"
