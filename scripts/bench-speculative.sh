#!/usr/bin/env bash
# Speculative decoding on SmolLM2-135M (issue 59), one run on this machine, batch 1, at each
# thread count of FSQ_THREADS_LIST (default "1 2"):
#   plain      fsq generate of the f32 model (the verifier): its greedy text and decode tok/s
#   draft      fsq generate --speculate draft --draft W8 (fsq quantize rtn 8-bit g32 --sym: the
#              linears are Q8_0's grid) at --gamma 3, 4, 5, and with the W4 draft below at 3:
#              tok/s, acceptance rate, tokens per verify step, the draft/verify time split,
#              and whether the text equals plain's token for token
#   bild       --speculate bild, small model W4 (rtn 4-bit g32), alpha_fb 0.5, window 7,
#              alpha_rb 0 (exact)
#   llama.cpp  llama-speculative on fsq export's GGUFs of the same pair (target F32, draft
#              Q8_0: the W8 checkpoint's own codes; its 8-bit g64 head re-blocked), greedy,
#              --spec-draft-n-max 4 --spec-draft-p-min 0 (always 4 drafts, as fsq's gamma 4),
#              and llama-bench's plain tg of the target
# then a BiLD sweep (alpha_fb x alpha_rb, FSQ_SWEEP_THREADS threads): tok/s, agreement with
# the f32 model's greedy tokens and the perplexity of the generated text under the f32 model,
# as a table and a PNG (python3-matplotlib, installed from apt when missing).
# Decode tok/s counts the tokens after the first new one, from its emission to the last's
# (prefill and model loading excluded), summed over the prompts; ratios are to plain's
# tok/s in the same run. Results: $FSQ_OUT (default build/bench-speculative): results.jsonl,
# table.md, bild-sweep.png.
#   scripts/bench-speculative.sh        FSQ_TOKENS (256), FSQ_PROMPTS (2 of 5), FSQ_BIN
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fsq="${FSQ_BIN:-$root/build/tools/fsq/fsq}"
threads_list="${FSQ_THREADS_LIST:-1 2}"
sweep_threads="${FSQ_SWEEP_THREADS:-1}"
tokens="${FSQ_TOKENS:-256}"
n_prompts="${FSQ_PROMPTS:-2}"
hf="${FSQ_CACHE:-$HOME/.cache/fsq}/models/smollm2-135m/hf"
out="${FSQ_OUT:-$root/build/bench-speculative}"
[ -x "$fsq" ] || { echo "bench-speculative: $fsq is not built (cmake --build build --target fsq)" >&2; exit 1; }
[ -f "$hf/model.safetensors" ] || { echo "bench-speculative: $hf is absent: run scripts/fetch-model.sh smollm2-135m" >&2; exit 1; }
llama="$("$root/scripts/llama-cpp.sh" | tail -n 1)"
mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/fsq-bench-spec-XXXX")"
trap 'rm -rf "$work"' EXIT
# A private copy of the binary: a rebuild of the build folder during the run cannot touch it.
cp "$fsq" "$work/fsq"
fsq="$work/fsq"
results="$out/results.jsonl"
: >"$results"
prompts=("Once upon a time, there was a little robot who" "The history of the Roman Empire began"
         "def fibonacci(n):" "The best way to learn a new language is" "In the middle of the night, the")
prompts=("${prompts[@]:0:$n_prompts}")

echo "bench-speculative: models (W8 and W4 drafts, GGUFs)" >&2
"$fsq" quantize --model "$hf" --out "$work/w8" --method rtn --bits 8 --group-size 32 --sym \
  --progress off >"$work/quantize.log" 2>&1 &&
  "$fsq" quantize --model "$hf" --out "$work/w4" --method rtn --bits 4 --group-size 32 \
    --progress off >>"$work/quantize.log" 2>&1 || { tail -n 20 "$work/quantize.log" >&2; exit 1; }
"$fsq" export --format gguf --type F32 --progress off "$hf" "$work/target-f32.gguf" >"$work/export.log" 2>&1 &&
  "$fsq" export --format gguf --type Q8_0 --progress off "$work/w8" "$work/draft-w8.gguf" >>"$work/export.log" 2>&1 ||
  { tail -n 20 "$work/export.log" >&2; exit 1; }

# fsq_run NAME THREADS ARGS...: fsq generate over the prompts, one JSON line in $results
# (tokens, seconds, tok/s, acceptance, tokens per verify step, time split, ids per prompt).
fsq_run() {
  local name="$1" threads="$2"
  shift 2
  local i=0 files=()
  for p in "${prompts[@]}"; do
    "$fsq" generate --model "$hf" --prompt "$p" -n "$tokens" --threads "$threads" --json "$work/$name-$threads-$i.json" \
      "$@" >/dev/null 2>"$work/$name.log" || { cat "$work/$name.log" >&2; exit 1; }
    files+=("$work/$name-$threads-$i.json")
    i=$((i + 1))
  done
  /usr/bin/python3 - "$name" "$threads" "${files[@]}" >>"$results" <<'EOF'
import json, sys
name, threads, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rs = [json.load(open(f)) for f in files]
row = {"name": name, "engine": "fsq", "threads": threads,
       "tokens": sum(r["generated"] - 1 for r in rs), "seconds": sum(r["decode_seconds"] for r in rs),
       "ids": [r["ids"] for r in rs]}
row["tok_s"] = row["tokens"] / row["seconds"]
s = [r["speculative"] for r in rs if "speculative" in r]
if s:
    proposed, accepted, steps = (sum(x[k] for x in s) for k in ("proposed", "accepted", "verify_steps"))
    row.update(proposer=s[0]["proposer"], gamma=s[0]["gamma"], alpha_rb=s[0]["alpha_rb"],
               acceptance=accepted / proposed if proposed else 0.0, tokens_per_step=row["tokens"] / steps,
               draft_s=sum(x["draft_seconds"] for x in s), verify_s=sum(x["verify_seconds"] for x in s),
               verify_path=s[0]["verify_path"])
    if "verifier_nll" in s[0]:
        row["nll"] = sum(x["verifier_nll"] for x in s)
        row["nll_tokens"] = sum(r["generated"] for r in rs)
print(json.dumps(row))
EOF
}

# llama_spec THREADS: llama-speculative on the GGUF pair, greedy, over the prompts.
llama_spec() {
  local threads="$1" log
  for p in "${prompts[@]}"; do
    log="$work/llama-spec-$threads.log"
    "$llama/llama-speculative" -m "$work/target-f32.gguf" -md "$work/draft-w8.gguf" -p "$p" -n "$tokens" \
      -t "$threads" -td "$threads" --temp 0 --top-k 1 --spec-draft-n-max 4 --spec-draft-n-min 0 \
      --spec-draft-p-min 0 -c 1024 --seed 1 >/dev/null 2>"$log" || { tail -n 20 "$log" >&2; exit 1; }
    cat "$log" >>"$work/llama-spec-$threads.all"
  done
  /usr/bin/python3 - "$threads" "$work/llama-spec-$threads.all" >>"$results" <<'EOF'
import json, re, sys
threads, text = int(sys.argv[1]), open(sys.argv[2]).read()
dec = re.findall(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds", text)
drafted = [int(x) for x in re.findall(r"n_drafted\s*=\s*(\d+)", text)]
accepted = [int(x) for x in re.findall(r"n_accept\s*=\s*(\d+)", text)]
tokens, seconds = sum(int(n) for n, _ in dec), sum(float(s) for _, s in dec)
row = {"name": "llama-speculative", "engine": "llama.cpp", "threads": threads, "gamma": 4, "tokens": tokens,
       "seconds": seconds, "tok_s": tokens / seconds if seconds else 0.0}
if drafted and sum(drafted):
    row["acceptance"] = sum(accepted) / sum(drafted)
print(json.dumps(row))
EOF
}

for t in $threads_list; do
  echo "bench-speculative: $t thread(s)" >&2
  fsq_run plain "$t"
  for g in 3 4 5; do fsq_run "draft-w8-g$g" "$t" --speculate draft --draft "$work/w8" --gamma "$g"; done
  fsq_run draft-w4-g3 "$t" --speculate draft --draft "$work/w4" --gamma 3
  fsq_run bild "$t" --speculate bild --draft "$work/w4" --alpha-fb 0.5 --window 7
  llama_spec "$t"
  "$llama/llama-bench" -m "$work/target-f32.gguf" -t "$t" -p 0 -n "$tokens" -r 1 -o json 2>/dev/null >"$work/lb-$t.json"
  /usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))[0]
print(json.dumps({"name": "llama-bench-tg", "engine": "llama.cpp", "threads": int(sys.argv[2]), "tok_s": r["avg_ts"]}))' \
    "$work/lb-$t.json" "$t" >>"$results"
done

echo "bench-speculative: BiLD sweep at $sweep_threads thread(s)" >&2
fsq_run plain-sweep "$sweep_threads"  # the sweep's own baseline, measured next to it
for fb in 0.3 0.6 0.9; do
  for rb in 0 1 3; do
    fsq_run "bild-fb$fb-rb$rb" "$sweep_threads" --speculate bild --draft "$work/w4" --alpha-fb "$fb" --alpha-rb "$rb" \
      --window 7 --score
  done
done

command -v apt-get >/dev/null && ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null &&
  { apt-get install -y -qq python3-matplotlib >/dev/null 2>&1 || echo "bench-speculative: no matplotlib (apt failed): no plot" >&2; }
/usr/bin/python3 "$root/scripts/bench-speculative-report.py" "$results" "$out" "$sweep_threads"
