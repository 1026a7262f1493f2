#!/usr/bin/env python3
"""What a PyTorch user gets today on the same GPU, timed like bench_cuda_kernels times fsq's
kernels (CUDA graph of >= 100 calls timed with events, rotating weight copies that L2 cannot hold): fp16 cuBLAS
GEMV/GEMM (torch.matmul), the int4 path of gpt-fast/torchao (aten._weight_int4pack_mm, bf16,
group 128) and int8 torch._int_mm. Given the JSON of bench_cuda_kernels from the same run, it
prints fsq's kernels against these and against the read kernel.

  scripts/cuda-torch-baselines.py [fsq-bench.json] [--reps 200] [--json out.json]
"""
import argparse
import json
import math
import sys

SHAPES = [(4096, 4096, "q/o_proj"), (11008, 4096, "gate/up"), (4096, 11008, "down"), (32000, 4096, "lm_head")]
BATCHES = [1, 4, 16]


def timed_us(torch, fn, copies, reps):
    """Mean microseconds per call of fn(copy) over reps calls, captured in one CUDA graph and
    replayed (as bench_cuda_kernels times fsq's kernels: no Python or launch overhead)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(10):
            fn(copies[i % len(copies)])
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(reps):
            fn(copies[i % len(copies)])
    graph.replay()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    stop.record()
    torch.cuda.synchronize()
    del graph
    return 1000.0 * start.elapsed_time(stop) / reps


def copies_for(nbytes, l2):
    return max(4, math.ceil(2.5 * l2 / nbytes))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fsq_json", nargs="?", help="bench_cuda_kernels --json output of the same run")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--json", help="write the baseline timings here")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("cuda-torch-baselines: no GPU visible to PyTorch")
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size
    print(f"device: {props.name}, torch {torch.__version__}, L2 {l2 / 1e6:.0f} MB")
    dev = "cuda"
    base = {}
    print(f"{'shape':9} {'N x K':12} {'m':>3} {'fp16 us':>9} {'int4pack us':>12}")
    for n, k, name in SHAPES:
        w16 = [torch.randn(n, k, dtype=torch.float16, device=dev) for _ in range(copies_for(n * k * 2, l2))]
        # int4: codes [N, K/2] uint8 packed, then the tensor-core layout; scales and zeros per 128.
        packed, sz = [], None
        try:
            nint4 = copies_for(n * k // 2, l2)
            for _ in range(nint4):
                codes = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
                packed.append(torch.ops.aten._convert_weight_to_int4pack(codes, 8))
            sz = torch.rand(k // 128, n, 2, dtype=torch.bfloat16, device=dev)
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"  int4pack unavailable: {e}")
            packed = []
        for m in BATCHES:
            x16 = torch.randn(m, k, dtype=torch.float16, device=dev)
            t16 = timed_us(torch, lambda w: torch.matmul(x16, w.t()), w16, args.reps)
            t4 = float("nan")
            if packed:
                xb = torch.randn(m, k, dtype=torch.bfloat16, device=dev)
                try:
                    t4 = timed_us(torch, lambda w: torch.ops.aten._weight_int4pack_mm(xb, w, 128, sz), packed, args.reps)
                except Exception as e:  # noqa: BLE001
                    print(f"  int4pack_mm failed: {e}")
            base[(n, k, m)] = {"fp16_us": t16, "int4pack_us": t4}
            print(f"{name:9} {n:5}x{k:<6} {m:3} {t16:9.2f} {t4:12.2f}")
        del w16, packed
        torch.cuda.empty_cache()

    # GEMM at M = 512: fp16 vs int8 torch._int_mm (int32 accumulate), the W8A8 yardstick.
    gemm = {}
    for n, k, name in SHAPES[:3]:
        m = 512
        a16 = torch.randn(m, k, dtype=torch.float16, device=dev)
        w16 = [torch.randn(n, k, dtype=torch.float16, device=dev) for _ in range(4)]
        a8 = torch.randint(-128, 127, (m, k), dtype=torch.int8, device=dev)
        w8 = [torch.randint(-128, 127, (n, k), dtype=torch.int8, device=dev) for _ in range(4)]
        t16 = timed_us(torch, lambda w: torch.matmul(a16, w.t()), w16, args.reps)
        try:
            t8 = timed_us(torch, lambda w: torch._int_mm(a8, w.t()), w8, args.reps)
        except Exception as e:  # noqa: BLE001
            print(f"  _int_mm failed: {e}")
            t8 = float("nan")
        gemm[(n, k)] = (t16, t8)
        tflops = 2 * m * n * k / 1e6
        print(f"GEMM M=512 {name:9} fp16 {t16:8.2f} us ({tflops / t16:6.1f} TFLOP/s)  int8 _int_mm {t8:8.2f} us "
              f"({tflops / t8:6.1f} TOP/s, {t16 / t8:.2f}x fp16)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gemv": [{"rows": n, "cols": k, "m": m, **v} for (n, k, m), v in base.items()],
                       "gemm512": [{"rows": n, "cols": k, "fp16_us": a, "int8_us": b} for (n, k), (a, b) in gemm.items()]},
                      f, indent=1)
    if not args.fsq_json:
        return
    with open(args.fsq_json) as f:
        fsq = json.load(f)
    read = fsq["read_gbs"]
    print(f"\nfsq kernels vs baselines (read kernel {read:.0f} GB/s; fp16 and int4pack %read count their weight bytes)")
    print(f"{'kind':9} {'N x K':12} {'m':>3} {'fsq us':>8} {'%read':>6} {'x fp16':>7} {'x int4pack':>10} "
          f"{'fp16 %read':>10} {'int4pack %read':>14}")
    for c in fsq["cases"]:
        b = base.get((c["rows"], c["cols"], c["m"]))
        if not b:
            continue
        n, k = c["rows"], c["cols"]
        pct = 100 * c["bytes"] / c["us"] / 1e3 / read
        fp16_pct = 100 * n * k * 2 / b["fp16_us"] / 1e3 / read
        int4_bytes = n * k // 2 + (k // 128) * n * 4
        int4_pct = 100 * int4_bytes / b["int4pack_us"] / 1e3 / read
        print(f"{c['kind']:9} {n:5}x{k:<6} {c['m']:3} {c['us']:8.2f} {pct:5.1f}% {b['fp16_us'] / c['us']:6.2f}x "
              f"{b['int4pack_us'] / c['us']:9.2f}x {fp16_pct:9.1f}% {int4_pct:13.1f}%")


if __name__ == "__main__":
    main()
