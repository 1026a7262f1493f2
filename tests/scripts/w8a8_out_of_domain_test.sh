#!/usr/bin/env bash
# W8A8 SmoothQuant on text the calibration never saw (issue 57): SmolLM2-135M calibrated on
# the tail of TinyStories only, evaluated on WikiText-2 against the f32 model, must stay
# within the issue's targets of f32 (not of an earlier fsq number): perplexity within
# kMaxPplIncrease and mean KL at most kMaxKl. The default setting, per-block activations
# (w8a8b32), holds them; per-token activations at the same alpha do not (channels that
# TinyStories never showed large take a token's whole int8 range), which the last check
# locks: per token at least kPerTokenFactor times per block's KL.
# Reduced for CI: 8 x 256 calibration tokens, 4 windows of 1024 (llama.cpp protocol: the
# second half of each window scored, 2048 tokens), one thread. Skipped (exit 77; failed
# under CI) when SmolLM2 has not been fetched (scripts/fetch-model.sh smollm2-135m).
#   tests/scripts/w8a8_out_of_domain_test.sh FSQ_BINARY SHARED_DIR REFERENCE_CACHE
set -euo pipefail
fsq="$1" shared="$2" refcache="$3"
max_ppl_increase=0.005  # kMaxPplIncrease: the issue's 0.5 % of f32
max_kl=0.01             # kMaxKl: the issue's target
per_token_factor=2      # kPerTokenFactor: measured 2.9x (0.0124 vs 0.0043; ppl +0.30 %) at these settings
fail() { echo "FAIL: $*" >&2; exit 1; }
model="${FSQ_CACHE:-$HOME/.cache/fsq}/models/smollm2-135m/hf"
if [[ ! -f $model/model.safetensors ]]; then
  case "${CI:-}" in ""|0|[Ff][Aa][Ll][Ss][Ee]) echo "SKIP: $model absent: run scripts/fetch-model.sh smollm2-135m"; exit 77 ;; esac
  fail "$model absent under CI: run scripts/fetch-model.sh smollm2-135m"
fi
tiny="$shared/data/tinystories/tinystories_val.txt" wiki="$shared/data/wikitext-2-raw/wiki.test.raw"
[[ -f $tiny && -f $wiki ]] || fail "$tiny or $wiki absent (the shared fixtures must sit beside the clone)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/calib" "$refcache"
tail -c 100000 "$tiny" >"$work/calib/tinystories_tail.txt"   # never WikiText

quantize_and_compare() {  # NAME ACT: prints "ppl ref_ppl mean_kl"
  "$fsq" quantize --model "$model" --method smoothquant --alpha 0.5 --act-quant "$2" --calib-data "$work/calib" \
    --samples 8 --seq-len 256 --threads 1 --progress off --out "$work/$1" >/dev/null 2>"$work/$1.err" ||
    fail "quantize $1: $(tail -1 "$work/$1.err")"
  "$fsq" eval --model "$work/$1" --compare "$model" --data "$wiki" --protocol llama.cpp --seq-len 1024 \
    --max-windows 4 --threads 1 --no-speed --progress off --reference-cache "$refcache" \
    --reference-cache-max-gib 2 --json "$work/$1.json" >/dev/null 2>"$work/$1.err" ||
    fail "eval $1: $(tail -1 "$work/$1.err")"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c=r["compare"]
print(r["perplexity"]["ppl"], c["ref_ppl"], c["mean_kl"])' "$work/$1.json"
}

read -r ppl ref kl < <(quantize_and_compare block per-block)
read -r _ _ kl_token < <(quantize_and_compare token per-token)
echo "SmolLM2 SmoothQuant alpha 0.5 on WikiText (TinyStories calibration): f32 ppl $ref;" \
  "per block ppl $ppl, KL $kl; per token KL $kl_token"
python3 - "$ppl" "$ref" "$kl" "$kl_token" "$max_ppl_increase" "$max_kl" "$per_token_factor" <<'PY' || exit 1
import sys
ppl, ref, kl, kl_token, max_inc, max_kl, factor = map(float, sys.argv[1:])
bad = []
if ppl > ref * (1 + max_inc): bad.append(f"per-block perplexity {ppl:.4f} is more than {max_inc:.1%} above f32's {ref:.4f}")
if kl > max_kl: bad.append(f"per-block mean KL {kl:.5f} above {max_kl}")
if kl_token < factor * kl: bad.append(f"per-token KL {kl_token:.5f} is not {factor}x per-block's {kl:.5f}")
for b in bad: print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
echo "PASS"
