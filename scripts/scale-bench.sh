#!/usr/bin/env bash
# fsq at the sizes users hold, on this machine: a random-weight checkpoint of a real shape
# (scripts/make-random-checkpoint.py, cached) through every command, one row per step: exit
# status, wall time, peak resident memory (total, anonymous, file-backed pages) and, for
# quantize, the memory its plan predicted. A benchmark, not a test: it prints what happened,
# including a run the memory limit stopped.
#   scripts/scale-bench.sh [PRESET]            (default llama-2-7b; --list: the presets)
#   FSQ_DTYPE      source dtype (bf16)            FSQ_LAYERS   fewer decoder layers (a quick look)
#   FSQ_STEPS      steps to run (default: all, in the order below)
#   FSQ_THREADS    threads (default: all cores)   FSQ_BIN      the fsq binary (default build/tools/fsq/fsq)
#   FSQ_DATA_LIMIT_GIB  RLIMIT_DATA per command (default: physical memory - 1.5 GiB), so that a
#                  run that would exhaust the machine fails with an allocation error instead of
#                  meeting the kernel's OOM killer
#   FSQ_CACHE      where generated checkpoints are kept (default ~/.cache/fsq)
# Text: ../shared/data/tinystories/tinystories_val.txt (evaluation: 2 windows of 512 tokens,
# calibration: 8 windows of 512 from its last 20 %). Results also go to WORK/results.jsonl.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
preset="${1:-llama-2-7b}"
if [ "$preset" = "--list" ]; then exec "$root/scripts/make-random-checkpoint.py" --list; fi
fsq="${FSQ_BIN:-$root/build/tools/fsq/fsq}"
[ -x "$fsq" ] || { echo "scale-bench: $fsq not built (scripts/build.sh)" >&2; exit 1; }
dtype="${FSQ_DTYPE:-bf16}"
threads="${FSQ_THREADS:-$(nproc)}"
text="$root/../shared/data/tinystories/tinystories_val.txt"
[ -f "$text" ] || { echo "scale-bench: $text is absent (the shared fixtures must sit beside the clone)" >&2; exit 1; }
mem_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
limit_gib="${FSQ_DATA_LIMIT_GIB:-$(awk -v k="$mem_kib" 'BEGIN {printf "%.1f", k / 1048576 - 1.5}')}"
cache="${FSQ_CACHE:-$HOME/.cache/fsq}/random"
name="$preset-$dtype${FSQ_LAYERS:+-l$FSQ_LAYERS}"
model="$cache/$name"
work="$(mktemp -d "${TMPDIR:-/tmp}/fsq-scale-$name-XXXX")"
results="$work/results.jsonl"
steps="${FSQ_STEPS:-generate inspect eval-source calibrate calibrate-fisher quantize-rtn eval-rtn quantize-gptq eval-gptq quantize-awq eval-awq quantize-squeezellm eval-squeezellm quantize-smoothquant eval-smoothquant quantize-plan eval-plan}"
size=$(stat -c %s "$text")
tail -c $((size / 5)) "$text" >"$work/calib.txt"
calib=(--calib-data "$work/calib.txt" --samples 8 --seq-len 512)
common=(--threads "$threads" --progress off)

# measure STEP COMMAND...: one result line, the command's output in WORK/STEP.log.
measure() {
  local step="$1"
  shift
  local line
  line=$("$root/scripts/measure-run.py" --data-limit-gib "$limit_gib" -- "$@" 2>"$work/$step.log") || true
  local predicted anonymous
  predicted=$(grep -o 'predicted peak memory: [0-9.]* MiB' "$work/$step.log" | head -1 | grep -o '[0-9.]*' || true)
  anonymous=$(grep -o 'predicted peak memory: [0-9.]* MiB: anonymous [0-9.]* MiB' "$work/$step.log" | head -1 |
    sed 's/.*anonymous //' | grep -o '[0-9.]*' || true)
  python3 -c 'import json, sys
r = json.loads(sys.argv[1]); r["step"] = sys.argv[2]
if sys.argv[3]: r["predicted_mib"] = float(sys.argv[3])
if sys.argv[4]: r["predicted_anon_mib"] = float(sys.argv[4])
print(json.dumps(r))' "$line" "$step" "$predicted" "$anonymous" >>"$results"
}

quantize_step() {  # quantize-METHOD OPTIONS...
  local step="$1"
  shift
  rm -rf "$work/${step#quantize-}" "$work/${step#quantize-}.partial"
  measure "$step" "$fsq" quantize --model "$model" --out "$work/${step#quantize-}" "${common[@]}" "$@"
}

for step in $steps; do
  echo "scale-bench: $step" >&2
  case "$step" in
    generate)
      if [ ! -d "$model" ]; then
        mkdir -p "$cache"
        measure generate "$root/scripts/make-random-checkpoint.py" --preset "$preset" --dtype "$dtype" \
          ${FSQ_LAYERS:+--layers "$FSQ_LAYERS"} --out "$model"
      fi ;;
    inspect) measure inspect "$fsq" inspect "$model" ;;
    eval-source)
      measure eval-source "$fsq" eval --model "$model" --data "$text" --seq-len 512 --max-windows 2 --no-speed "${common[@]}" ;;
    calibrate) measure calibrate "$fsq" calibrate --model "$model" --out "$work/stats.safetensors" --data "$work/calib.txt" \
      --samples 8 --seq-len 512 --force "${common[@]}" ;;
    calibrate-fisher) measure calibrate-fisher "$fsq" calibrate --model "$model" --out "$work/fisher.safetensors" \
      --data "$work/calib.txt" --samples 8 --seq-len 512 --fisher --force "${common[@]}" ;;
    quantize-rtn) quantize_step quantize-rtn --method rtn --bits 4 --group-size 128 ;;
    quantize-gptq) quantize_step quantize-gptq --method rtn --bits 4 --group-size 128 --gptq "${calib[@]}" ;;
    quantize-awq) quantize_step quantize-awq --method awq --bits 4 --group-size 128 "${calib[@]}" ;;
    quantize-squeezellm)
      if [ -f "$work/fisher.safetensors" ]; then
        quantize_step quantize-squeezellm --method squeezellm --bits 4 --calib "$work/fisher.safetensors"
      else
        quantize_step quantize-squeezellm --method squeezellm --bits 4 "${calib[@]}"
      fi ;;
    quantize-smoothquant) quantize_step quantize-smoothquant --method smoothquant --alpha 0.5 "${calib[@]}" ;;
    quantize-plan)
      layers=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["num_hidden_layers"])' "$model/config.json")
      python3 -c 'import json, sys; n = int(sys.argv[1]); print(json.dumps({"plan": {"bits_per_layer": [8 if i in (0, n - 1) else (3 if i % 2 else 4) for i in range(n)]}}))' \
        "$layers" >"$work/plan.json"
      quantize_step quantize-plan --method rtn --group-size 128 --plan "$work/plan.json" ;;
    eval-*)
      packed="$work/${step#eval-}"
      if [ -d "$packed" ]; then
        measure "$step" "$fsq" eval --model "$packed" --data "$text" --seq-len 512 --max-windows 2 --no-speed "${common[@]}"
      else
        echo "{\"step\": \"$step\", \"exit\": \"no checkpoint\"}" >>"$results"
      fi ;;
    *) echo "scale-bench: unknown step $step" >&2; exit 2 ;;
  esac
done

python3 - "$results" "$name" "$threads" "$limit_gib" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"fsq scale bench: {sys.argv[2]} (random weights), {sys.argv[3]} threads, RLIMIT_DATA {sys.argv[4]} GiB")
# plan: quantize's predicted peak RSS, plan anon: its predicted anonymous memory (what
# --max-memory limits); the ratios are measured / predicted (at most 1 where the plan holds).
print(f"{'step':22s} {'exit':>10s} {'seconds':>9s} {'peak GiB':>9s} {'anon GiB':>9s} {'file GiB':>9s} "
      f"{'plan GiB':>9s} {'meas/plan':>9s} {'plan anon':>9s} {'anon/plan':>9s}")
gib = lambda mib: f"{mib / 1024:9.2f}" if mib is not None else f"{'':9s}"
ratio = lambda a, b: f"{a / b:9.2f}" if a and b else f"{'':9s}"
for r in rows:
    pred, anon = r.get("predicted_mib"), r.get("predicted_anon_mib")
    print(f"{r['step']:22s} {str(r.get('exit')):>10s} {r.get('seconds', 0):9.1f} {gib(r.get('peak_rss_mib'))} "
          f"{gib(r.get('peak_anon_mib'))} {gib(r.get('peak_file_mib'))} {gib(pred)} {ratio(r.get('peak_rss_mib'), pred)} "
          f"{gib(anon)} {ratio(r.get('peak_anon_mib'), anon)}")
PY
echo "scale-bench: logs and results in $work"
