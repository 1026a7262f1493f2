#!/usr/bin/env python3
"""Writes tests/data/tokenizers/: small byte-level BPE tokenizers trained with Hugging Face
`tokenizers` (they are the reference tokenizers) and golden ids from the reference libraries
for those and for the staged SentencePiece models. Run through make_tokenizer_golden.sh."""

import argparse
import hashlib
import json
import struct
from pathlib import Path

import sentencepiece as spm
import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

GPT2_REGEX = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

VOCAB_SIZE = 1500
TRAIN_BYTES = 300_000      # of each eval text, for training
PREFIX_CHARS = 20_000      # golden ids are stored in full for this prefix of each eval text
EVAL_FILES = ["data/tinystories/tinystories_val.txt", "data/wikitext-2-raw/wiki.test.raw"]

GOLDEN_STRINGS = [
    "",
    "Once upon a time",
    "Hello world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
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
    "<|endoftext|>",
    "Hello<|endoftext|>world",
    "<|begin_of_text|>Hi there<|eot_id|>",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>",
    "<|im_start|><|im_start|><|im_end",
    "<think>reasoning</think> answer <think>",
    "before <|mask|> after",
    "<s>Hello</s> <unk>",
    "NFD: e\u0301 A\u030a \u212b \u1100\u1161\u11a8 o\u0308\u0304",
    "Mixed: naïve日本🙂123abc",
    "@-@ = Robert Boulter = \n",
]


def ids_sha256(ids):
    """sha256 of the ids as little-endian int32, the form the C++ test hashes."""
    return hashlib.sha256(struct.pack(f"<{len(ids)}i", *ids)).hexdigest()


def read_text(path):
    # newline="" keeps \r\n as is: the C++ side reads the raw bytes.
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def golden(encode, shared, source, generator):
    out = {"source": source, "generator": generator,
           "cases": [{"text": t, "ids": encode(t)} for t in GOLDEN_STRINGS], "files": []}
    for rel in EVAL_FILES:
        text = read_text(shared / rel)
        ids = encode(text)
        out["files"].append({
            "path": rel, "prefix_chars": PREFIX_CHARS, "prefix_ids": encode(text[:PREFIX_CHARS]),
            "total_tokens": len(ids), "total_sha256": ids_sha256(ids)})
    return out


def train_texts(shared):
    texts = []
    for rel in EVAL_FILES:
        text = read_text(shared / rel)[:TRAIN_BYTES]
        texts.extend(text.split("\n"))
    return texts


def train(shared, pre_tokenizer, special, ignore_merges=False, normalizer=None):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=special)
    tok.train_from_iterator(train_texts(shared), trainer)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def reload_with(tok, edit):
    """Round-trips through JSON so fields the trainer may reset can be set explicitly."""
    data = json.loads(tok.to_str())
    edit(data)
    return Tokenizer.from_str(json.dumps(data))


def build_tokenizers(shared):
    toks = {}
    # (1) GPT-2: ByteLevel with the GPT-2 regex; merges in the legacy "a b" string form.
    gpt2 = train(shared, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                 ["<|endoftext|>"])

    def legacy_merges(d):
        d["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m
                                for m in d["model"]["merges"]]
    toks["gpt2_style"] = (reload_with(gpt2, legacy_merges), legacy_merges,
                          {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"})

    # (2) Llama-3: Split(regex, Isolated) + ByteLevel(no regex), ignore_merges, BOS template.
    llama3_special = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                      "<|end_header_id|>", "<|eot_id|>"]
    llama3 = train(shared, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)]),
        llama3_special, ignore_merges=True)
    bos = llama3.token_to_id("<|begin_of_text|>")
    llama3.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)])])

    def set_ignore_merges(d):
        d["model"]["ignore_merges"] = True
    toks["llama3_style"] = (reload_with(llama3, set_ignore_merges), set_ignore_merges,
                            {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})

    # (3) SmolLM: Digits(individual) + ByteLevel(regex); a non-special added token too.
    smol = train(shared, pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)]),
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    smol.add_tokens(["<think>", "</think>"])
    toks["smollm_style"] = (smol, None, {"bos_token": "<|im_start|>",
                                         "eos_token": {"content": "<|im_end|>", "special": True}})

    # (4) Qwen2: NFC normalizer, Split(regex) + ByteLevel(no regex); an lstrip special token.
    qwen = train(shared, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)]),
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], normalizer=normalizers.NFC())
    qwen.add_special_tokens([AddedToken("<|mask|>", lstrip=True, rstrip=False, special=True,
                                        normalized=False)])
    toks["qwen2_style"] = (qwen, None, {"eos_token": "<|endoftext|>", "add_bos_token": False})
    return toks


# Pre-tokenizer variants applied to the gpt2_style vocabulary: behaviours the four trained
# tokenizers above do not reach (Split with String patterns, each behaviour, invert, Digits).
def pretokenizer_variants():
    seq = lambda *p: {"type": "Sequence", "pretokenizers": list(p)}
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    bl_prefix = dict(bl, add_prefix_space=True)
    bl_noregex = dict(bl, use_regex=False)

    def split(pattern, behavior, invert=False, regex=True):
        return {"type": "Split", "pattern": {"Regex" if regex else "String": pattern},
                "behavior": behavior, "invert": invert}
    return [
        bl_prefix,
        bl_noregex,
        seq(split(" ", "Removed", regex=False), bl_noregex),
        seq(split(r"\s+", "Removed"), bl_noregex),
        seq(split(r"[,.!?]", "MergedWithPrevious"), bl_noregex),
        seq(split(r"[,.!?]", "MergedWithNext"), bl_noregex),
        seq(split(" ", "Isolated", regex=False), bl_noregex),
        seq(split(" ", "MergedWithPrevious", regex=False), bl_noregex),
        seq(split(" ", "MergedWithNext", regex=False), bl_noregex),
        seq(split(r"\s", "Contiguous"), bl_noregex),
        seq(split(r"\s", "MergedWithNext"), bl_noregex),
        seq(split(r"\p{L}+", "MergedWithPrevious"), bl_noregex),
        seq(split(r"\p{L}+", "MergedWithNext", invert=True), bl_noregex),
        seq(split(r"\p{L}+", "MergedWithPrevious", invert=True), bl_noregex),
        seq(split(r"\p{L}+", "Contiguous", invert=True), bl_noregex),
        seq(split(r"\p{N}", "Contiguous"), bl_noregex),
        seq(split(r"\p{L}+", "Isolated", invert=True), bl_noregex),
        seq(split(r"\p{L}+", "Removed", invert=True), bl_noregex),
        seq({"type": "Digits", "individual_digits": False}, bl),
        seq({"type": "Digits", "individual_digits": True}, bl_prefix),
    ]


# Small handwritten tokenizer.json files for model features the trained ones leave unused
# (byte_fallback, unk/fuse_unk, subword prefix/suffix, added-token flags, ignore_merges).
def handmade_tokenizers():
    def tok(vocab, merges, pre=None, added=(), **model):
        return {"version": "1.0", "truncation": None, "padding": None,
                "added_tokens": [dict({"single_word": False, "lstrip": False, "rstrip": False,
                                       "normalized": False, "special": True}, **a) for a in added],
                "normalizer": None, "pre_tokenizer": pre, "post_processor": None,
                "decoder": None,
                "model": dict({"type": "BPE", "dropout": None, "unk_token": None,
                               "continuing_subword_prefix": None, "end_of_word_suffix": None,
                               "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                               "vocab": {t: i for i, t in enumerate(vocab)}, "merges": merges},
                              **model)}
    ws = {"type": "WhitespaceSplit"}
    abc = ["<unk>", "a", "b", "c", "ab", "bc", "abc", "<0xC3>", "<0xA9>"]
    abc_merges = [["b", "c"], ["a", "b"], ["ab", "c"]]
    texts = ["abc", "ab c", "abcabc", "aé", "é", "ä", "xyz", "axyb", "a b  c", "",
             "a<x>b", "a <x> b", "<x>", "a  [y]  b", "[y]", "abc[y]abc", "<x><x>"]
    added = [{"id": 9, "content": "<x>", "single_word": True},
             {"id": 10, "content": "[y]", "lstrip": True, "rstrip": True},
             {"id": 11, "content": "ab", "special": False, "normalized": True}]
    return {
        "merges_only": tok(abc, abc_merges),
        "ignore_merges": tok(abc, abc_merges, ignore_merges=True),
        "byte_fallback": tok(abc, abc_merges, ws, byte_fallback=True, unk_token="<unk>"),
        "unk": tok(abc, abc_merges, ws, unk_token="<unk>"),
        "unk_fused": tok(abc, abc_merges, ws, unk_token="<unk>", fuse_unk=True),
        "added_flags": tok(abc, abc_merges, {"type": "Whitespace"}, added, unk_token="<unk>"),
        "prefix_suffix": tok(["a", "##b", "##c</w>", "ab", "abc</w>", "c</w>", "##b</w>"],
                             [["a", "##b"], ["ab", "##c</w>"]], ws,
                             continuing_subword_prefix="##", end_of_word_suffix="</w>"),
    }, texts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    out = args.out
    (out / "golden").mkdir(parents=True, exist_ok=True)
    gen = f"tokenizers {tokenizers.__version__}"

    def hf_encode(tok):
        return lambda t: tok.encode(t, add_special_tokens=False).ids

    for name, (tok, edit, config) in build_tokenizers(args.shared).items():
        d = out / name
        d.mkdir(exist_ok=True)
        text = tok.to_str()
        if edit is not None:  # re-apply: to_str() may drop what the edit set
            data = json.loads(text)
            edit(data)
            text = json.dumps(data, ensure_ascii=False)
        (d / "tokenizer.json").write_text(text, encoding="utf-8")
        (d / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
        ref = Tokenizer.from_file(str(d / "tokenizer.json"))
        g = golden(hf_encode(ref), args.shared, f"{name}/tokenizer.json", gen)
        (out / "golden" / f"{name}.json").write_text(json.dumps(g, ensure_ascii=False))

    base = json.loads((out / "gpt2_style" / "tokenizer.json").read_text(encoding="utf-8"))
    variants = []
    for pre in pretokenizer_variants():
        base["pre_tokenizer"] = pre
        tok = Tokenizer.from_str(json.dumps(base))
        variants.append({"pre_tokenizer": pre, "cases": [
            {"text": t, "ids": hf_encode(tok)(t)} for t in GOLDEN_STRINGS]})
    (out / "golden" / "pretokenizer_variants.json").write_text(json.dumps(
        {"base": "gpt2_style/tokenizer.json", "generator": gen, "variants": variants},
        ensure_ascii=False))

    handmade, texts = handmade_tokenizers()
    entries = []
    for name, spec in handmade.items():
        tok = Tokenizer.from_str(json.dumps(spec))
        entries.append({"name": name, "tokenizer": spec, "cases": [
            {"text": t, "ids": hf_encode(tok)(t)} for t in texts]})
    (out / "golden" / "handmade.json").write_text(json.dumps(
        {"generator": gen, "tokenizers": entries}, ensure_ascii=False, indent=1))

    for name, rel in [("stories260K", "models/stories260K/tokenizer.model"),
                      ("llama2", "models/llama2-tokenizer/tokenizer.model")]:
        sp = spm.SentencePieceProcessor(model_file=str(args.shared / rel))
        g = golden(lambda t: sp.encode(t), args.shared, f"shared:{rel}",
                   f"sentencepiece {spm.__version__}")
        (out / "golden" / f"{name}.json").write_text(json.dumps(g, ensure_ascii=False))


if __name__ == "__main__":
    main()
