#!/usr/bin/env bash
# End-to-end speed benchmark: `fsq eval --speed-only` on stories260K and on any model
# directories given as arguments. Prints load time, prefill tok/s (128, 512 tokens),
# decode tok/s (batch 1, batch 8) and peak RSS per model, all measured in this run.
# A model is a folder (Hugging Face or fsq packed) or a .gguf file.
#
#   scripts/bench.sh [MODEL_DIR|MODEL.gguf...]
#   FSQ_BUILD_DIR=build-rel FSQ_THREADS=4 FSQ_DEVICE=cuda scripts/bench.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${FSQ_SHARED_DIR:-$root/../shared}"
threads="${FSQ_THREADS:-$(nproc)}"
device="${FSQ_DEVICE:-cpu}"
dtype="${FSQ_DTYPE:-f32}"

fsq="$("$root/scripts/build-fsq.sh" bench)"

models=("$shared/models/stories260K" "$@")
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "fsq $("$fsq" --version | awk '{print $2}') speed benchmark: device $device, dtype $dtype, $threads threads, $(nproc) cores"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
printf '%-28s %9s %12s %12s %12s %12s %10s\n' model "load s" "prefill128" "prefill512" "decode b1" "decode b8" "peak MiB"
for m in "${models[@]}"; do
  if [[ -d "$m" ]]; then
    name="$(basename "$m")"
  elif [[ -f "$m" && "$m" == *.gguf ]]; then
    name="$(basename "$m" .gguf)"
  else
    echo "bench: $m is neither a model folder nor a .gguf file" >&2
    exit 2
  fi
  out="$tmp/$name.txt"
  "$fsq" eval --model "$m" --speed-only --threads "$threads" --device "$device" --dtype "$dtype" \
    --progress off >"$out"
  # Reads fsq's text report (lines "runtime ... load X s", "prefill N tokens: X tok/s",
  # "decode batch B: X tok/s", "peak RSS X MiB").
  awk -v name="$name" '
    /^runtime/ { for (i = 1; i <= NF; i++) if ($i == "load") load = $(i + 1) }
    /^prefill/ { n++; len[n] = $2; pre[n] = $4 }
    /^decode/  { b = $3; sub(":", "", b); dec[b] = $4 }
    /^peak RSS/ { rss = $3 }
    END {
      p1 = n >= 1 ? pre[1] : "-"; p2 = n >= 2 ? pre[2] : "-"
      printf "%-28s %9s %12s %12s %12s %12s %10s\n", name, load, p1, p2,
             (1 in dec) ? dec[1] : "-", (8 in dec) ? dec[8] : "-", rss
      if (n >= 1 && len[n] != 512) printf "  (prefill lengths capped at max_position_embeddings: %s)\n", len[n]
    }' "$out"
done
echo "tok/s: prefill = prompt tokens per second of one forward pass; decode = generated tokens"
echo "per second summed over the batch (64 steps after a 16-token prompt, KV cache); medians after warm-up."
