#!/usr/bin/env python3
"""Writes tests/formats/gguf/data/dequant_golden.gguf: an independent reference for the C++
dequantizers. For each ggml type, a tensor "<type>" holds seeded random blocks (plus an
all-zero and an all-ones-bits block) and "<type>.expected" (F32) holds gguf-py's own
dequantization of those bytes. The file is written by gguf-py's GGUFWriter, so reading it
also checks our reader against a third-party writer.

Needs gguf-py and numpy (e.g. python3 -m venv /tmp/g && /tmp/g/bin/pip install gguf==0.19.0
numpy). Deterministic; the output is committed, rerun only to change it.
"""
import os

import numpy as np
from gguf import GGMLQuantizationType as T, GGUFWriter, GGML_QUANT_SIZES, quants

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "dequant_golden.gguf")

# Offsets of each block's f16 scales: set to finite, moderate values so the expected
# floats are finite and the comparison is meaningful.
HALF_FIELDS = {T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
               T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}
RANDOM_BLOCKS = 2


def blocks_for(qtype, rng):
    block, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(RANDOM_BLOCKS + 2, size), dtype=np.uint8)
    raw[-2, :] = 0x00
    raw[-1, :] = 0xFF
    for at in HALF_FIELDS[qtype]:
        scales = rng.uniform(-0.05, 0.05, size=raw.shape[0]).astype(np.float16)
        scales[-2:] = np.float16(0.03125)
        raw[:, at:at + 2] = scales.view(np.uint8).reshape(-1, 2)
    return raw.reshape(1, -1), raw.shape[0] * block


def main():
    rng = np.random.default_rng(20240601)
    w = GGUFWriter(OUT, arch="golden")
    w.add_string("golden.source", "gguf-py quants.dequantize")
    for qtype in HALF_FIELDS:
        data, n = blocks_for(qtype, rng)
        expected = quants.dequantize(data, qtype).astype(np.float32).reshape(1, n)
        assert np.isfinite(expected).all(), qtype.name
        w.add_tensor(qtype.name, data, raw_dtype=qtype)
        w.add_tensor(qtype.name + ".expected", expected)
    # Plain float types: bit patterns incl. subnormals, infinities and negative zero.
    f16 = rng.integers(0, 1 << 16, size=(1, 256), dtype=np.uint16)
    f16[0, :4] = [0x0001, 0x8000, 0x7C00, 0xFBFF]
    f16[(f16 & 0x7C00) == 0x7C00] &= 0xFBFF  # no NaN (NaN != NaN); keep one inf above
    f16[0, 2] = 0x7C00
    w.add_tensor("F16", f16.view(np.uint8), raw_dtype=T.F16)
    w.add_tensor("F16.expected", f16.view(np.float16).astype(np.float32))
    bf16 = rng.integers(0, 1 << 16, size=(1, 256), dtype=np.uint16)
    bf16[(bf16 & 0x7F80) == 0x7F80] &= 0xFF7F  # no NaN/inf
    w.add_tensor("BF16", bf16.view(np.uint8), raw_dtype=T.BF16)
    w.add_tensor("BF16.expected", (bf16.astype(np.uint32) << 16).view(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(OUT, os.path.getsize(OUT))


if __name__ == "__main__":
    main()
