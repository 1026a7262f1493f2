#!/usr/bin/env bash
# Fresh machine -> dependencies -> build -> the main job on the default model:
# perplexity and speed of the unquantized model with `fsq eval`.
# Usage: scripts/quickstart.sh [MODEL_DIR [TEXT_FILE]]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FSQ_BUILD_DIR:-$root/build}"
shared="$root/../shared"
model="${1:-$shared/models/stories260K}"
text="${2:-$shared/data/tinystories/tinystories_val.txt}"

"$root/scripts/setup.sh"
FSQ_BUILD_DIR="$build" "$root/scripts/build.sh"

if [ ! -d "$model" ]; then
  echo "quickstart: model folder $model not found; pass MODEL_DIR as the first argument" >&2
  exit 1
fi
echo "quickstart: model $model"
echo "quickstart: text  $text"
mkdir -p "$root/reports"
"$build/tools/fsq/fsq" eval --model "$model" --data "$text" --json "$root/reports/quickstart-eval.json"
echo "quickstart: JSON report written to reports/quickstart-eval.json"
