#!/usr/bin/env bash
# The GPU checks of the CUDA backend, in one run on a machine with a GPU (the device tool's
# lent H100/H200): the backend test suite (kernels, decode ops, the whole decode step against
# its host reference), the same suite under compute-sanitizer memcheck, the kernel benchmark,
# the decoder's tokens/s at LLaMA-2-7B's shape (W4, LUT-3, fp16) and the PyTorch baselines of the same run.
# Needs prebuilt binaries (FSQ_CUDA_ARCHS=90 for Hopper keeps them small):
#   scripts/build.sh -DFSQ_CUDA_ARCHS=90 (or any build folder) then, on the GPU machine,
#   scripts/cuda-device-check.sh BUILD_DIR OUT_DIR
set -uo pipefail
build="${1:?usage: cuda-device-check.sh BUILD_DIR OUT_DIR}"
out="${2:?usage: cuda-device-check.sh BUILD_DIR OUT_DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$out/device.txt"
status=0
echo "== backend suite"
"$build/tests/runtime/test_cuda_kernels" --gtest_brief=1 --gtest_output="xml:$out/suite.xml" 2>&1 | tail -n 25 || status=1
echo "== backend suite, 4-bit on the SIMT kernel (FSQ_CUDA_W4_MMA=0)"
FSQ_CUDA_W4_MMA=0 "$build/tests/runtime/test_cuda_kernels" --gtest_brief=1 --gtest_filter='*w4*' 2>&1 | tail -n 5 \
  || status=1
echo "== compute-sanitizer memcheck"
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/runtime/test_cuda_kernels" --gtest_brief=1 \
    >"$out/memcheck.log" 2>&1
  rc=$?
  tail -n 6 "$out/memcheck.log"
  echo "memcheck exit $rc"
  [ "$rc" = 0 ] || status=1
else
  echo "compute-sanitizer not found"
  status=1
fi
echo "== kernel benchmark"
"$build/tests/bench/bench_cuda_kernels" --json "$out/bench.json" | tee "$out/bench.txt" || status=1
echo "== decode end to end: the CUDA decoder at LLaMA-2-7B's shape, random W4 g128, LUT-3 + 0.45 % CSR and fp16 weights"
"$build/tests/bench/bench_cuda_decode" --layers 32 --bits 4 --batches 1,4,16 | tee "$out/decode.txt" || status=1
"$build/tests/bench/bench_cuda_decode" --layers 32 --bits 3 --lut --batches 1,16 | tee -a "$out/decode.txt" || status=1
"$build/tests/bench/bench_cuda_decode" --layers 32 --bits 16 --batches 1 | tee -a "$out/decode.txt" || status=1
echo "== PyTorch baselines"
PYTHONUNBUFFERED=1 python3 "$root/scripts/cuda-torch-baselines.py" "$out/bench.json" --json "$out/torch.json" \
  | tee "$out/baselines.txt" || status=1
if [ "${FSQ_NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  echo "== Nsight Compute: one launch each of the W4 tensor-core, W4 SIMT and LUT-3 GEMVs (batch 1, 4099 x 4160)"
  sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis)
  suite="$build/tests/runtime/test_cuda_kernels"
  ncu "${sections[@]}" --kernel-name regex:w4_mma --launch-count 1 "$suite" \
    --gtest_filter='*w4g64a_f16_n4099_k4160_m1' >"$out/ncu-w4-mma.txt" 2>&1
  FSQ_CUDA_W4_MMA=0 ncu "${sections[@]}" --kernel-name regex:uniform_gemv --launch-count 1 "$suite" \
    --gtest_filter='*w4g64a_f16_n4099_k4160_m1' >"$out/ncu-w4-simt.txt" 2>&1
  ncu "${sections[@]}" --kernel-name regex:lut_gemv --launch-count 1 "$suite" \
    --gtest_filter='*lut3_dense_f16_n4099_k4160_m1' >"$out/ncu-lut3.txt" 2>&1
  grep -h -E "Memory Throughput|DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Compute \(SM\) Thr" \
    "$out"/ncu-*.txt
fi
exit $status
