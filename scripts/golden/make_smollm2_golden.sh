#!/usr/bin/env bash
# Regenerates tests/data/smollm2/golden.json: SmolLM2-135M-Instruct GGUF tokenizer golden ids
# from the reference Python libraries (transformers' GGUF tokenizer, cross-checked against a
# `tokenizers` tokenizer built from the same metadata), in a throwaway venv.
# Usage: scripts/golden/make_smollm2_golden.sh [shared_dir]   (default: <repo>/../shared)
# transformers refuses to read GGUF without torch; Debian's python3-torch serves (CPU only,
# tokenization needs no tensors), reached through --system-site-packages. As root this
# script installs it with apt-get when missing.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${1:-$repo/../shared}"
venv="${FSQ_CACHE:-/tmp}/fsq-smollm2-golden-venv"

if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get install -y --no-install-recommends python3-torch libopenblas0-pthread >&2
  else
    echo "make_smollm2_golden: needs Debian's python3-torch (apt-get install python3-torch libopenblas0-pthread)" >&2
    exit 1
  fi
fi
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
# Pinned so regenerated golden files are reproducible (the versions MANIFEST.md section 3 names).
"$venv/bin/pip" install -q "transformers==4.46.3" "tokenizers==0.20.3" "gguf==0.10.0" \
  "sentencepiece==0.2.0" "protobuf" "numpy<2"

gguf="$("$repo/scripts/fetch-model.sh" smollm2-135m | tail -n 1)"
"$venv/bin/python" "$repo/scripts/golden/make_smollm2_golden.py" \
  --gguf "$gguf" --shared "$shared" --out "$repo/tests/data/smollm2"
