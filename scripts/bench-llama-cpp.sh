#!/usr/bin/env bash
# fsq against llama.cpp on SmolLM2-135M, measured in one run on this machine: llama-bench
# (tg64 decode, pp512 prefill) on F32 and Q4_0 GGUFs made with llama-quantize from the
# fetched source GGUF, beside `fsq eval --speed-only` (decode batch 1 over 64 steps, prefill
# 512) on the f32 model and fsq checkpoints (W4 g128 RTN, and W8A8 next to llama.cpp's Q8_0),
# at 1 and 2 threads; prints tokens/s and the fsq / llama.cpp ratio per row.
#
# Then the wall time of a perplexity run, FSQ_PPL_WINDOWS (16) windows of 2048 tokens of
# TinyStories: `llama-perplexity -c 2048 --chunks N` against `fsq eval --protocol llama.cpp
# --seq-len 2048 --max-windows N --no-speed` (the same scoring: second half of each window),
# on the F32 and Q4_0 / w4g128 models, at the largest thread count (FSQ_PPL_WINDOWS=0 skips).
#
#   scripts/bench-llama-cpp.sh          (FSQ_THREADS_LIST="1 2", FSQ_REPS=5, FSQ_PPL_WINDOWS=16)
#
# Run it on a quiet machine: with other work on 2 cores, OpenMP and ggml threads wait for
# time slices and every number drops.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads_list="${FSQ_THREADS_LIST:-1 2}"
reps="${FSQ_REPS:-5}"
ppl_windows="${FSQ_PPL_WINDOWS:-16}"
text="$root/../shared/data/tinystories/tinystories_val.txt"
fsq="$("$root/scripts/build-fsq.sh" bench-llama-cpp)"
llama="$("$root/scripts/llama-cpp.sh" | tail -n 1)"
source_gguf="$(FSQ_BIN="$fsq" "$root/scripts/fetch-model.sh" smollm2-135m | tail -n 1)"
hf="$(dirname "$source_gguf")/hf"
cache="$(dirname "$source_gguf")/bench"
mkdir -p "$cache"

# GGUFs for llama.cpp (F32 dequantizes the source exactly; Q4_0 and Q8_0 are made from F32).
make_gguf() {  # type from
  local out="$cache/smollm2-$1.gguf"
  if [[ ! -f $out ]]; then
    "$llama/llama-quantize" --allow-requantize "$2" "$out.tmp" "$1" >"$cache/quantize-$1.log" 2>&1 ||
      { tail -n 20 "$cache/quantize-$1.log" >&2; exit 1; }
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}
f32_gguf="$(make_gguf F32 "$source_gguf")"
q4_gguf="$(make_gguf Q4_0 "$f32_gguf")"
q8_gguf="$(make_gguf Q8_0 "$f32_gguf")"

# fsq checkpoints (RTN: the kernels' speed does not depend on how the codes were chosen),
# cached under a key of the fsq build and the options: a checkpoint another build wrote
# (another default --head-bits, say) is never timed by mistake.
make_fsq() {  # name quantize-args...
  local key
  key="$( (echo "$("$fsq" --version)"; echo "$@") | sha256sum | cut -c1-12)"
  local out="$cache/fsq-$1-$key"; shift
  [[ -f $out/fsq.json ]] || "$fsq" quantize --model "$hf" --out "$out" "$@" --progress off >/dev/null
  echo "$out"
}
w4="$(make_fsq w4g128 --method rtn --bits 4 --group-size 128 --head-bits 8)"
w8a8="$(make_fsq w8a8 --method w8a8 --calib-data "$root/../shared/data/tinystories/tinystories_val.txt" \
  --samples 8 --seq-len 256)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
llama_tps() {  # gguf threads -> "tg pp"
  "$llama/llama-bench" -m "$1" -t "$2" -p 512 -n 64 -r "$reps" -o json 2>/dev/null >"$tmp/lb.json" ||
    { echo "bench-llama-cpp: llama-bench failed on $1" >&2; exit 1; }
  # Peak RSS of a decode-only run (tg64, one repetition), the process a user would compare.
  /usr/bin/time -f %M -o "$tmp/rss" "$llama/llama-bench" -m "$1" -t "$2" -p 0 -n 64 -r 1 >/dev/null 2>&1 ||
    { echo "bench-llama-cpp: llama-bench (decode only) failed on $1" >&2; exit 1; }
  python3 - "$tmp/lb.json" "$(tail -n 1 "$tmp/rss")" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
tg = next(r["avg_ts"] for r in rows if r["n_gen"] > 0)
pp = next(r["avg_ts"] for r in rows if r["n_prompt"] > 0)
print(f"{tg:.1f} {pp:.1f} {int(sys.argv[2]) / 1024:.0f}")
PY
}
fsq_tps() {  # model threads -> "tg pp"
  # A fresh report per row: a stale one from the row before must never be read.
  rm -f "$tmp/fsq.json"
  "$fsq" eval --model "$1" --speed-only --threads "$2" --progress off --json "$tmp/fsq.json" >/dev/null ||
    { echo "bench-llama-cpp: fsq eval failed on $1" >&2; exit 1; }
  python3 - "$tmp/fsq.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["speed"]
tg = next(d["tokens_per_s"] for d in s["decode"] if d["batch"] == 1)
pp = next(p["tokens_per_s"] for p in s["prefill"] if p["tokens"] == 512)
print(f"{tg:.1f} {pp:.1f} {r['peak_rss_bytes'] / 2**20:.0f}")
PY
}

echo "SmolLM2-135M: fsq $("$fsq" --version | awk '{print $2, $3, $4}') vs llama.cpp ($(head -n 1 "$llama/../VERSION"))"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
printf '%-8s %-3s | %-10s %9s %9s %7s | %-10s %9s %9s %7s | %7s %7s\n' precision thr "llama.cpp" "tg64" "pp512" \
  "RSS" fsq "decode" "pp512" "RSS" "tg x" "pp x"
for t in $threads_list; do
  for pair in "f32:$f32_gguf:$hf" "q4:$q4_gguf:$w4" "q8:$q8_gguf:$w8a8"; do
    IFS=: read -r label gguf model <<<"$pair"
    read -r ltg lpp lrss <<<"$(llama_tps "$gguf" "$t")"
    read -r ftg fpp frss <<<"$(fsq_tps "$model" "$t")"
    [[ -n $ltg && -n $ftg ]] || exit 1  # the failing side said why
    case $label in f32) ln=F32; fn=f32 ;; q4) ln=Q4_0; fn=w4g128 ;; q8) ln=Q8_0; fn=w8a8 ;; esac
    printf '%-8s %-3s | %-10s %9s %9s %7s | %-10s %9s %9s %7s | %7.2f %7.2f\n' "$label" "$t" "$ln" "$ltg" "$lpp" \
      "$lrss" "$fn" "$ftg" "$fpp" "$frss" "$(python3 -c "print($ftg / $ltg)")" "$(python3 -c "print($fpp / $lpp)")"
  done
done
echo "tok/s; llama.cpp: llama-bench averages of $reps runs; fsq: medians after warm-up (fsq eval --speed-only)"
echo "RSS: peak MiB; llama.cpp: llama-bench decoding 64 tokens alone; fsq: the whole eval --speed-only run"
# What any fsq process holds before it reads a model (LibTorch and its libraries loaded).
/usr/bin/time -f %M -o "$tmp/floor" "$fsq" --version >/dev/null
echo "  (fsq --version alone peaks at $(( $(tail -n 1 "$tmp/floor") / 1024 )) MiB: the libraries' share of fsq's RSS)"
echo "fsq w4g128: RTN, g64 where 128 does not divide a row, embedding/head w8g64s (--head-bits 8);"
echo "  its prompts and decode steps multiply on int8 activations per 32 columns (fsq's defaults, as Q4_0 x Q8_0)"

[[ $ppl_windows -gt 0 ]] || exit 0
ppl_threads="$(tr ' ' '\n' <<<"$threads_list" | sort -n | tail -n 1)"
timed() {  # log command... -> wall seconds (the log keeps the output)
  local log="$1"; shift
  local start end
  start="$(date +%s.%N)"
  "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; echo "bench-llama-cpp: failed: $*" >&2; exit 1; }
  end="$(date +%s.%N)"
  python3 -c "print(f'{$end - $start:.1f}')"
}
echo
echo "perplexity wall time: $ppl_windows windows of 2048 tokens of $(basename "$text"), $ppl_threads threads"
printf '%-9s | %-10s %9s %9s | %-10s %9s %9s | %7s\n' precision "llama.cpp" "seconds" "ppl" fsq "seconds" "ppl" \
  "time x"
# q4-f32act: the same W4 checkpoint with exact (f32) prefill activations, for the price of them.
for pair in "f32:$f32_gguf:$hf:int8" "q4:$q4_gguf:$w4:int8" "q4-f32act:$q4_gguf:$w4:f32"; do
  IFS=: read -r label gguf model acts <<<"$pair"
  if [[ $label != q4-f32act ]]; then  # llama.cpp's Q4_0 row is the same for both fsq rows
    ls="$(timed "$tmp/lp.log" "$llama/llama-perplexity" -m "$gguf" -f "$text" -c 2048 --chunks "$ppl_windows" \
      -t "$ppl_threads")"
    lppl="$(grep -o 'Final estimate: PPL = [0-9.]*' "$tmp/lp.log" | awk '{print $NF}')"
  fi
  fs="$(timed "$tmp/fp.log" "$fsq" eval --model "$model" --data "$text" --protocol llama.cpp --seq-len 2048 \
    --max-windows "$ppl_windows" --no-speed --threads "$ppl_threads" --progress off --prefill-activations "$acts")"
  fppl="$(awk '/^perplexity/ {print $2; exit}' "$tmp/fp.log")"
  case $label in f32) ln=F32; fn=f32 ;; q4) ln=Q4_0; fn=w4g128 ;; q4-f32act) ln=Q4_0; fn=w4g128 ;; esac
  printf '%-9s | %-10s %9s %9s | %-10s %9s %9s | %7.2f\n' "$label" "$ln" "$ls" "$lppl" "$fn" "$fs" "$fppl" \
    "$(python3 -c "print($fs / $ls)")"
done
echo "seconds: whole process wall time, model load included; time x = fsq / llama.cpp (below 1: fsq faster)"
