#!/usr/bin/env python3
"""Writes tests/data/smollm2/golden.json: golden token ids for the tokenizer stored in the
SmolLM2-135M-Instruct Q4_1 GGUF (shared/models/MANIFEST.md section 3). Run through
make_smollm2_golden.sh.

Reference: transformers' GGUF tokenizer (AutoTokenizer.from_pretrained(dir, gguf_file=...)).
MANIFEST pitfall: it forces add_bos_token and mislabels EOS, so ids come from
encode(add_special_tokens=False) and BOS/EOS/add_bos are read from the GGUF metadata.
Its vocab and merges are checked equal to the GGUF's.

Second pitfall: transformers' GGUF converter gives every "gpt2" tokenizer of a llama
GGUF the plain GPT-2 ByteLevel pre-tokenizer, dropping SmolLM2's Digits(individual_digits)
step that tokenizer.ggml.pre "smollm" stands for (HF tokenizer.json and llama.cpp both split
digits first). ASCII digits come out the same (the vocab has no multi-digit tokens), other
\p{N} characters ("٣٤٥", "½") do not. The golden ids are therefore those of transformers'
tokenizer with its pre-tokenizer set to SmolLM2's; they must equal a plain `tokenizers`
Tokenizer built from the metadata, and the texts where unpatched transformers differs are
listed in golden.json ("transformers_gguf_differs").

Texts: every golden string; all of data/tinystories/tinystories_val.txt; and the longest
prefix of data/wikitext-2-raw/wiki.test.raw of at most 204800 bytes that ends on a UTF-8
character boundary. Files are read as raw bytes (no newline translation). Per file: the
prefix length in bytes, token count, sha256 of the ids as little-endian int32, first 256 ids.
"""

import argparse
import hashlib
import json
import re
import struct
import sys
from pathlib import Path

import gguf
import tokenizers
import transformers
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoTokenizer

WIKI_PREFIX_BYTES = 204800
FIRST_IDS = 256
EVAL_FILES = [("data/tinystories/tinystories_val.txt", None),
              ("data/wikitext-2-raw/wiki.test.raw", WIKI_PREFIX_BYTES)]

GOLDEN_STRINGS = [
    "",
    "Hello world! How are you today?",
    "Once upon a time, there was a little girl named Lily.",
    " leading space",
    "trailing spaces   ",
    "multiple    spaces   between  words",
    "tabs\tand\t\ttabs",
    "new\nlines\n\nand\r\nCRLF\n",
    "\n\n\n",
    "   ",
    " \t \n x",
    "don't I'M we'll they've she'd it's YOU'RE O'Neil 'quoted'",
    "Café naïve résumé façade Ærøskøbing Łódź",
    "Привет, как дела? Съешь же ещё этих мягких французских булок.",
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "مرحبا بالعالم، كيف حالك؟",
    "Numbers: 0 1 12 123 1234 12345 3.14159 -42 1,000,000 2024-01-31",
    "9876543210987654321098765432109876543210",
    "Unicode digits: ٣٤٥ ½ ² ⅷ",
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "if x == 1:\n\tprint(\"tab indented\")\n",
    "Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️",
    "<|im_start|>",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM.<|im_end|>\n",
    "text<|im_end|>more text<|endoftext|>",
    "<|im_start|><|im_start|><|im_end",
    "<repo_name>fsq<file_sep>main.cpp<filename>x",
    "NFD: e\u0301 A\u030a \u212b o\u0308\u0304",
    "Mixed: naïve日本🙂123abc",
    " = Robert Boulter = \n @-@ 1 @,@ 000",
]


def ids_sha256(ids):
    return hashlib.sha256(struct.pack(f"<{len(ids)}i", *ids)).hexdigest()


def utf8_prefix(data, limit):
    """The longest prefix of at most `limit` bytes ending on a character boundary."""
    n = min(limit, len(data))
    while 0 < n < len(data) and (data[n] & 0xC0) == 0x80:
        n -= 1
    return data[:n]


def read_gguf(path):
    r = gguf.GGUFReader(path)

    def field(key, default=None):
        f = r.fields.get(key)
        if f is None:
            return default
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            if f.types[1] == gguf.GGUFValueType.STRING:
                return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            return [f.parts[i][0].item() for i in f.data]
        if vtype == gguf.GGUFValueType.STRING:
            return bytes(f.parts[f.data[0]]).decode("utf-8")
        return f.parts[f.data[0]][0].item()

    keys = ["model", "pre", "tokens", "token_type", "merges", "bos_token_id", "eos_token_id",
            "unknown_token_id", "padding_token_id", "add_bos_token"]
    return {k: field("tokenizer.ggml." + k) for k in keys}


def metadata_sha256(meta):
    """fsq's Tokenizer::sha256() for a GGUF tokenizer (lib/formats/tokenizer.h)."""
    out = bytearray()

    def s(text):
        b = text.encode("utf-8")
        out.extend(struct.pack("<Q", len(b)) + b)

    s("fsq-gguf-tokenizer-v1")
    s(meta["model"])
    s(meta["pre"] if meta["pre"] is not None else "default")
    out.extend(struct.pack("<Q", len(meta["tokens"])))
    for tok, typ in zip(meta["tokens"], meta["token_type"]):
        s(tok)
        out.extend(struct.pack("<Q", typ))
    out.extend(struct.pack("<Q", len(meta["merges"])))
    for m in meta["merges"]:
        s(m)
    return hashlib.sha256(bytes(out)).hexdigest()


def smollm_tokenizer(meta):
    """SmolLM2's tokenizer.json pipeline rebuilt from the GGUF metadata with `tokenizers`."""
    vocab = {t: i for i, t in enumerate(meta["tokens"])}
    merges = [tuple(m.split(" ")) for m in meta["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken(t, normalized=False, special=(ty != 4))
                for t, ty in zip(meta["tokens"], meta["token_type"]) if ty in (2, 3, 4)]
    tok.add_special_tokens(specials)
    return tok


def cross_check_vocab(hf, meta):
    vocab = hf.get_vocab()
    expected = {t: i for i, t in enumerate(meta["tokens"])}
    if vocab != expected:
        sys.exit(f"transformers vocab differs from the GGUF tokens ({len(vocab)} vs {len(expected)})")
    model = json.loads(hf.backend_tokenizer.to_str())["model"]
    merges = [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
    if merges != meta["merges"]:
        sys.exit(f"transformers merges differ from the GGUF merges ({len(merges)} vs {len(meta['merges'])})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True, type=Path)
    ap.add_argument("--shared", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()

    meta = read_gguf(str(args.gguf))
    hf = AutoTokenizer.from_pretrained(str(args.gguf.parent), gguf_file=args.gguf.name)
    cross_check_vocab(hf, meta)
    ref2 = smollm_tokenizer(meta)

    raw = AutoTokenizer.from_pretrained(str(args.gguf.parent), gguf_file=args.gguf.name)
    hf.backend_tokenizer.pre_tokenizer = ref2.pre_tokenizer
    differs = []

    def encode(text):
        ids = hf.encode(text, add_special_tokens=False)
        other = ref2.encode(text, add_special_tokens=False).ids
        if ids != other:
            sys.exit(f"references disagree on {text[:60]!r}: {ids[:20]} vs {other[:20]}")
        if raw.encode(text, add_special_tokens=False) != ids:
            differs.append(text[:80])
        return ids

    cases = []
    for text in GOLDEN_STRINGS:
        ids = encode(text)
        if ref2.decode(ids, skip_special_tokens=False) != text:
            sys.exit(f"reference decode does not round-trip {text!r}")
        cases.append({"text": text, "ids": ids})
    files = []
    for rel, limit in EVAL_FILES:
        data = (args.shared / rel).read_bytes()
        if limit is not None:
            data = utf8_prefix(data, limit)
        ids = encode(data.decode("utf-8"))
        files.append({"path": rel, "bytes": len(data), "whole_file": limit is None,
                      "total_tokens": len(ids), "total_sha256": ids_sha256(ids),
                      "first_ids": ids[:FIRST_IDS]})
        print(f"{rel}: {len(data)} bytes -> {len(ids)} tokens", file=sys.stderr)

    out = {
        "source": {"file": args.gguf.name,
                   "sha256": hashlib.sha256(args.gguf.read_bytes()).hexdigest()},
        "generator": (f"scripts/golden/make_smollm2_golden.py; transformers {transformers.__version__}, "
                      f"tokenizers {tokenizers.__version__}, gguf-py"),
        "metadata": {"model": meta["model"], "pre": meta["pre"], "vocab_size": len(meta["tokens"]),
                     "n_merges": len(meta["merges"]), "bos_token_id": meta["bos_token_id"],
                     "eos_token_id": meta["eos_token_id"], "add_bos_token": meta["add_bos_token"],
                     "tokenizer_sha256": metadata_sha256(meta)},
        "transformers_gguf_differs": differs,
        "cases": cases,
        "files": files,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(out, ensure_ascii=False, indent=1)
    # One line per id list keeps the file short and diffs readable.
    text = re.sub(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]",
                  lambda m: "[" + ", ".join(re.findall(r"-?\d+", m.group(1))) + "]", text)
    (args.out / "golden.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
