#!/usr/bin/env bash
# Calibration benchmark: `fsq calibrate` statistics-only and with --fisher on stories260K
# (128 x 256 windows) and on SmolLM2-135M when fetched (128 x 512; FSQ_SMOLLM2=0 skips it,
# it takes ~30 min on 2 cores). Prints tokens/s and peak RSS of each run, the predicted
# peak, and the ratio of --fisher time to stats-only time, all measured in this run.
#
#   scripts/bench-calib.sh
#   FSQ_THREADS=2 FSQ_SAMPLES=32 scripts/bench-calib.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${FSQ_SHARED_DIR:-$root/../shared}"
cache="${FSQ_CACHE:-$HOME/.cache/fsq}"
threads="${FSQ_THREADS:-$(nproc)}"
samples="${FSQ_SAMPLES:-128}"
data="$shared/data/tinystories/tinystories_val.txt"

fsq="$("$root/scripts/build-fsq.sh" bench-calib)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

runs=("stories260K|$shared/models/stories260K|256")
smol="$cache/models/smollm2-135m/hf"
if [[ "${FSQ_SMOLLM2:-1}" != 0 && -d "$smol" ]]; then runs+=("SmolLM2-135M|$smol|512"); fi

echo "fsq calibrate benchmark: $threads threads, $(nproc) cores, $samples windows, data $(basename "$data")"
printf '%-14s %-7s %9s %10s %10s %12s %12s\n' model mode tokens "seconds" "tok/s" "peak MiB" "pred. MiB"
for run in "${runs[@]}"; do
  IFS='|' read -r name model seq <<<"$run"
  for mode in stats fisher; do
    extra=(); [[ $mode == fisher ]] && extra=(--fisher)
    "$fsq" calibrate --model "$model" --data "$data" --samples "$samples" --seq-len "$seq" --threads "$threads" \
      --progress off --out "$tmp/$name-$mode.safetensors" --json "$tmp/$name-$mode.json" "${extra[@]}" >/dev/null
  done
  python3 - "$name" "$tmp/$name-stats.json" "$tmp/$name-fisher.json" <<'PY'
import json, sys
name, stats, fisher = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
mib = lambda b: b / 2**20
for mode, j in (("stats", stats), ("fisher", fisher)):
    secs = j["stats_seconds"] + j["fisher_seconds"]
    print(f"{name:<14} {mode:<7} {j['tokens']:>9} {secs:>10.2f} {j['tokens'] / secs:>10.1f} "
          f"{mib(j['peak_rss_bytes']):>12.1f} {mib(j['predicted_peak_bytes']):>12.1f}")
ratio = (fisher["stats_seconds"] + fisher["fisher_seconds"]) / stats["stats_seconds"]
print(f"{name:<14} --fisher / stats-only time: {ratio:.2f}x")
PY
done
