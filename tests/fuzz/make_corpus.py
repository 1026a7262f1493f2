#!/usr/bin/env python3
"""Writes the fuzz seed corpus: small valid GGUF and safetensors files (< 4 KB each).

Run from anywhere: python3 tests/fuzz/make_corpus.py. The output is committed; rerun only
when the seeds should change. Deterministic (fixed random seed), standard library only.
"""
import json
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(1234)

# GGUF value type ids
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
          BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}
# ggml type id -> (block size, bytes per block, offset of the f16 scales to keep finite)
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
        "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q2_K": (10, 256, 84),
        "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176),
        "Q6_K": (14, 256, 210), "BF16": (30, 1, 2)}
# Where each quant block keeps its f16 scale(s), so seeds dequantize to finite values.
HALF_FIELDS = {"Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
               "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208]}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack(SCALAR[t], v)


def tensor_bytes(kind, n):
    _, block, size = GGML[kind]
    if kind == "F32":
        return b"".join(struct.pack("<f", rng.uniform(-2, 2)) for _ in range(n))
    if kind == "F16":
        return b"".join(struct.pack("<e", rng.uniform(-2, 2)) for _ in range(n))
    if kind == "BF16":
        return b"".join(struct.pack("<f", rng.uniform(-2, 2))[2:] for _ in range(n))
    out = b""
    for _ in range(n // block):
        blk = bytearray(rng.getrandbits(8) for _ in range(size))
        for at in HALF_FIELDS[kind]:
            blk[at:at + 2] = struct.pack("<e", rng.uniform(-0.1, 0.1))
        out += bytes(blk)
    return out


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)], tensors: [(name, dims, kind)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += gstr(key) + struct.pack("<I", t) + value(t, v)
    data = b""
    for name, dims, kind in tensors:
        data += b"\0" * (-len(data) % alignment)
        n = 1
        for d in dims:
            n *= d
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", GGML[kind][0], len(data))
        data += tensor_bytes(kind, n)
    out += b"\0" * (-len(out) % alignment)
    return out + data


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, element size)] with filler data."""
    header, data = {}, b""
    for name, dtype, shape, size in tensors:
        n = size
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + n]}
        data += bytes(rng.getrandbits(8) for _ in range(n))
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write(kind, name, blob):
    assert len(blob) < 4096, (name, len(blob))
    path = os.path.join(HERE, "corpus", kind, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(blob)


def main():
    write("gguf", "empty.gguf", gguf([], []))
    write("gguf", "every_type.gguf", gguf(
        [("general.architecture", STR, "llama"), ("u8", U8, 7), ("i8", I8, -7), ("u16", U16, 700),
         ("i16", I16, -700), ("u32", U32, 70000), ("i32", I32, -70000), ("f32", F32, 0.5),
         ("b", BOOL, 1), ("u64", U64, 1 << 40), ("i64", I64, -(1 << 40)), ("f64", F64, 1e5),
         ("tokens", ARR, (STR, ["<s>", "</s>", "a", "b"])), ("scores", ARR, (F32, [0.0, -1.0])),
         ("nested", ARR, (ARR, [(U16, [1, 2]), (STR, ["x"])]))],
        [("token_embd.weight", [8, 4], "F32"), ("blk.0.w", [32, 2], "Q8_0")]))
    write("gguf", "kquants.gguf", gguf(
        [("general.architecture", STR, "llama"), ("llama.block_count", U32, 1),
         ("tokenizer.ggml.model", STR, "gpt2"), ("tokenizer.ggml.add_bos_token", BOOL, 0)],
        [(k.lower(), [256], k) for k in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")]))
    write("gguf", "legacy_v2_align64.gguf", gguf(
        [("general.alignment", U32, 64), ("general.name", STR, "seed")],
        [(k.lower(), [32, 1], k) for k in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "F16", "BF16")],
        version=2, alignment=64))

    write("safetensors", "empty.safetensors", safetensors([]))
    write("safetensors", "two.safetensors", safetensors(
        [("a.weight", "F32", [2, 3], 4), ("b", "F16", [4], 2)], {"format": "pt"}))
    write("safetensors", "dtypes.safetensors", safetensors(
        [("bf", "BF16", [2, 2], 2), ("i8", "I8", [3], 1), ("u8", "U8", [1, 1, 2], 1),
         ("i64", "I64", [2], 8), ("flag", "BOOL", [2], 1), ("s", "F64", [], 8), ("z", "F32", [0, 4], 4)]))


if __name__ == "__main__":
    main()
