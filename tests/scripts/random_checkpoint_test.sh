#!/usr/bin/env bash
# scripts/make-random-checkpoint.py on its small presets: the same seed writes the same bytes
# and another seed other bytes; shards stay under the limit and the HF index names every
# tensor once; fsq reads the sharded folder (inspect's parameter count), evaluates it (random
# weights of std 0.02 give near-uniform next-token distributions: mean NLL within
# kNllTolerance of ln(vocab)), quantizes it and evaluates the packed result; qwen2 shapes carry
# q/k/v biases; bad arguments fail with one line and leave no folder.
#   tests/scripts/random_checkpoint_test.sh FSQ_BINARY SOURCE_DIR SHARED_DIR
set -euo pipefail
fsq="$1" src="$2" shared="$3"
gen="$src/scripts/make-random-checkpoint.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
text="$shared/data/tinystories/tinystories_val.txt"
[ -f "$text" ] || fail "$text is absent (the shared fixtures must sit beside the clone)"
head -c 40000 "$text" >"$work/text.txt"

# Same seed, same bytes; another seed, other bytes. 0.005 GB shards: several shards.
"$gen" --preset tiny-llama --out "$work/a" --max-shard-gb 0.005 >/dev/null 2>&1
"$gen" --preset tiny-llama --out "$work/b" --max-shard-gb 0.005 >/dev/null 2>&1
"$gen" --preset tiny-llama --out "$work/c" --max-shard-gb 0.005 --seed 1 >/dev/null 2>&1
for f in "$work"/a/*; do cmp -s "$f" "$work/b/$(basename "$f")" || fail "seed 0 twice: $(basename "$f") differs"; done
! cmp -s "$work/a/model-00001-of-00003.safetensors" "$work/c/model-00001-of-00003.safetensors" ||
  fail "seeds 0 and 1 wrote the same first shard"

# The index: every tensor once, in a shard that exists; no shard above the limit unless it holds
# a single tensor larger than the limit (the 8 MB embedding and head here).
/usr/bin/python3 - "$work/a" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
files = sorted(set(index["weight_map"].values()))
assert files == sorted(f for f in os.listdir(d) if f.endswith(".safetensors")), files
assert len(files) == 3, files
total, seen = 0, set()
for f in files:
    path = os.path.join(d, f)
    n = struct.unpack("<Q", open(path, "rb").read(8))[0]
    header = json.loads(open(path, "rb").read(8 + n)[8:])
    tensors = [k for k in header if k != "__metadata__"]
    assert os.path.getsize(path) - 8 - n <= 0.005e9 or len(tensors) == 1, (f, os.path.getsize(path))
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert index["weight_map"][name] == f, name
        assert name not in seen, name
        seen.add(name)
        total += t["data_offsets"][1] - t["data_offsets"][0]
assert seen == set(index["weight_map"]), "index names a tensor no shard holds"
assert total == index["metadata"]["total_size"], (total, index["metadata"]["total_size"])
PY

# fsq reads the sharded folder: 2 layers of hidden 128, intermediate 352, 4 heads of 32, 2 KV
# heads, vocabulary 32000, untied head.
params=$((2 * 32000 * 128 + 2 * (2 * 128 + 128 * 128 * 2 + 64 * 128 * 2 + 3 * 352 * 128) + 128))
"$fsq" inspect "$work/a" >"$work/inspect.txt"
grep -q "$params" "$work/inspect.txt" || fail "fsq inspect does not report $params parameters: $(tail -3 "$work/inspect.txt")"

kNllTolerance=0.1
near_uniform() {  # eval JSON -> checks the mean NLL is ln(32000) within the tolerance
  /usr/bin/python3 - "$1" "$kNllTolerance" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
nll = r["perplexity"]["mean_nll"]
assert abs(nll - math.log(32000)) < float(sys.argv[2]), f"mean nll {nll}, ln(32000) = {math.log(32000)}"
PY
}
"$fsq" eval --model "$work/a" --data "$work/text.txt" --seq-len 64 --max-windows 2 --no-speed --progress off \
  --threads 1 --json "$work/a.eval.json" >/dev/null
near_uniform "$work/a.eval.json"
"$fsq" quantize --model "$work/a" --out "$work/a-rtn" --method rtn --bits 4 --group-size 128 --progress off \
  --threads 1 >/dev/null
"$fsq" eval --model "$work/a-rtn" --data "$work/text.txt" --seq-len 64 --max-windows 2 --no-speed --progress off \
  --threads 1 --json "$work/a-rtn.eval.json" >/dev/null
near_uniform "$work/a-rtn.eval.json"

# qwen2: biases on q, k and v; f32.
"$gen" --preset tiny-qwen2 --dtype f32 --out "$work/q" >/dev/null 2>&1
"$fsq" inspect "$work/q" >"$work/inspect-q.txt"
for p in q k v; do
  grep -q "model.layers.0.self_attn.${p}_proj.bias .*F32" "$work/inspect-q.txt" || fail "tiny-qwen2 has no F32 ${p}_proj.bias"
done
"$fsq" eval --model "$work/q" --data "$work/text.txt" --seq-len 64 --max-windows 1 --no-speed --progress off \
  --threads 1 --json "$work/q.eval.json" >/dev/null
near_uniform "$work/q.eval.json"

# Bad arguments: one line, non-zero exit, no folder.
for args in "--preset tiny-llama --out $work/a" "--preset tiny-llama --out $work/z --layers 0" \
  "--preset tiny-llama --out $work/z --max-shard-gb 0" "--preset tiny-llama --out $work/z --tokenizer $work/none"; do
  # shellcheck disable=SC2086
  if "$gen" $args >"$work/out.txt" 2>"$work/err.txt"; then fail "accepted: $args"; fi
  [ "$(wc -l <"$work/err.txt")" -eq 1 ] || fail "not one line for '$args': $(cat "$work/err.txt")"
  [ ! -e "$work/z" ] || fail "left $work/z for '$args'"
  ! ls -d "$work"/z.tmp-* >/dev/null 2>&1 || fail "left a staging folder for '$args'"
done
echo "random_checkpoint_test: OK"
