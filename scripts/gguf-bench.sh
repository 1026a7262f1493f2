#!/usr/bin/env bash
# llama-bench on fsq's GGUF exports beside llama-quantize's of the same type, in one llama-bench
# run (tg64 decode and pp512 prefill tokens/s): the block layouts are llama.cpp's own, so the
# speeds must be equal within noise. Reads the files scripts/gguf-compare.sh left in its work
# folder.
#   scripts/gguf-bench.sh                 (FSQ_GGUF_TYPES="Q4_0 Q4_K", FSQ_REPS=5, FSQ_THREADS=nproc)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
types="${FSQ_GGUF_TYPES:-Q4_0 Q4_K}"
reps="${FSQ_REPS:-5}"
threads="${FSQ_THREADS:-$(nproc)}"
llama="${FSQ_LLAMA_CPP_BIN:-$("$root/scripts/llama-cpp.sh" | tail -n 1)}"
work="${FSQ_WORK_DIR:-$HOME/.cache/fsq/models/smollm2-135m/gguf-compare/run}"
for t in $types; do
  models=()
  # (earlier runs of gguf-compare.sh named llama-quantize's files llama-T and llama-imatrix-T)
  for who in llama-quantize llama llama-quantize-imatrix llama-imatrix fsq fsq-calib fsq-calib-awq; do
    if [[ -f "$work/$who-$t.gguf" ]]; then models+=(-m "$work/$who-$t.gguf"); fi
  done
  (( ${#models[@]} > 0 )) || { echo "gguf-bench: no $t files in $work (run scripts/gguf-compare.sh)" >&2; exit 1; }
  echo "## $t ($threads threads, $reps repetitions)"
  "$llama/llama-bench" "${models[@]}" -p 512 -n 64 -r "$reps" -t "$threads" -o json 2>/dev/null >"$work/bench-$t.json"
  python3 - "$work/bench-$t.json" <<'PY'
import json, os, sys
rows = json.load(open(sys.argv[1]))
print(f"{'file':<32} {'bytes':>11} {'pp512 t/s':>16} {'tg64 t/s':>16}")
files = []
for r in rows:
    if r["model_filename"] not in files:
        files.append(r["model_filename"])
for f in files:
    cell = {}
    for r in rows:
        if r["model_filename"] == f:
            key = "pp" if r["n_prompt"] > 0 else "tg"
            cell[key] = f"{r['avg_ts']:.1f} +- {r['stddev_ts']:.1f}"
    print(f"{os.path.basename(f):<32} {os.path.getsize(f):>11} {cell.get('pp', '-'):>16} {cell.get('tg', '-'):>16}")
PY
done
