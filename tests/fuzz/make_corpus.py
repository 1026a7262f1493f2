#!/usr/bin/env python3
"""Writes the fuzz seed corpus: small valid GGUF and safetensors files (< 4 KB each), and
the packed-checkpoint seeds (model.safetensors of a tiny packed model with LUT linears) with
the fixed config.json and fsq.json that fuzz_packed pairs them with (tests/fuzz/packed/).

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


# --- packed checkpoint (fuzz_packed) -------------------------------------------------------
# One tiny model, three quantized linears: a lut4 linear with a CSR part (U16 columns; cols
# <= 65536 rules out I32 columns, which would need > 65536 columns and far more than 4 KB), a
# lut3 linear that is dense-only, a uniform w4g32a linear with a bias; plus a dense norm.
# Odd column counts leave padding bits in the packed rows.
LUT4 = "model.layers.0.mlp.down_proj"
LUT3 = "model.layers.0.mlp.up_proj"
UNI = "model.layers.0.self_attn.q_proj"
PACKED_LINEARS = {
    LUT4: ("lut4", 4, 22),
    LUT3: ("lut3", 6, 20),
    UNI: ("w4g32a", 4, 64),
}
PLACEHOLDER_SHA = "0" * 64  # fuzz_packed opens with verify_sha256 = false


def pack_rows(codes, rows, cols, bits):
    """FORMAT.md bit order: each row an LSB-first bit stream, padded to whole 32-bit words."""
    words_per_row = (cols * bits + 31) // 32
    out = []
    for r in range(rows):
        stream = 0
        for j in range(cols):
            stream |= codes[r * cols + j] << (j * bits)
        out += [(stream >> (32 * w)) & 0xFFFFFFFF for w in range(words_per_row)]
    return b"".join(struct.pack("<I", w) for w in out), words_per_row


def f16s(values):
    return b"".join(struct.pack("<e", v) for v in values)


def raw_safetensors(tensors):
    """tensors: [(name, dtype, shape, bytes)], laid out back to back (no alignment)."""
    header, data = {}, b""
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def lut_tensors(name, bits, rows, cols, sparse_rows):
    """sparse_rows: None (dense-only) or, per row, the sorted columns that carry a correction."""
    codes = [rng.randrange(1 << bits) for _ in range(rows * cols)]
    qweight, words = pack_rows(codes, rows, cols, bits)
    out = [(name + ".qweight", "I32", [rows, words], qweight),
           (name + ".lut", "F16", [rows, 1 << bits],
            f16s(sorted(rng.uniform(-1, 1) for _ in range(rows << bits))))]
    if sparse_rows is not None:
        row_ptr, cols_all = [0], []
        for row in sparse_rows:
            assert row == sorted(set(row)) and all(0 <= c < cols for c in row)
            cols_all += row
            row_ptr.append(len(cols_all))
        out += [(name + ".sparse_row_ptr", "I32", [rows + 1], b"".join(struct.pack("<i", p) for p in row_ptr)),
                (name + ".sparse_col", "U16", [len(cols_all)], b"".join(struct.pack("<H", c) for c in cols_all)),
                (name + ".sparse_val", "F16", [len(cols_all)], f16s(rng.uniform(-4, 4) for _ in cols_all))]
    return out


def uniform_tensors(name, rows, cols, bits=4, group=32):
    codes = [rng.randrange(1 << bits) for _ in range(rows * cols)]
    qweight, words = pack_rows(codes, rows, cols, bits)
    groups = cols // group
    return [(name + ".qweight", "I32", [rows, words], qweight),
            (name + ".scales", "F16", [rows, groups], f16s(rng.uniform(0.001, 0.1) for _ in range(rows * groups))),
            (name + ".qzeros", "U8", [rows, groups], bytes(rng.randrange(1 << bits) for _ in range(rows * groups))),
            (name + ".bias", "F16", [rows], f16s(rng.uniform(-1, 1) for _ in range(rows)))]


def packed_model(lut4_sparse_rows, reverse=False):
    _, rows4, cols4 = PACKED_LINEARS[LUT4]
    _, rows3, cols3 = PACKED_LINEARS[LUT3]
    _, rowsu, colsu = PACKED_LINEARS[UNI]
    tensors = (lut_tensors(LUT4, 4, rows4, cols4, lut4_sparse_rows) + lut_tensors(LUT3, 3, rows3, cols3, None)
               + uniform_tensors(UNI, rowsu, colsu)
               + [("model.norm.weight", "F32", [8], b"".join(struct.pack("<f", 1.0) for _ in range(8)))])
    if reverse:
        tensors.reverse()
    return tensors


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def packed_seeds():
    cols4 = PACKED_LINEARS[LUT4][2]
    seeds = {
        # 1-2 corrections per row, every row non-empty.
        "lut_csr.safetensors": packed_model([[0, 7], [3], [cols4 - 1], [5, 6]]),
        # Rows 0 and 2 carry nothing (equal row pointers); tensors stored in reverse order,
        # odd nnz so the tensors after sparse_col are not 4-byte aligned.
        "lut_csr_empty_rows.safetensors": packed_model([[], [1, 2, 20], [], [9]], reverse=True),
        # Row 1 is sparse in every column; row 3 only in its last one.
        "lut_csr_full_row.safetensors": packed_model([[4], list(range(cols4)), [], [cols4 - 1]]),
        # A sparse part with no entries: row pointers all 0, sparse_col and sparse_val [0].
        "lut_csr_nnz0.safetensors": packed_model([[], [], [], []]),
        # No sparse part anywhere: both LUT linears dense-only.
        "lut_dense_only.safetensors": packed_model(None),
    }
    for name, tensors in seeds.items():
        write("packed", name, raw_safetensors(tensors))
    # The manifest and config fuzz_packed (and the PackedFuzzSeeds test) pair every seed with.
    # tensor_sha256 lists the full seed's tensors with placeholder hashes; the harness and the
    # test replace it by the names each input holds (hashes are not verified).
    full = packed_model([[0], [1], [2], [3]])
    linears = {name: {"quant_type": qt, "shape": [rows, cols], "method": "fuzz", "options": {}}
               for name, (qt, rows, cols) in PACKED_LINEARS.items()}
    write_json(os.path.join(HERE, "packed", "fsq.json"), {
        "format_version": 1,
        "source_sha256": PLACEHOLDER_SHA,
        "calibration": None,
        "linears": linears,
        "tensor_sha256": {name: PLACEHOLDER_SHA for name, _, _, _ in full},
        "producer": {"name": "make_corpus.py", "version": "0", "commit": "unknown"},
    })
    write_json(os.path.join(HERE, "packed", "config.json"), {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 22, "num_hidden_layers": 1, "num_attention_heads": 4,
        "vocab_size": 8, "torch_dtype": "float16",
        "quantization_config": {"quant_method": "fsq", "format_version": 1, "manifest": "fsq.json",
                                "quant_types": sorted({qt for qt, _, _ in PACKED_LINEARS.values()})},
    })


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

    packed_seeds()


if __name__ == "__main__":
    main()
