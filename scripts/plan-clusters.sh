#!/usr/bin/env bash
# fsq plan on LLM-PQ's heterogeneous clusters (prompt 512, batch 32, 100 new tokens): per
# cluster the predicted throughput of fsq's plan, PipeEdge and Uniform in fsq's cost model
# (roofline from lib/plan/gpu_specs.json, proxy omega) and the ratios, under three quality
# budgets: no worse than PipeEdge's plan (the default), every layer's omega at 8 bits
# (int8-equivalent) and at 4 bits. The first two clusters are the paper's; the others are
# further mixes of the same GPU types. Also times the solver on 80 layers over 8 GPUs.
#
#   scripts/plan-clusters.sh            (FSQ_BUILD_DIR picks the build folder)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fsq="$("$root/scripts/build-fsq.sh" plan-clusters)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cluster() {  # NAME JSON
  printf '%s\n' "$2" >"$tmp/$1.json"
}
cluster t4x3-v100 '{"devices": [{"type": "T4-16G", "count": 3, "node": "a"}, {"type": "V100-32G", "node": "b"}]}'
cluster v100x4-a800x2 '{"devices": [{"type": "V100-32G", "count": 4, "node": "a"}, {"type": "A800-80G", "count": 2, "node": "b"}]}'
cluster p100-v100 '{"devices": [{"type": "P100-12G", "node": "a"}, {"type": "V100-32G", "node": "b"}]}'
cluster t4x2-a100x2 '{"devices": [{"type": "T4-16G", "count": 2, "node": "a"}, {"type": "A100-40G", "count": 2, "node": "b"}]}'
cluster mix8 '{"devices": [{"type": "T4-16G", "count": 2, "node": "a"}, {"type": "V100-32G", "count": 2, "node": "b"},
                           {"type": "A10", "count": 2, "node": "c"}, {"type": "A100-40G", "count": 2, "node": "d"}]}'

runs=(
  "opt-30b t4x3-v100 paper"
  "bloom-176b v100x4-a800x2 paper"
  "opt-13b p100-v100 extra"
  "opt-66b t4x2-a100x2 extra"
  "llama-2-70b mix8 extra"
)
echo "fsq plan on heterogeneous clusters: prompt 512, 100 new tokens, batch 32, KV fp16; roofline cost model, proxy omega"
printf '%-12s %-16s %-6s %-10s %9s %9s %9s %8s %8s %7s %8s\n' model cluster from budget "fsq tok/s" PipeEdge Uniform \
  "vs PE" "vs Uni" "bits" "solve s"
for run in "${runs[@]}"; do
  read -r model name origin <<<"$run"
  for budget in pipeedge 8 4; do
    flags=()
    [[ "$budget" != pipeedge ]] && flags=(--quality-of "$budget")
    if ! "$fsq" plan --preset "$model" --cluster "$tmp/$name.json" --prompt-len 512 --new-tokens 100 --batch 32 \
         "${flags[@]}" --json >"$tmp/out.json" 2>"$tmp/err"; then
      printf '%-12s %-16s %-6s %-10s %s\n' "$model" "$name" "$origin" "$budget" "$(cat "$tmp/err")"
      continue
    fi
    python3 - "$tmp/out.json" "$model" "$name" "$origin" "$budget" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
p, pe, un = j["plan"], j["baselines"]["pipeedge"], j["baselines"]["uniform"]
tput = lambda r: r["throughput_tokens_s"] if r["found"] else float("nan")
ratio = lambda r: p["throughput_tokens_s"] / r["throughput_tokens_s"] if r["found"] else float("nan")
print(f"{sys.argv[2]:<12} {sys.argv[3]:<16} {sys.argv[4]:<6} {sys.argv[5]:<10} {tput(p):9.1f} {tput(pe):9.1f} {tput(un):9.1f} "
      f"{ratio(pe):7.2f}x {ratio(un):7.2f}x {p['avg_bits']:7.2f} {j['search']['seconds']:8.2f}")
PY
  done
done

echo
echo "solver time, Llama-2-70b (80 layers) over 8 GPUs of 4 types, one device order (tests/bench/bench_plan_solve):"
build="${FSQ_BUILD_DIR:-$root/build}"
if cmake --build "$build" --target bench_plan_solve >/dev/null 2>&1; then
  "$build/tests/bench/bench_plan_solve" 2>/dev/null | grep -E '^run/'
else
  echo "(bench_plan_solve not built: Google Benchmark missing)"
fi
