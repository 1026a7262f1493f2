#!/usr/bin/python3
"""Writes a Hugging Face checkpoint folder of a LLaMA-family shape with random weights.

For memory and speed tests at the sizes users hold (7B-70B) on a machine that cannot
download them; quality is measured on real models (SmolLM2), never on these.

  scripts/make-random-checkpoint.py --preset llama-2-7b --out /tmp/llama-2-7b-random
  scripts/make-random-checkpoint.py --preset qwen2-7b --dtype f32 --layers 2 --out DIR
  scripts/make-random-checkpoint.py --list

The folder holds config.json, generation_config.json, sharded safetensors (HF convention:
model-0000i-of-0000n.safetensors, at most --max-shard-gb each, and
model.safetensors.index.json) and a real tokenizer (Llama 2's SentencePiece model from
../shared/models/llama2-tokenizer unless --tokenizer names another folder; ids below 32000,
so the larger vocabularies of llama-3 and qwen2 only shape the embedding and head). Weights are
normal(0, 0.02) for matrices (norm gains 1 + normal(0, 0.02), biases normal(0, 0.02)),
drawn per tensor from numpy's PCG64 seeded with --seed and the tensor's index, so the same
arguments write the same bytes. Tensors are written in chunks: memory stays small whatever
the model size. The folder appears whole or not at all (written under OUT.tmp-PID, renamed).
"""

import argparse
import json
import os
import shutil
import struct
import sys

# Shapes as the published config.json files give them.
PRESETS = {
    "llama-2-7b": dict(arch="LlamaForCausalLM", model_type="llama", hidden=4096, intermediate=11008, layers=32,
                       heads=32, kv_heads=32, vocab=32000, max_pos=4096, rope_theta=10000.0, eps=1e-5, bias=False),
    "llama-2-13b": dict(arch="LlamaForCausalLM", model_type="llama", hidden=5120, intermediate=13824, layers=40,
                        heads=40, kv_heads=40, vocab=32000, max_pos=4096, rope_theta=10000.0, eps=1e-5, bias=False),
    "llama-3-8b": dict(arch="LlamaForCausalLM", model_type="llama", hidden=4096, intermediate=14336, layers=32,
                       heads=32, kv_heads=8, vocab=128256, max_pos=8192, rope_theta=500000.0, eps=1e-5, bias=False),
    "qwen2-7b": dict(arch="Qwen2ForCausalLM", model_type="qwen2", hidden=3584, intermediate=18944, layers=28,
                     heads=28, kv_heads=4, vocab=152064, max_pos=32768, rope_theta=1000000.0, eps=1e-6, bias=True),
    # Small shapes for tests: the same code paths in seconds.
    "tiny-llama": dict(arch="LlamaForCausalLM", model_type="llama", hidden=128, intermediate=352, layers=2,
                       heads=4, kv_heads=2, vocab=32000, max_pos=2048, rope_theta=10000.0, eps=1e-5, bias=False),
    # Larger than the memory the scale test grants fsq (tests/scripts/memory_limit_test.sh):
    # 630 M parameters, 1.26 GB (1.17 GiB) in bf16, generated in under a minute.
    "ci-1.4gb": dict(arch="LlamaForCausalLM", model_type="llama", hidden=1024, intermediate=2816, layers=48,
                     heads=16, kv_heads=8, vocab=32000, max_pos=2048, rope_theta=10000.0, eps=1e-5, bias=False),
    "tiny-qwen2": dict(arch="Qwen2ForCausalLM", model_type="qwen2", hidden=128, intermediate=352, layers=2,
                       heads=4, kv_heads=2, vocab=32000, max_pos=2048, rope_theta=1000000.0, eps=1e-6, bias=True),
}

DTYPES = {"bf16": ("BF16", 2), "f16": ("F16", 2), "f32": ("F32", 4)}
CHUNK = 1 << 22  # elements drawn and converted at a time
STD = 0.02


def fail(message):
    print(f"make-random-checkpoint: {message}", file=sys.stderr)
    sys.exit(1)


def tensor_list(p):
    """(name, shape, kind) in HF order; kind: matrix, gain or bias."""
    head_dim = p["hidden"] // p["heads"]
    q_rows, kv_rows = p["heads"] * head_dim, p["kv_heads"] * head_dim
    out = [("model.embed_tokens.weight", (p["vocab"], p["hidden"]), "matrix")]
    for i in range(p["layers"]):
        pre = f"model.layers.{i}."
        out.append((pre + "input_layernorm.weight", (p["hidden"],), "gain"))
        for name, rows in (("q_proj", q_rows), ("k_proj", kv_rows), ("v_proj", kv_rows)):
            out.append((pre + f"self_attn.{name}.weight", (rows, p["hidden"]), "matrix"))
            if p["bias"]:
                out.append((pre + f"self_attn.{name}.bias", (rows,), "bias"))
        out.append((pre + "self_attn.o_proj.weight", (p["hidden"], q_rows), "matrix"))
        out.append((pre + "post_attention_layernorm.weight", (p["hidden"],), "gain"))
        out.append((pre + "mlp.gate_proj.weight", (p["intermediate"], p["hidden"]), "matrix"))
        out.append((pre + "mlp.up_proj.weight", (p["intermediate"], p["hidden"]), "matrix"))
        out.append((pre + "mlp.down_proj.weight", (p["hidden"], p["intermediate"]), "matrix"))
    out.append(("model.norm.weight", (p["hidden"],), "gain"))
    out.append(("lm_head.weight", (p["vocab"], p["hidden"]), "matrix"))
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def encode(np, values, dtype):
    """float32 values -> bytes of `dtype` (bf16 rounded to nearest even, as torch does)."""
    if dtype == "f32":
        return values.astype("<f4").tobytes()
    if dtype == "f16":
        return values.astype("<f2").tobytes()
    bits = values.astype("<f4").view("<u4")
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return rounded.astype("<u2").tobytes()


def write_tensor(np, f, index, shape, kind, dtype, seed):
    rng = np.random.Generator(np.random.PCG64([seed, index]))
    left = numel(shape)
    while left > 0:
        n = min(CHUNK, left)
        values = rng.standard_normal(n, dtype=np.float32) * np.float32(STD)
        if kind == "gain":
            values += np.float32(1.0)
        f.write(encode(np, values, dtype))
        left -= n


def plan_shards(tensors, dtype, max_shard_bytes):
    shards, current, size = [], [], 0
    for t in tensors:
        nbytes = numel(t[1]) * DTYPES[dtype][1]
        if current and size + nbytes > max_shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append(t)
        size += nbytes
    if current:
        shards.append(current)
    return shards


def write_shard(np, path, shard, dtype, seed, index_of, progress):
    header, offset = {}, 0
    for name, shape, _ in shard:
        nbytes = numel(shape) * DTYPES[dtype][1]
        header[name] = {"dtype": DTYPES[dtype][0], "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    header["__metadata__"] = {"format": "pt"}
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * ((8 - len(blob) % 8) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name, shape, kind in shard:
            write_tensor(np, f, index_of[name], shape, kind, dtype, seed)
            progress(name)
        f.flush()
        os.fsync(f.fileno())
    return offset


def config_json(p, dtype, name):
    return {
        "architectures": [p["arch"]],
        "model_type": p["model_type"],
        "hidden_size": p["hidden"],
        "intermediate_size": p["intermediate"],
        "num_hidden_layers": p["layers"],
        "num_attention_heads": p["heads"],
        "num_key_value_heads": p["kv_heads"],
        "vocab_size": p["vocab"],
        "max_position_embeddings": p["max_pos"],
        "rms_norm_eps": p["eps"],
        "rope_theta": p["rope_theta"],
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "bos_token_id": 1,  # the tokenizer's (Llama 2's unless --tokenizer says otherwise)
        "eos_token_id": 2,
        "torch_dtype": {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[dtype],
        "_fsq_random_weights": f"scripts/make-random-checkpoint.py --preset {name}: random weights, no quality",
    }


def copy_tokenizer(src, out):
    shutil.copyfile(os.path.join(src, "tokenizer.model"), os.path.join(out, "tokenizer.model"))
    config = {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": False,
              "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None,
              "clean_up_tokenization_spaces": False, "legacy": True}
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "special_tokens_map.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, f, indent=2)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    default_tokenizer = os.path.join(os.path.dirname(root), "shared", "models", "llama2-tokenizer")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), help="model shape")
    ap.add_argument("--out", help="folder to create (must not exist)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="weight dtype (default bf16)")
    ap.add_argument("--layers", type=int, help="decoder layers (default: the preset's)")
    ap.add_argument("--max-shard-gb", type=float, default=5.0, help="largest shard in GB of 10^9 bytes (default 5)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weights (default 0)")
    ap.add_argument("--tokenizer", default=default_tokenizer, help="folder with the tokenizer.model to copy")
    ap.add_argument("--list", action="store_true", help="print the presets and their sizes, then exit")
    a = ap.parse_args()
    if a.list:
        for name in sorted(PRESETS):
            n = sum(numel(s) for _, s, _ in tensor_list(PRESETS[name]))
            print(f"{name:12s} {n / 1e9:7.2f} B parameters, {n * 2 / 1e9:7.1f} GB in bf16")
        return
    if not a.preset or not a.out:
        fail("give --preset and --out (or --list)")
    if a.layers is not None and a.layers < 1:
        fail(f"--layers must be at least 1, got {a.layers}")
    if not a.max_shard_gb > 0:
        fail(f"--max-shard-gb must be positive, got {a.max_shard_gb}")
    if not os.path.isfile(os.path.join(a.tokenizer, "tokenizer.model")):
        fail(f"{os.path.join(a.tokenizer, 'tokenizer.model')} not found: give --tokenizer a folder holding a "
             "SentencePiece tokenizer.model")
    if os.path.lexists(a.out):
        fail(f"{a.out} already exists; choose a new --out folder")
    try:
        import numpy as np
    except ImportError:
        fail("needs numpy in " + sys.executable + ": apt-get install python3-numpy (scripts/setup.sh installs it) and run the script as it is, with Debian's /usr/bin/python3")

    p = dict(PRESETS[a.preset])
    if a.layers is not None:
        p["layers"] = a.layers
    tensors = tensor_list(p)
    index_of = {name: i for i, (name, _, _) in enumerate(tensors)}
    shards = plan_shards(tensors, a.dtype, int(a.max_shard_gb * 1e9))
    total = sum(numel(s) for _, s, _ in tensors) * DTYPES[a.dtype][1]
    free = shutil.disk_usage(os.path.dirname(os.path.abspath(a.out)) or ".").free
    if total > free:
        fail(f"{a.out}: needs {total / 1e9:.1f} GB, the disk has {free / 1e9:.1f} GB free")

    staging = f"{a.out}.tmp-{os.getpid()}"
    os.makedirs(staging)
    try:
        done = [0]

        def progress(name):
            done[0] += 1
            if sys.stderr.isatty() or done[0] == len(tensors):
                print(f"\rmake-random-checkpoint: {done[0]}/{len(tensors)} tensors", end="", file=sys.stderr)

        weight_map = {}
        for i, shard in enumerate(shards):
            file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            write_shard(np, os.path.join(staging, file), shard, a.dtype, a.seed, index_of, progress)
            for name, _, _ in shard:
                weight_map[name] = file
        print(file=sys.stderr)
        with open(os.path.join(staging, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        with open(os.path.join(staging, "config.json"), "w") as f:
            json.dump(config_json(p, a.dtype, a.preset), f, indent=2)
        with open(os.path.join(staging, "generation_config.json"), "w") as f:
            json.dump({"bos_token_id": 1, "eos_token_id": 2, "do_sample": False}, f, indent=2)
        copy_tokenizer(a.tokenizer, staging)
        os.rename(staging, a.out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    print(f"make-random-checkpoint: wrote {a.out} ({a.preset}, {p['layers']} layers, {a.dtype}, "
          f"{total / 1e9:.2f} GB in {len(shards)} shard(s))")


if __name__ == "__main__":
    main()
