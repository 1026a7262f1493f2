#!/usr/bin/env bash
# Regenerates tests/data/smollm2/reference/reference.json: fp32 transformers reference numbers
# (prompt logits, greedy continuations, tinystories_val perplexity under fsq's "gptq" and
# "llama.cpp" protocols) for the SmolLM2-135M-Instruct Q4_1 GGUF, in a throwaway venv.
# Usage: scripts/golden/make_smollm2_reference.sh [shared_dir]   (default: <repo>/../shared)
# Takes 35-50 min on 2 cores (94 forwards of 2048 tokens, 20-30 s each); progress on stderr.
# Debian's python3-torch is reached through --system-site-packages; it needs
# libopenblas0-pthread or it falls back to reference BLAS (minutes per forward). As root this
# script installs both with apt-get when missing.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${1:-$repo/../shared}"
venv="${FSQ_CACHE:-/tmp}/fsq-smollm2-reference-venv"

missing=()
for pkg in python3-torch libopenblas0-pthread; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get install -y --no-install-recommends "${missing[@]}" >&2
  else
    echo "make_smollm2_reference: needs apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
# Pinned so the reference is reproducible (the versions MANIFEST.md section 3 names);
# transformers refuses to load GGUF weights without accelerate.
"$venv/bin/pip" install -q "transformers==4.46.3" "tokenizers==0.20.3" "gguf==0.10.0" \
  "sentencepiece==0.2.0" "protobuf" "numpy<2" "accelerate==1.1.1"

gguf="$("$repo/scripts/fetch-model.sh" smollm2-135m | tail -n 1)"
# Two threads everywhere: torch's intra-op pool and OpenBLAS's own pool.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-2}"
"$venv/bin/python" "$repo/scripts/golden/make_smollm2_reference.py" \
  --gguf "$gguf" --shared "$shared" --out "$repo/tests/data/smollm2/reference" --threads 2
