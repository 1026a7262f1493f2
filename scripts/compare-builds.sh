#!/usr/bin/env bash
# Two fsq builds, the same work: every quantize method on one model, then fsq eval --compare of
# each checkpoint against the source; prints per method whether the checkpoints' bytes and the
# eval numbers (perplexity, KL, top-1; not timings) are identical. For refactors that must not
# move a byte (a pipeline rebuilt, a header split).
#   scripts/compare-builds.sh OLD_FSQ NEW_FSQ MODEL_DIR TEXT [WORK_DIR]
#   FSQ_SAMPLES (default 8), FSQ_SEQ_LEN (256), FSQ_THREADS (2), FSQ_GROUP_SIZE (64),
#   FSQ_EVAL_WINDOWS (2), FSQ_METHODS (default: every case below, by name)
# Calibration: the last 20 % of TEXT; evaluation: its first windows (llama.cpp protocol).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 OLD_FSQ NEW_FSQ MODEL_DIR TEXT [WORK_DIR]" >&2; exit 2; }
old="$1" new="$2" model="$3" text="$4"
work="${5:-$(mktemp -d)}"
samples="${FSQ_SAMPLES:-8}" seq_len="${FSQ_SEQ_LEN:-256}" threads="${FSQ_THREADS:-2}"
group="${FSQ_GROUP_SIZE:-64}" windows="${FSQ_EVAL_WINDOWS:-2}"
for f in "$old" "$new"; do [ -x "$f" ] || { echo "compare-builds: $f is not an executable" >&2; exit 2; }; done
mkdir -p "$work"
calib="$work/calib.txt"
size=$(stat -c %s "$text")
tail -c $((size / 5)) "$text" >"$calib"

declare -A cases=(
  [rtn]="--method rtn --bits 4 --group-size $group"
  [rtn-gptq]="--method rtn --bits 3 --group-size $group --gptq"
  [awq]="--method awq --bits 4 --group-size $group"
  [awq-gptq]="--method awq --bits 3 --group-size $group --gptq"
  [squeezellm]="--method squeezellm --bits 4"
  [squeezellm-gptq]="--method squeezellm --bits 3 --gptq"
  [smoothquant-gptq]="--method smoothquant --alpha 0.5 --gptq"
  [w8a8-tensor]="--method w8a8 --act-quant per-tensor"
  [intonly]="--method intonly --alpha 0.7"
)
names="${FSQ_METHODS:-rtn rtn-gptq awq awq-gptq squeezellm squeezellm-gptq smoothquant-gptq w8a8-tensor intonly}"

# The eval report's numbers without timings, memory or the invocation.
numbers() {
  python3 - "$1" <<'PY'
import json, sys
skip = ("second", "tok_s", "rss", "invocation", "time", "speed", "load", "threads", "bytes", "mib", "path", "model")
def walk(x, key=""):
    if isinstance(x, dict):
        return {k: walk(v, k) for k, v in sorted(x.items()) if not any(s in k.lower() for s in skip)}
    if isinstance(x, list):
        return [walk(v, key) for v in x]
    return x
print(json.dumps(walk(json.load(open(sys.argv[1]))), sort_keys=True))
PY
}

status=0
printf '%-18s %-10s %-10s\n' case checkpoint eval
for name in $names; do
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    out="$work/$side/$name"
    rm -rf "$out" "$out.partial"
    mkdir -p "$work/$side"
    # shellcheck disable=SC2086
    "$bin" quantize --model "$model" --out "$out" --calib-data "$calib" --samples "$samples" --seq-len "$seq_len" \
      --threads "$threads" --progress off ${cases[$name]} >"$out.log" 2>&1
    "$bin" eval --model "$out" --data "$text" --protocol llama.cpp --seq-len 512 --max-windows "$windows" \
      --compare "$model" --no-speed --threads "$threads" --progress off --json "$out.eval.json" >/dev/null 2>&1
  done
  ckpt=same
  cmp -s "$work/old/$name/model.safetensors" "$work/new/$name/model.safetensors" || { ckpt=DIFFERENT; status=1; }
  ev=same
  [ "$(numbers "$work/old/$name.eval.json")" = "$(numbers "$work/new/$name.eval.json")" ] || { ev=DIFFERENT; status=1; }
  printf '%-18s %-10s %-10s\n' "$name" "$ckpt" "$ev"
done
echo "compare-builds: work folder $work"
exit $status
