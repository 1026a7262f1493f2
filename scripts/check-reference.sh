#!/usr/bin/env bash
# SmolLM2-135M perplexity over the whole of tinystories_val.txt (seq 2048, protocols gptq and
# llama.cpp) against the transformers fp32 reference recorded in
# tests/data/smollm2/reference/reference.json (scripts/golden/make_smollm2_reference.sh made it).
# Not part of CI: two full passes over 193,745 tokens take tens of minutes on 2 cores; CI's
# test (SmolLM2Reference) checks the first windows only.
#
#   scripts/check-reference.sh            (FSQ_THREADS sets the threads, default nproc)
#
# Prints one row per protocol and exits 1 when a perplexity differs from the reference by
# more than 0.1 % (the tolerance the issue set for fsq vs transformers), or when the scored
# token counts differ (a different protocol, not a numeric difference).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${FSQ_SHARED_DIR:-$root/../shared}"
threads="${FSQ_THREADS:-$(nproc)}"
reference="$root/tests/data/smollm2/reference/reference.json"
text="$shared/data/tinystories/tinystories_val.txt"
max_relative="0.001"

if [ ! -f "$text" ]; then
  echo "check-reference: $text is absent (the shared fixtures must sit beside the clone)" >&2
  exit 1
fi
fsq="$("$root/scripts/build-fsq.sh" check-reference)"
gguf="$(FSQ_BIN="$fsq" "$root/scripts/fetch-model.sh" smollm2-135m | tail -n 1)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
for protocol in gptq llama.cpp; do
  echo "check-reference: fsq eval --protocol $protocol over the whole text ($threads threads)" >&2
  "$fsq" eval --model "$gguf" --data "$text" --protocol "$protocol" --seq-len 2048 --no-speed \
    --threads "$threads" --progress lines --json "$tmp/$protocol.json" >/dev/null
done

python3 - "$reference" "$tmp" "$max_relative" "$((SECONDS - start))" <<'PY'
import json, sys
reference_path, tmp, max_relative, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
reference = json.load(open(reference_path))["perplexity"]["protocols"]
print("SmolLM2-135M-Instruct (Q4_1 GGUF, exact dequantization, f32), tinystories_val.txt, seq_len 2048")
print(f"{'protocol':<10} {'windows':>7} {'scored':>8} {'fsq ppl':>10} {'reference':>10} {'rel. diff':>10}")
ok = True
for protocol in ("gptq", "llama.cpp"):
    ours = json.load(open(f"{tmp}/{protocol}.json"))["perplexity"]
    ref = reference[protocol]
    rel = abs(ours["ppl"] - ref["ppl"]) / ref["ppl"]
    same_tokens = ours["scored_tokens"] == ref["scored_tokens"] and ours["windows"] == ref["windows"]
    ok = ok and same_tokens and rel <= max_relative
    note = "" if same_tokens else f"  (reference: {ref['windows']} windows, {ref['scored_tokens']} tokens)"
    print(f"{protocol:<10} {ours['windows']:>7} {ours['scored_tokens']:>8} {ours['ppl']:>10.4f} "
          f"{ref['ppl']:>10.4f} {rel * 100:>9.4f}%{note}")
print(f"tolerance {max_relative * 100:.1f}% relative; {seconds} s for both passes")
print("check-reference: " + ("OK" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
