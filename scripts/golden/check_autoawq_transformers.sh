#!/usr/bin/env bash
# Checks an `fsq export --format autoawq` folder against the packed checkpoint it came from,
# with the reference Python code of AutoAWQ and transformers, in a throwaway venv. Not run
# in CI (it installs packages); run it by hand after changing lib/formats/export.
# Usage: scripts/golden/check_autoawq_transformers.sh PACKED_DIR AWQ_DIR
#
# What it proves (no GPU needed): AutoAWQ's own dequantize_gemm turns the exported
# qweight/qzeros/scales into exactly fsq's dequantized weights (decoded independently from
# the packed checkpoint per FORMAT.md, in fp16 as AutoAWQ computes); the tensors load
# strictly into AutoAWQ's WQLinear_GEMM; transformers' AwqConfig parses the
# quantization_config; dense tensors are the source's in fp16. What it does not prove: that
# vLLM's CUDA kernels or transformers' model loading run it (that needs a GPU and vLLM).
#
# Debian's python3-torch (CPU) is reached through --system-site-packages; as root the
# script installs it with apt-get when missing. autoawq is installed without its
# dependencies: only its pure-PyTorch packing_utils.py and gemm.py are imported.
set -euo pipefail
if (($# != 2)); then
  echo "usage: $0 PACKED_DIR AWQ_DIR" >&2
  exit 2
fi
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${FSQ_CACHE:-/tmp}/fsq-autoawq-check-venv"

if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get install -y --no-install-recommends python3-torch >&2
  else
    echo "check_autoawq_transformers: needs Debian's python3-torch (apt-get install python3-torch)" >&2
    exit 1
  fi
fi
if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
# Pinned: the transformers release the other golden scripts use, the last AutoAWQ release
# and an accelerate it imports (without dependencies: they would pull a PyPI torch).
"$venv/bin/pip" install -q "transformers==4.46.3" "safetensors" "numpy<2"
"$venv/bin/pip" install -q --no-deps "autoawq==0.2.9" "accelerate==0.34.2"
"$venv/bin/python" "$repo/scripts/golden/check_autoawq_export.py" "$1" "$2"
