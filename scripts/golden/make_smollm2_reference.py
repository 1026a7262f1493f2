#!/usr/bin/env python3
"""Writes tests/data/smollm2/reference/reference.json: fp32 reference numbers from transformers
for the SmolLM2-135M-Instruct Q4_1 GGUF (shared/models/MANIFEST.md section 3), i.e. for the
exact dequantization of its weights. Run through make_smollm2_reference.sh.

MANIFEST pitfalls handled here:
- transformers' GGUF loader leaves lm_head untied and randomly initialized (the file has no
  output.weight), so lm_head is tied to embed_tokens by hand and the tie is checked.
- its tokenizer forces add_bos_token, so ids come from encode(add_special_tokens=False), which
  is what the GGUF's add_bos_token=false asks for.
- its converter drops SmolLM2's Digits(individual_digits) pre-tokenizer step (see
  make_smollm2_golden.py); it is put back so ids equal llama.cpp's and HF tokenizer.json's.

Contents: per prompt, the input ids; per position, the top-20 ids/logits, logsumexp, sum of
logits and the logits at a fixed seeded subset of 512 vocab ids; a 32-token greedy
continuation. Perplexity of data/tinystories/tinystories_val.txt at seq_len 2048 under fsq's
"gptq" and "llama.cpp" protocols (DESIGN.md "Evaluation protocol"), with per-window NLL sums.
"""

import argparse
import datetime
import hashlib
import json
import math
import platform
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import gguf
import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = [
    "Once upon a time, there was a little girl named",
    "The capital of France is",
    "def fibonacci(n):\n    ",
]
TOP_K = 20
SUBSET_SEED = 20240531
SUBSET_SIZE = 512
GEN_TOKENS = 32
SEQ_LEN = 2048
DATASET = "data/tinystories/tinystories_val.txt"
ROW_CHUNK = 256  # rows of logits turned into float64 at a time (bounds memory)


def ids_sha256(ids):
    return hashlib.sha256(struct.pack(f"<{len(ids)}i", *ids)).hexdigest()


def r6(x):
    # 6 decimals: finer than fp32's resolution at logit magnitudes (>=1) and keeps the file small.
    return [round(float(v), 6) for v in x]


def gguf_field(reader, key):
    f = reader.fields[key]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    return f.parts[f.data[0]][0].item()


def load(path, threads):
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 torch_dtype=torch.float32)
    # The GGUF has no output.weight: the head is token_embd. transformers does not tie it.
    model.lm_head.weight = model.model.embed_tokens.weight
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    model.eval()
    torch.set_num_threads(threads)

    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    raw = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    return model, tok, raw


@torch.no_grad()
def logits_of(model, ids):
    """fp32 logits [len(ids), vocab] of one sequence, no cache."""
    x = torch.tensor([ids], dtype=torch.long)
    return model(input_ids=x, use_cache=False).logits[0].float()


@torch.no_grad()
def prompt_record(model, ids, subset):
    logits = logits_of(model, ids)
    l64 = logits.double()
    positions = []
    for row, row64 in zip(logits, l64):
        top = torch.topk(row, TOP_K)
        positions.append({"top_ids": top.indices.tolist(), "top_logits": r6(top.values),
                          "logsumexp": round(torch.logsumexp(row64, 0).item(), 6),
                          "sum": round(row64.sum().item(), 4),
                          "subset_logits": r6(row[subset])})
    # Greedy without the KV cache: each step is a full forward over prompt + generated so far,
    # so the result does not depend on cache arithmetic. margin = top1 - top2 logit (near-ties
    # explain argmax disagreements in comparisons).
    seq, gen, margins = list(ids), [], []
    for _ in range(GEN_TOKENS):
        last = logits_of(model, seq)[-1]
        top2 = torch.topk(last, 2)
        nxt = int(top2.indices[0])
        gen.append(nxt)
        margins.append(round(float(top2.values[0] - top2.values[1]), 6))
        seq.append(nxt)
    return positions, gen, margins


@torch.no_grad()
def window_nll(model, ids):
    """Per-position NLL (float64) of ids[1:] given the prefix, one forward of len(ids)."""
    logits = logits_of(model, ids)
    target = torch.tensor(ids[1:], dtype=torch.long)
    nll = torch.empty(len(ids) - 1, dtype=torch.float64)
    for s in range(0, len(ids) - 1, ROW_CHUNK):
        e = min(s + ROW_CHUNK, len(ids) - 1)
        lp = torch.log_softmax(logits[s:e].double(), dim=-1)
        nll[s:e] = -lp.gather(1, target[s:e, None])[:, 0]
    return nll


def perplexity(model, ids, max_windows=0):
    # Both protocols use the same windows here: non-overlapping SEQ_LEN windows from token 0,
    # remainder dropped, and no BOS anywhere (add_bos_token false, so llama.cpp does not replace
    # each window's first token). They differ only in which positions are scored.
    n_win = len(ids) // SEQ_LEN
    if max_windows:
        n_win = min(n_win, max_windows)
    first = SEQ_LEN // 2  # llama.cpp: logits at positions n_ctx/2 .. n_ctx-2
    gptq, llama = [], []
    t0 = time.time()
    for w in range(n_win):
        nll = window_nll(model, ids[w * SEQ_LEN:(w + 1) * SEQ_LEN])
        gptq.append(nll.sum().item())
        llama.append(nll[first:].sum().item())  # nll[i] is the logit at position i scoring i+1
        el = time.time() - t0
        if w == 0 or (w + 1) % 5 == 0 or w + 1 == n_win:
            print(f"window {w + 1}/{n_win}: {el / (w + 1):.1f} s/window, ETA "
                  f"{el / (w + 1) * (n_win - w - 1) / 60:.1f} min, running gptq ppl "
                  f"{math.exp(sum(gptq) / ((w + 1) * (SEQ_LEN - 1))):.4f}", file=sys.stderr, flush=True)
    secs = time.time() - t0

    def summary(sums, per_win, desc):
        scored = per_win * n_win
        mean = sum(sums) / scored
        return {"description": desc, "windows": n_win, "scored_per_window": per_win,
                "scored_tokens": scored, "mean_nll": mean, "ppl": math.exp(mean),
                "window_nll_sums": sums}

    return {
        "gptq": summary(gptq, SEQ_LEN - 1,
                        "non-overlapping windows of seq_len tokens over the stream tokenized once "
                        "(no BOS), remainder dropped, all seq_len-1 shifted tokens scored"),
        "llama.cpp": summary(llama, SEQ_LEN - 1 - first,
                             "windows of n_ctx over the stream tokenized once; add_bos false, so no "
                             "BOS replacement; logits at positions n_ctx/2..n_ctx-2 score the next "
                             "token (n_ctx/2-1 per window), as llama-perplexity"),
    }, secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True, type=Path)
    ap.add_argument("--shared", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-windows", type=int, default=0, help="trial runs only (0 = all)")
    args = ap.parse_args()

    reader = gguf.GGUFReader(str(args.gguf))
    add_bos = bool(gguf_field(reader, "tokenizer.ggml.add_bos_token"))
    assert not add_bos, "this script assumes the GGUF's add_bos_token=false"
    t0 = time.time()
    model, tok, raw = load(args.gguf, args.threads)
    cfg = model.config
    print(f"loaded in {time.time() - t0:.1f} s", file=sys.stderr)
    vocab = cfg.vocab_size

    subset = np.sort(np.random.default_rng(SUBSET_SEED).choice(vocab, SUBSET_SIZE, replace=False))
    subset_t = torch.from_numpy(subset).long()

    t0 = time.time()
    prompts = []
    for text in PROMPTS:
        ids = tok.encode(text, add_special_tokens=False)
        positions, gen, margins = prompt_record(model, ids, subset_t)
        prompts.append({"text": text, "ids": ids, "positions": positions,
                        "greedy_ids": gen, "greedy_text": tok.decode(gen),
                        "greedy_margins": margins})
        print(f"{text!r} -> {tok.decode(gen)!r}", file=sys.stderr)
    prompt_secs = time.time() - t0

    data = (args.shared / DATASET).read_bytes()  # bytes: no newline translation
    text = data.decode("utf-8")
    ids = tok.encode(text, add_special_tokens=False)
    ppl, ppl_secs = perplexity(model, ids, args.max_windows)
    for name, p in ppl.items():
        print(f"{name}: ppl {p['ppl']:.4f} over {p['scored_tokens']} tokens", file=sys.stderr)

    sha = hashlib.sha256(args.gguf.read_bytes()).hexdigest()
    out = {
        "source": {"file": args.gguf.name, "sha256": sha,
                   "note": "fp32 forward of the exact dequantization of the GGUF weights; lm_head "
                           "tied to embed_tokens by hand (transformers leaves it random)"},
        "generator": "scripts/golden/make_smollm2_reference.py",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                     "gguf": getattr(gguf, "__version__", None) or _dist_version("gguf"),
                     "numpy": np.__version__, "sentencepiece": _dist_version("sentencepiece"),
                     "protobuf": _dist_version("protobuf"),
                     "debian_python3_torch": _debian_version("python3-torch"),
                     "debian_libopenblas0_pthread": _debian_version("libopenblas0-pthread")},
        "compute": {"dtype": "float32", "device": "cpu", "threads": args.threads,
                    "attn_implementation": cfg._attn_implementation,
                    "log_softmax": "float32 logits cast to float64, log_softmax in float64",
                    "lm_head_tied": True},
        "config": {k: getattr(cfg, k) for k in ("vocab_size", "hidden_size", "intermediate_size",
                   "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                   "rope_theta", "rms_norm_eps", "max_position_embeddings")},
        "tokenization": {"add_bos_token": add_bos, "encode": "add_special_tokens=False",
                         "pre_tokenizer": "Digits(individual_digits) + ByteLevel (SmolLM2's; "
                                          "transformers' GGUF converter drops the Digits step)"},
        "logits": {"top_k": TOP_K, "subset_seed": SUBSET_SEED,
                   "subset_rng": "numpy.random.default_rng(seed).choice(vocab, 512, replace=False), sorted",
                   "subset_ids": subset.tolist(),
                   "rounding": "logits to 6 decimals; sum of logits (float64) to 4"},
        "greedy": {"tokens": GEN_TOKENS, "kv_cache": False,
                   "method": "argmax of a full no-cache forward over prompt+generated per step; "
                             "does not stop at EOS"},
        "prompts": prompts,
        "perplexity": {"dataset": DATASET, "dataset_sha256": hashlib.sha256(data).hexdigest(),
                       "dataset_bytes": len(data), "seq_len": SEQ_LEN, "total_tokens": len(ids),
                       "tokens_sha256": ids_sha256(ids),
                       "ids_equal_unpatched_transformers":
                           raw.encode(text, add_special_tokens=False) == ids,
                       "protocols": ppl},
        "timings_s": {"prompts_and_greedy": round(prompt_secs, 1), "perplexity": round(ppl_secs, 1),
                      "per_window": round(ppl_secs / max(1, ppl["gptq"]["windows"]), 2)},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    js = json.dumps(out, ensure_ascii=False, indent=1)
    # One line per number list keeps the file short and diffs readable.
    js = re.sub(r"\[\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]",
                lambda m: "[" + ", ".join(re.split(r",\s*", m.group(1).strip())) + "]", js)
    (args.out / "reference.json").write_text(js + "\n", encoding="utf-8")
    print(f"wrote {args.out / 'reference.json'} ({len(js) + 1} bytes)", file=sys.stderr)


def _dist_version(name):
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _debian_version(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
    return r.stdout or None


if __name__ == "__main__":
    main()
