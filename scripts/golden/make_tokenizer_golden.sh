#!/usr/bin/env bash
# Regenerates tests/data/tokenizers/ (reference tokenizer.json files and golden ids) with the
# reference Python libraries (Hugging Face `tokenizers`, `sentencepiece`) in a throwaway venv.
# Usage: scripts/golden/make_tokenizer_golden.sh [shared_dir]   (default: <repo>/../shared)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${1:-$repo/../shared}"
venv="${FSQ_CACHE:-/tmp}/fsq-golden-venv"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
# Pinned so regenerated golden files are reproducible. sentencepiece 0.1.99 is the closest
# release with Python 3.11 wheels to Debian's libsentencepiece 0.1.97.
"$venv/bin/pip" install -q "tokenizers==0.23.3" "sentencepiece==0.1.99"
"$venv/bin/python" "$repo/scripts/golden/make_tokenizer_golden.py" \
  --shared "$shared" --out "$repo/tests/data/tokenizers"
