#!/usr/bin/env bash
# fsq against llama.cpp at the size users hold, on the same weights, in one run on this
# machine: a LLaMA-2-7B-shaped bf16 checkpoint with random weights (scripts/make-random-
# checkpoint.py, cached; speed and memory do not depend on the values). Steps:
#   source  fsq export --type BF16 of the HF folder: llama.cpp's GGUF of the same weights
#   q4_0    llama-quantize --pure BF16.gguf -> Q4_0, against fsq export --type Q4_0 --pure
#           --rounding nearest of the folder (the same blocks: tensors compared byte for byte)
#           and fsq quantize --method rtn --bits 4 --group-size 32 --sym (w4g32s, Q4_0's grid)
#   speed   llama-bench -p 512 -n 64 on the Q4_0 file against fsq eval --speed-only
#           (--prefill-lengths 512 --decode-batches 1 --decode-steps 64) on the w4g32s
#           checkpoint, at each thread count of FSQ_THREADS_LIST
#   memory  llama-perplexity on the BF16 GGUF against fsq eval on the bf16 folder: one window
#           of 512 (llama.cpp protocol), peak resident memory
# Every row: wall seconds and peak RSS (scripts/measure-run.py), and fsq / llama.cpp ratios.
# Needs ~35 GB of disk in the work folder (FSQ_WORK, default a fresh folder under $TMPDIR,
# removed at the end unless FSQ_KEEP=1). Timings are only comparable on a quiet machine.
#   scripts/bench-llama-7b.sh                (FSQ_THREADS_LIST="1 2", FSQ_PRESET=llama-2-7b)
#   FSQ_STEPS="speed" FSQ_WORK=DIR FSQ_KEEP=1 scripts/bench-llama-7b.sh   reruns steps on the files
#                                            an earlier FSQ_KEEP=1 run left in DIR
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads_list="${FSQ_THREADS_LIST:-1 2}"
preset="${FSQ_PRESET:-llama-2-7b}"
max_threads=$(nproc)
fsq="${FSQ_BIN:-$("$root/scripts/build-fsq.sh" bench-llama-7b)}"
llama="$("$root/scripts/llama-cpp.sh" | tail -n 1)"
text="$root/../shared/data/wikitext-2-raw/wiki.test.raw"
[ -f "$text" ] || { echo "bench-llama-7b: $text is absent (the shared fixtures sit beside the clone)" >&2; exit 1; }
model="${FSQ_CACHE:-$HOME/.cache/fsq}/random/$preset-bf16"
if [ ! -f "$model/config.json" ]; then
  mkdir -p "$(dirname "$model")"
  /usr/bin/python3 "$root/scripts/make-random-checkpoint.py" --preset "$preset" --dtype bf16 --out "$model" >&2
fi
work="${FSQ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/fsq-bench-7b-XXXX")}"
mkdir -p "$work"
[ "${FSQ_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
results="$work/results.jsonl"
steps=" ${FSQ_STEPS:-source q4_0 speed memory} "
touch "$results"
has() { [[ "$steps" == *" $1 "* ]]; }

# row NAME COMMAND...: runs it under measure-run.py; one JSON line (seconds, peak RSS) in
# $results, the command's output in $work/NAME.log. Fails the script when the command fails.
row() {
  local name="$1"
  shift
  echo "bench-llama-7b: $name" >&2
  local line
  if ! line=$("$root/scripts/measure-run.py" -- "$@" 2>"$work/$name.log" >"$work/$name.out"); then :; fi
  line=$(tail -n 1 "$work/$name.out")
  /usr/bin/python3 -c 'import json, sys
r = json.loads(sys.argv[1]); r["name"] = sys.argv[2]; print(json.dumps(r))' "$line" "$name" >>"$results"
  if [ "$(/usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get("exit"))' "$line")" != 0 ]; then
    tail -n 20 "$work/$name.log" >&2
    echo "bench-llama-7b: $name failed" >&2
    exit 1
  fi
}

bf16="$work/source-bf16.gguf"
has source && rm -f "$bf16" && row export-bf16 "$fsq" export --format gguf --type BF16 --threads "$max_threads" --progress off "$model" "$bf16"
if has q4_0; then
rm -rf "$work/llama-q4_0.gguf" "$work/fsq-q4_0.gguf" "$work/w4g32s"  # a rerun replaces them
row llama-quantize-q4_0 "$llama/llama-quantize" --pure "$bf16" "$work/llama-q4_0.gguf" Q4_0 "$max_threads"
row fsq-export-q4_0 "$fsq" export --format gguf --type Q4_0 --pure --rounding nearest --threads "$max_threads" \
  --progress off "$model" "$work/fsq-q4_0.gguf"
row fsq-quantize-w4g32s "$fsq" quantize --method rtn --bits 4 --group-size 32 --sym --head-bits 16 \
  --threads "$max_threads" --progress off --model "$model" --out "$work/w4g32s"
# Byte identity of the two Q4_0 files, tensor by tensor (metadata differs: fsq records provenance).
/usr/bin/python3 - "$work/llama-q4_0.gguf" "$work/fsq-q4_0.gguf" >"$work/same-bytes.txt" <<'PY'
import struct, sys
def tensors(path):
    f = open(path, "rb")
    def u(fmt):
        return struct.unpack("<" + fmt, f.read(struct.calcsize(fmt)))[0]
    def s():
        return f.read(u("Q")).decode()
    def skip(t):  # GGUF value types
        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
        if t == 8: s()
        elif t == 9:
            et, n = u("I"), u("Q")
            for _ in range(n): skip(et)
        else: f.read(sizes[t])
    assert f.read(4) == b"GGUF"; u("I"); nt, nkv = u("Q"), u("Q")
    align = 32
    for _ in range(nkv):
        k, t = s(), u("I")
        if k == "general.alignment": align = u("I")
        else: skip(t)
    infos = []
    for _ in range(nt):
        name, nd = s(), u("I")
        dims = [u("Q") for _ in range(nd)]
        infos.append((name, dims, u("I"), u("Q")))
    start = (f.tell() + align - 1) // align * align
    return f, start, infos
(fa, sa, ta), (fb, sb, tb) = tensors(sys.argv[1]), tensors(sys.argv[2])
ob = {t[0]: t for t in tb}
offsets = sorted(t[3] for t in ta)
same = differ = 0
for name, dims, typ, off in ta:
    b = ob[name]
    if b[2] != typ: differ += 1; continue
    nxt = [o for o in offsets if o > off]
    n = (nxt[0] - off) if nxt else None
    fa.seek(sa + off); fb.seek(sb + b[3])
    x = fa.read(n) if n else fa.read()
    y = fb.read(len(x))
    same, differ = (same + 1, differ) if x == y else (same, differ + 1)
print(f"{same} of {len(ta)} tensors byte-identical, {differ} differ")
PY
fi
has speed && for t in $threads_list; do
  # exec: measure-run.py watches the pid it started, which is then llama-bench's.
  row "llama-bench-t$t" sh -c 'exec "$0" -m "$1" -t "$2" -p 512 -n 64 -r 1 -o json >"$3"' "$llama/llama-bench" \
    "$work/llama-q4_0.gguf" "$t" "$work/llama-bench-t$t.json"
  row "fsq-speed-t$t" "$fsq" eval --model "$work/w4g32s" --speed-only --prefill-lengths 512 --decode-batches 1 \
    --decode-steps 64 --threads "$t" --progress off --force --json "$work/fsq-speed-t$t.json"
done
has memory && row llama-perplexity-bf16 "$llama/llama-perplexity" -m "$bf16" -f "$text" -c 512 --chunks 1 -t "$max_threads"
has memory && row fsq-eval-bf16 "$fsq" eval --model "$model" --data "$text" --protocol llama.cpp --seq-len 512 --max-windows 1 \
  --no-speed --threads "$max_threads" --progress off

/usr/bin/python3 - "$results" "$work" "$preset" "$threads_list" "$(cat "$work/same-bytes.txt")" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):  # a rerun step's row replaces the earlier one
    r = json.loads(line); rows[r["name"]] = r
work, preset, threads, same = sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5]
gib = lambda r: r["peak_rss_mib"] / 1024
print(f"fsq vs llama.cpp on {preset} (random bf16 weights), this machine; ratios fsq / llama.cpp")
print(f"{'step':34s} {'llama.cpp s':>11s} {'GiB':>6s} {'fsq s':>8s} {'GiB':>6s} {'time x':>7s}")
def pair(label, a, b):
    ra, rb = rows[a], rows[b]
    print(f"{label:34s} {ra['seconds']:11.1f} {gib(ra):6.2f} {rb['seconds']:8.1f} {gib(rb):6.2f} {rb['seconds'] / ra['seconds']:7.2f}")
print(f"{'BF16 GGUF of the folder (fsq)':34s} {'':11s} {'':6s} {rows['export-bf16']['seconds']:8.1f} {gib(rows['export-bf16']):6.2f}")
pair("Q4_0: llama-quantize / fsq export", "llama-quantize-q4_0", "fsq-export-q4_0")
pair("Q4_0: llama-quantize / fsq rtn", "llama-quantize-q4_0", "fsq-quantize-w4g32s")
print(f"  Q4_0 files: {same}")
pair("BF16 eval, 1 x 512: peak memory", "llama-perplexity-bf16", "fsq-eval-bf16")
print(f"\n{'threads':>7s} {'llama tg64':>10s} {'fsq tg64':>9s} {'x':>6s} {'llama pp512':>11s} {'fsq pp512':>9s} {'x':>6s} {'llama GiB':>9s} {'fsq GiB':>8s}")
for t in threads:
    lb = json.load(open(f"{work}/llama-bench-t{t}.json"))
    tg = next(r["avg_ts"] for r in lb if r["n_gen"] > 0)
    pp = next(r["avg_ts"] for r in lb if r["n_prompt"] > 0)
    s = json.load(open(f"{work}/fsq-speed-t{t}.json"))["speed"]
    ftg = next(d["tokens_per_s"] for d in s["decode"] if d["batch"] == 1)
    fpp = next(p["tokens_per_s"] for p in s["prefill"] if p["tokens"] == 512)
    print(f"{t:>7s} {tg:10.2f} {ftg:9.2f} {ftg / tg:6.2f} {pp:11.2f} {fpp:9.2f} {fpp / pp:6.2f} "
          f"{gib(rows['llama-bench-t' + t]):9.2f} {gib(rows['fsq-speed-t' + t]):8.2f}")
PY
