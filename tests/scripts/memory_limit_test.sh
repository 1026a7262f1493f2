#!/usr/bin/env bash
# fsq on a model larger than the memory it is granted (issue 56): a 1.26 GB bf16 random model
# (scripts/make-random-checkpoint.py --preset ci-1.4gb, 1.17 GiB) under RLIMIT_DATA of
# kLimitGiB, which bounds the heap and private writable maps but not mapped read-only files:
# eval of the bf16 source (its matrices read from the mapped file), quantize rtn (one layer
# at a time, the output streamed into shards) and eval of the packed result all pass; a limit
# below the plan's anonymous memory is refused before any work in one line that names both.
#   tests/scripts/memory_limit_test.sh FSQ_BINARY SOURCE_DIR SHARED_DIR
set -euo pipefail
fsq="$1" src="$2" shared="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
text="$shared/data/tinystories/tinystories_val.txt"
[ -f "$text" ] || fail "$text is absent (the shared fixtures must sit beside the clone)"
head -c 60000 "$text" >"$work/text.txt"
limit_gib=0.85  # kLimitGiB: below the source (1.17 GiB); quantize's anonymous peak is ~0.55 GiB
limit_bytes=$(awk -v g="$limit_gib" 'BEGIN {printf "%d", g * 1073741824}')

/usr/bin/python3 "$src/scripts/make-random-checkpoint.py" --preset ci-1.4gb --out "$work/model" >/dev/null 2>&1 ||
  fail "make-random-checkpoint.py failed"
source_bytes=$(du -cb "$work"/model/*.safetensors | tail -1 | cut -f1)
[ "$source_bytes" -gt "$limit_bytes" ] || fail "the source ($source_bytes bytes) is not larger than the limit"

limited() { prlimit --data="$limit_bytes" -- "$@"; }
eval_args=(--data "$work/text.txt" --seq-len 128 --max-windows 2 --no-speed --threads 2 --progress off)

limited "$fsq" eval --model "$work/model" "${eval_args[@]}" --json "$work/source.json" >"$work/eval-source.log" 2>&1 ||
  fail "eval of the bf16 source under $limit_gib GiB: $(tail -1 "$work/eval-source.log")"
limited "$fsq" quantize --model "$work/model" --out "$work/w4" --method rtn --bits 4 --group-size 128 --threads 2 \
  --progress off --json "$work/quantize.json" >"$work/quantize.log" 2>&1 ||
  fail "quantize under $limit_gib GiB: $(tail -1 "$work/quantize.log")"
limited "$fsq" eval --model "$work/w4" "${eval_args[@]}" --json "$work/w4.json" >"$work/eval-w4.log" 2>&1 ||
  fail "eval of the packed result under $limit_gib GiB: $(tail -1 "$work/eval-w4.log")"

# The plan's anonymous memory covers what quantize used, and the limit it checked was RLIMIT_DATA.
/usr/bin/python3 - "$work/quantize.json" "$limit_bytes" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
anonymous = j["plan"]["predicted_anonymous_bytes"]
assert anonymous <= int(sys.argv[2]), ("the plan says more than the limit, yet the run passed", anonymous)
assert j["peak_rss_bytes"] <= j["plan"]["predicted_peak_bytes"], (j["peak_rss_bytes"], j["plan"]["predicted_peak_bytes"])
PY

# Half the plan's anonymous memory: refused before any work, in one line naming both sizes.
small=$((limit_bytes / 4))
rm -rf "$work/w4b"
if prlimit --data=$((limit_bytes)) -- "$fsq" quantize --model "$work/model" --out "$work/w4b" --method rtn --bits 4 \
     --group-size 128 --max-memory "$small" --progress off >"$work/refused.log" 2>"$work/refused.err"; then
  fail "quantize with --max-memory $small bytes was not refused"
fi
[ "$(wc -l <"$work/refused.err")" -eq 1 ] || fail "the refusal is not one line: $(cat "$work/refused.err")"
grep -q "anonymous memory" "$work/refused.err" && grep -q "is available (--max-memory)" "$work/refused.err" ||
  fail "the refusal does not name the memory needed and available: $(cat "$work/refused.err")"
[ ! -e "$work/w4b" ] && [ ! -e "$work/w4b.partial" ] || fail "the refused run left output behind"
echo "memory_limit_test: passed (source $source_bytes bytes, RLIMIT_DATA $limit_bytes)"
