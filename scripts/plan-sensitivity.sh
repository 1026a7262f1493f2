#!/usr/bin/env bash
# Checks fsq plan's variance indicator against measured sensitivity: for each decoder layer,
# a checkpoint with only that layer at LOW bits (RTN) and every other layer at 8 bits, its
# mean KL against the unquantized model on TEXT, minus the all-8-bit checkpoint's KL; then
# the Spearman rank correlation between those KLs and omega_{i,LOW} - omega_{i,8} from
# `fsq plan --calib`. Prints one row per layer and the correlation.
#
#   scripts/plan-sensitivity.sh MODEL_DIR CALIB_FILE TEXT
#   FSQ_LOW_BITS=3 FSQ_SEQ_LEN=2048 FSQ_MAX_WINDOWS=2 FSQ_PROTOCOL=gptq scripts/plan-sensitivity.sh ...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="${1:?usage: scripts/plan-sensitivity.sh MODEL_DIR CALIB_FILE TEXT}"
calib="${2:?calibration file from fsq calibrate}"
text="${3:?evaluation text}"
low="${FSQ_LOW_BITS:-3}"
seq_len="${FSQ_SEQ_LEN:-2048}"
windows="${FSQ_MAX_WINDOWS:-2}"
protocol="${FSQ_PROTOCOL:-gptq}"
threads="${FSQ_THREADS:-$(nproc)}"
fsq="${FSQ_BIN:-$("$root/scripts/build-fsq.sh" plan-sensitivity)}"
work="${FSQ_WORK_DIR:-$(mktemp -d)}"
mkdir -p "$work/refcache"

"$fsq" plan --model "$model" --calib "$calib" --bits "$low,8" --target-bits 8 --json >"$work/indicator.json"
layers=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["omega_per_layer"]))' "$work/indicator.json")

kl_of() {  # NAME BITS_JSON -> mean KL of an RTN checkpoint with those widths
  local name="$1" bits="$2"
  printf '{"plan": {"bits_per_layer": %s}}\n' "$bits" >"$work/$name.plan.json"
  rm -rf "$work/$name"
  "$fsq" quantize --model "$model" --method rtn --plan "$work/$name.plan.json" --group-size 128 --threads "$threads" \
    --progress off --out "$work/$name" >/dev/null
  "$fsq" eval --model "$work/$name" --compare "$model" --data "$text" --protocol "$protocol" --seq-len "$seq_len" \
    --max-windows "$windows" --threads "$threads" --no-speed --progress off --reference-cache "$work/refcache" \
    --prefill-activations f32 --json "$work/$name.eval.json" >/dev/null
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["compare"]["mean_kl"])' "$work/$name.eval.json"
  rm -rf "$work/$name"
}
widths() {  # LAYER -> JSON list, LAYER at low bits (-1: none)
  python3 -c 'import sys; n, i, low = map(int, sys.argv[1:]); print([low if k == i else 8 for k in range(n)])' "$layers" "$1" "$low"
}

base=$(kl_of all8 "$(widths -1)")
echo "model $model; RTN g128; layer i at $low bits, the rest at 8; mean KL on $protocol, $windows x $seq_len of $(basename "$text")"
echo "all layers at 8 bits: KL $base"
: >"$work/kl.txt"
for ((i = 0; i < layers; i++)); do
  kl=$(kl_of "layer$i" "$(widths "$i")")
  echo "$kl" >>"$work/kl.txt"
done
python3 - "$work/indicator.json" "$work/kl.txt" "$base" <<'PY'
import json, sys
omega = [o[0] - o[1] for o in json.load(open(sys.argv[1]))["omega_per_layer"]]
kl = [float(x) - float(sys.argv[3]) for x in open(sys.argv[2])]
def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):  # average ranks over ties
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]: j += 1
        for k in range(i, j + 1): r[order[k]] = (i + j) / 2
        i = j + 1
    return r
ro, rk = ranks(omega), ranks(kl)
n = len(ro)
mo, mk = sum(ro) / n, sum(rk) / n
cov = sum((a - mo) * (b - mk) for a, b in zip(ro, rk))
rho = cov / (sum((a - mo) ** 2 for a in ro) * sum((b - mk) ** 2 for b in rk)) ** 0.5
print("%5s %14s %12s %6s %6s" % ("layer", "omega", "KL - KL8", "rank o", "rank KL"))
for i in range(n):
    print("%5d %14.6g %12.6f %6.0f %6.0f" % (i, omega[i], kl[i], ro[i] + 1, rk[i] + 1))
print("Spearman rank correlation (omega vs measured KL): %.3f over %d layers" % (rho, n))
PY
