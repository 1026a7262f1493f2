#!/usr/bin/env bash
# Builds llama.cpp's tools (llama-perplexity, llama-quantize, llama-imatrix, llama-bench,
# llama-completion, llama-speculative and the RPC server ggml-rpc-server) from the vendor/llama.cpp folder of the llama-cpp-python
# source distribution on PyPI, and caches them: the comparison baseline of fsq's speed and
# quality numbers, never part of fsq (nothing of llama.cpp is committed here).
#
#   scripts/llama-cpp.sh            builds once (~5-10 min on 2 cores), then prints at once
#   scripts/llama-cpp.sh --if-cached prints the folder when already built, else exits 1
#   scripts/llama-cpp.sh --fetch-only downloads the source distribution into the cache and
#                                     exits (scripts/test.sh runs it beside fsq's build)
#   "$(scripts/llama-cpp.sh | tail -n 1)/llama-bench" -m model.gguf
#
# The last line printed is the folder holding the binaries. The cache key is the pinned
# llama-cpp-python version and this CPU's instruction-set flags (the build is -march=native,
# as a user would build it for speed): another kind of CPU builds its own copy.
# AMX is left out (-mno-amx-*, "noamx" in the key): on a 2-core Intel Xeon VM with AMX,
# ggml's AMX matmul segfaulted on every quantized SmolLM2 file tried (Q4_0, Q8_0, Q4_K_M,
# fsq's and llama.cpp's own; llama.cpp issue 20824, closed without a fix). Its AVX-512 VNNI
# kernels still run there; on CPUs without AMX the build is unchanged.
#   FSQ_LLAMA_CPP_PYTHON_VERSION  (default 0.3.36)   FSQ_CACHE_DIR (default ~/.cache/fsq)
#   FSQ_JOBS (default nproc)
set -euo pipefail

version="${FSQ_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache_root="${FSQ_CACHE_DIR:-$HOME/.cache/fsq}/llama.cpp"
jobs="${FSQ_JOBS:-$(nproc)}"
targets=(llama-perplexity llama-quantize llama-imatrix llama-bench llama-completion llama-speculative ggml-rpc-server)

cpu_key="$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | sort | sha256sum | cut -c1-12)"
prefix="$cache_root/$version-$(uname -m)-$cpu_key-noamx"
bin="$prefix/bin"

sdist_cache="$cache_root/llama_cpp_python-$version.tar.gz"
# The source distribution, downloaded once into the cache (atomically: a partial download
# never looks complete).
fetch_sdist() {
  [[ -f $sdist_cache ]] && return 0
  mkdir -p "$cache_root"
  local dl
  dl="$(mktemp -d "$cache_root/download-XXXXXX")"
  echo "llama-cpp: downloading the llama-cpp-python $version source distribution" >&2
  if ! python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$dl" >&2; then
    rm -rf "$dl"
    return 1
  fi
  mv "$dl"/llama_cpp_python-*.tar.gz "$sdist_cache"
  rm -rf "$dl"
}

complete() {
  for t in "${targets[@]}"; do [[ -x "$bin/$t" ]] || return 1; done
}
if complete; then
  echo "$bin"
  exit 0
fi
[[ ${1:-} != --if-cached ]] || exit 1
if [[ ${1:-} == --fetch-only ]]; then
  fetch_sdist
  exit
fi

for tool in cmake g++ python3; do
  command -v "$tool" >/dev/null || { echo "llama-cpp: $tool is missing; run scripts/setup.sh first" >&2; exit 1; }
done
mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/build-XXXXXX")"
trap 'rm -rf "$work"' EXIT

fetch_sdist
tar -xzf "$sdist_cache" -C "$work" "llama_cpp_python-$version/vendor/llama.cpp"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"

echo "llama-cpp: building ${targets[*]} with $jobs jobs" >&2
# Explicit -mno-amx-* flags, so -march=native keeps AMX off. Only where the compiler knows them
# (x86-64, GCC >= 11): another compiler would reject them, and its -march=native has no AMX.
no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
echo | g++ $no_amx -x c++ -E - >/dev/null 2>&1 || no_amx=""
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_RPC=ON \
  -DCMAKE_C_FLAGS="$no_amx" -DCMAKE_CXX_FLAGS="$no_amx" \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF >"$work/configure.log" 2>&1 ||
  { tail -n 30 "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j "$jobs" --target "${targets[@]}" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; exit 1; }

# Install atomically: a half-copied folder never looks complete.
staging="$prefix.tmp-$$"
rm -rf "$staging"
mkdir -p "$staging/bin"
for t in "${targets[@]}"; do cp "$work/build/bin/$t" "$staging/bin/"; done
printf 'llama-cpp-python %s\ncommit %s\n' "$version" \
  "$(grep -m1 -o 'LLAMA_BUILD_COMMIT[^)]*' "$work/build/CMakeCache.txt" 2>/dev/null || echo unknown)" \
  >"$staging/VERSION"
rm -rf "$prefix"
mv "$staging" "$prefix"
echo "$bin"
