#!/usr/bin/env python3
"""myriad's tokenizers against the reference implementations: HF `tokenizers` for tokenizer.json
and `tiktoken` for tiktoken files. Drives `myriad tokenize --jsonl` and `myriad detokenize
--jsonl` (one process per tokenizer for the whole corpus).

  - token ids identical on the corpus (tests/data/tokenizers/corpus.jsonl.xz, made by
    tools/make_tokenizer_corpus.py) plus every special/added token of each tokenizer in context,
    for deepseek_v3, qwen3, llama3 (HF) and o200k_base, cl100k_base, the shipped model (tiktoken);
  - Kimi's pattern (class intersection, which PCRE2 lacks) rewritten by myriad vs the original
    pattern in tiktoken, with o200k ranks, on the corpus and on Han-rich mixed text;
  - runs of 140,000 to 200,000 characters without a space (one pre-tokenizer piece each);
  - decode: myriad's text equals the oracle's decode and normalizer(x);
  - invalid UTF-8 (raw bytes on the command line, lone surrogates in JSON) is replaced by U+FFFD
    before tokenizing, i.e. encodes like Python's bytes.decode("utf-8", "replace");
  - --add-special-tokens; tokenizer.json variants exercising what the fixtures do not (added-token
    lstrip/rstrip/single_word/normalized, normalizers, Split behaviours, Digits, Metaspace,
    ByteLevel with its regex, ignore_merges, decoders, a character-level BPE with byte fallback).

A plain script: prints one line per check and `N passed, N failed`; exits 1 on any failure.
Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_tokenizer_oracle.py
"""

import json
import lzma
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")

import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MYRIAD = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
FIXTURES = os.path.join(os.path.dirname(MYRIAD), "tokenizers")  # unpacked by CMake
SHIPPED = os.path.join(REPO, "models", "myriad-tiny")
CORPUS = os.path.join(REPO, "tests", "data", "tokenizers", "corpus.jsonl.xz")

KIMI_PATTERN = "|".join([
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])

STATS = []  # (what, strings, bytes) compared


def corpus():
    with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def myriad_tokenize(model, texts, add_special=False):
    args = [MYRIAD, "--quiet", "tokenize", model, "--jsonl"]
    if add_special:
        args.append("--add-special-tokens")
    inp = "".join(json.dumps(t) + "\n" for t in texts)
    p = subprocess.run(args, input=inp.encode("utf-8"), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    out = [json.loads(line) for line in p.stdout.decode().split("\n")[:-1]]
    assert len(out) == len(texts), (len(out), len(texts))
    return out


def myriad_detokenize(model, id_lists, skip_special=False):
    args = [MYRIAD, "--quiet", "detokenize", model, "--jsonl"]
    if skip_special:
        args.append("--skip-special-tokens")
    inp = "".join(json.dumps(ids) + "\n" for ids in id_lists)
    p = subprocess.run(args, input=inp.encode(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    out = [json.loads(line) for line in p.stdout.decode("utf-8").split("\n")[:-1]]
    assert len(out) == len(id_lists)
    return out


def compare(what, texts, want, got):
    bad = [k for k in range(len(texts)) if want[k] != got[k]]
    nbytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    STATS.append((what, len(texts), nbytes, len(bad)))
    if bad:
        k = bad[0]
        w, g = want[k], got[k]
        i = next((j for j in range(min(len(w), len(g))) if w[j] != g[j]), min(len(w), len(g)))
        raise AssertionError(f"{what}: {len(bad)} of {len(texts)} differ; first {texts[k][:120]!r}: "
                             f"at {i} want {w[max(0, i - 3):i + 5]} got {g[max(0, i - 3):i + 5]}")
    print(f"    {what}: {len(texts)} strings, {nbytes} bytes, identical")


def special_lines(specials):
    """Every special/added token alone and in context."""
    lines = []
    for s in specials:
        lines += [s, f"a{s}b", f" {s} ", f"{s}{s}", f"x {s}\n", f"Hello{s}world.", f"中文{s}😀"]
    return lines


# ---- tokenizer.json fixtures ------------------------------------------------------------------


def hf_fixture(name):
    path = os.path.join(FIXTURES, name)
    tk = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    return path, tk


def hf_check(name, tk, path, texts):
    want = [e.ids for e in tk.encode_batch(texts, add_special_tokens=False)]
    got = myriad_tokenize(path, texts)
    compare(f"{name} encode", texts, want, got)
    # decode: myriad's text = HF's text = the normalized input
    dec = myriad_detokenize(path, got)
    want_dec = tk.decode_batch(got, skip_special_tokens=False)
    compare(f"{name} decode", texts, want_dec, dec)
    norm = tk.normalizer.normalize_str if tk.normalizer else (lambda s: s)
    compare(f"{name} decode(encode(x)) == normalize(x)", texts, [norm(t) for t in texts], dec)
    dec_skip = myriad_detokenize(path, got, skip_special=True)
    compare(f"{name} decode skipping specials", texts,
            tk.decode_batch(got, skip_special_tokens=True), dec_skip)


def make_hf_fixture_test(name):
    def test():
        path, tk = hf_fixture(name)
        added = [t.content for t in tk.get_added_tokens_decoder().values()]
        hf_check(name, tk, path, corpus() + special_lines(added))
    test.__name__ = f"test_{name}"
    return test


# ---- tiktoken fixtures ------------------------------------------------------------------------


def tiktoken_encoding(path, pat_str=None):
    with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    ranks = load_tiktoken_bpe(os.path.join(path, "tiktoken.model"))
    specials = {v["content"]: int(k) for k, v in cfg.get("added_tokens_decoder", {}).items()}
    enc = tiktoken.Encoding(os.path.basename(path), pat_str=pat_str or cfg["pat_str"],
                            mergeable_ranks=ranks, special_tokens=specials)
    return enc, specials


def tiktoken_check(name, enc, path, texts):
    want = [enc.encode(t, allowed_special="all") for t in texts]
    got = myriad_tokenize(path, texts)
    compare(f"{name} encode", texts, want, got)
    dec = myriad_detokenize(path, got)
    compare(f"{name} decode", texts, [enc.decode(ids) for ids in got], dec)
    compare(f"{name} decode(encode(x)) == x", texts, texts, dec)


def make_tiktoken_test(name, path):
    def test():
        enc, specials = tiktoken_encoding(path)
        tiktoken_check(name, enc, path, corpus() + special_lines(list(specials)))
    test.__name__ = f"test_{name}"
    return test


def han_rich_texts(n, seed=5):
    """Han next to letters of other scripts, in every order, for the pattern's intersection."""
    rng = random.Random(seed)
    han = "中文漢字汉语東京北京学习机器人工智能的了是在一不有这个"
    kana = "ひらがなカタカナーゝゞヽヾ々〆〇"
    other = ["English", "WORD", "Word", "éàü", "Ελληνικά", "Русский", "한국어", "ไทย", "हिन्दी",
             "ǅungla", "ʰʲ", "'s", "'LL", "1234", "。", "，", "、", " ", "\n", "Ⅻ", "ꙮ", "ſ"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(2, 30)):
            r = rng.random()
            if r < 0.35:
                parts.append("".join(rng.choice(han) for _ in range(rng.randint(1, 6))))
            elif r < 0.5:
                parts.append("".join(rng.choice(kana) for _ in range(rng.randint(1, 4))))
            else:
                parts.append(rng.choice(other))
        out.append("".join(parts))
    return out


def test_kimi_pattern_rewrite():
    """tiktoken with Kimi's original pattern (o200k ranks) vs myriad with its PCRE2 rewrite."""
    o200k = os.path.join(FIXTURES, "o200k_base")
    with tempfile.TemporaryDirectory() as d:
        os.symlink(os.path.join(o200k, "tiktoken.model"), os.path.join(d, "tiktoken.model"))
        with open(os.path.join(o200k, "tokenizer_config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        del cfg["pat_str"]  # so myriad uses Kimi's pattern
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        enc, specials = tiktoken_encoding(o200k, pat_str=KIMI_PATTERN)
        texts = corpus() + han_rich_texts(2000) + special_lines(list(specials))
        want = [enc.encode(t, allowed_special="all") for t in texts]
        compare("Kimi pattern (rewritten) with o200k ranks", texts, want,
                myriad_tokenize(d, texts))


def long_runs():
    """Pieces far longer than any corpus line: runs without a space of 131,000+ characters
    (PCRE2's JIT stack once refused them: "JIT stack limit reached")."""
    return ["a" * 140000, "Hello " + "xY" * 80000 + " world", "é" * 70000 + "x",
            "漢" * 60000 + "abc" * 50000, "1" * 150000, " " * 150000 + "end",
            "word " * 2000 + "z" * 200000]


def test_long_runs():
    texts = long_runs()
    path, tk = hf_fixture("deepseek_v3")
    compare("deepseek_v3 long runs", texts,
            [e.ids for e in tk.encode_batch(texts, add_special_tokens=False)],
            myriad_tokenize(path, texts))
    for name, path in (("o200k_base", os.path.join(FIXTURES, "o200k_base")),
                       ("myriad-tiny", SHIPPED)):
        enc, _ = tiktoken_encoding(path)
        compare(f"{name} long runs", texts, [enc.encode(t) for t in texts],
                myriad_tokenize(path, texts))
    o200k = os.path.join(FIXTURES, "o200k_base")
    with tempfile.TemporaryDirectory() as d:  # Kimi's pattern, rewritten for PCRE2
        os.symlink(os.path.join(o200k, "tiktoken.model"), os.path.join(d, "tiktoken.model"))
        with open(os.path.join(o200k, "tokenizer_config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        del cfg["pat_str"]
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        enc, _ = tiktoken_encoding(o200k, pat_str=KIMI_PATTERN)
        compare("Kimi pattern long runs", texts, [enc.encode(t) for t in texts],
                myriad_tokenize(d, texts))


# ---- invalid UTF-8, --add-special-tokens, the plain command line ------------------------------


INVALID = [b"abc\xff", b"\xe4\xbd", b"\xe4\xbd\xa0\xe5", b"\xf0\x9f\x98 ok", b"\xc0\xaf",
           b"\xed\xa0\x80x", b"\xf4\x90\x80\x80", b"\x80\x80\x80", b"a\xfe\xffb",
           b"<|im_end|>\xff<|im_end|>", b"\xe2\x82", b"\xf0\x9f\x91\x8d\xf0\x9f"]


def test_invalid_utf8():
    """Raw bytes as TEXT and lone surrogates in JSON lines: U+FFFD, as errors="replace"."""
    qwen = os.path.join(FIXTURES, "qwen3")
    tk = Tokenizer.from_file(os.path.join(qwen, "tokenizer.json"))
    enc, _ = tiktoken_encoding(SHIPPED)
    for path, oracle, samples in (
            (qwen, lambda s: tk.encode(s, add_special_tokens=False).ids, INVALID[::3]),
            (SHIPPED, lambda s: enc.encode(s, allowed_special="all"), INVALID)):
        for raw in samples:
            p = subprocess.run([MYRIAD, "--quiet", "tokenize", path, raw], capture_output=True)
            assert p.returncode == 0, p.stderr
            want = oracle(raw.decode("utf-8", "replace"))
            assert json.loads(p.stdout) == want, (path, raw, p.stdout, want)
        lone = ["a\ud800b", "\udfff", "x\ud83d", "\ud83d\ude00 ok"]
        inp = "".join(json.dumps(s) + "\n" for s in lone).encode()
        p = subprocess.run([MYRIAD, "--quiet", "tokenize", path, "--jsonl"], input=inp,
                           capture_output=True)
        assert p.returncode == 0, p.stderr
        got = [json.loads(line) for line in p.stdout.decode().splitlines()]
        want = [oracle(s.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
                for s in lone]
        assert got == want, (got, want)
    STATS.append(("invalid UTF-8", len(INVALID[::3]) + len(INVALID) + 8, sum(map(len, INVALID)), 0))


def test_add_special_tokens():
    texts = ["Hello world", "", "<think>x</think>", "中文"]
    for name in ("deepseek_v3", "qwen3", "llama3"):
        path = os.path.join(FIXTURES, name)
        plain = myriad_tokenize(path, texts)
        added = myriad_tokenize(path, texts, add_special=True)
        with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
            bos = [0] if json.load(f).get("add_bos_token") else []  # transformers' Llama rule
        assert added == [bos + ids for ids in plain], (name, added)
    for path in (os.path.join(FIXTURES, "o200k_base"), SHIPPED):  # no add_bos_token: nothing
        assert myriad_tokenize(path, texts, add_special=True) == myriad_tokenize(path, texts)
    # A TemplateProcessing post-processor is followed (checked against HF).
    j = small_byte_level_bpe()
    ids = {t["content"]: t["id"] for t in j["added_tokens"]}
    j["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|im_end|>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {k: {"id": k, "ids": [ids[k]], "tokens": [k]}
                           for k in ("<|im_start|>", "<|im_end|>")}}
    with tempfile.TemporaryDirectory() as d:
        text = json.dumps(j)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(text)
        ref = Tokenizer.from_str(text)
        compare("TemplateProcessing --add-special-tokens", texts,
                [e.ids for e in ref.encode_batch(texts, add_special_tokens=True)],
                myriad_tokenize(d, texts, add_special=True))


def test_command_line():
    """`tokenize MODEL TEXT` prints one array; `detokenize MODEL IDS` prints the text exactly."""
    p = subprocess.run([MYRIAD, "--quiet", "tokenize", SHIPPED, "Hi <|im_end|>\n"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.endswith("]\n") and p.stdout.count("\n") == 1, p
    ids = json.loads(p.stdout)
    assert 3842 in ids, ids
    p = subprocess.run([MYRIAD, "--quiet", "detokenize", SHIPPED, ",".join(map(str, ids))],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == "Hi <|im_end|>\n", repr(p.stdout)
    p = subprocess.run([MYRIAD, "--quiet", "detokenize", SHIPPED, "--skip-special-tokens",
                        ",".join(map(str, ids))], capture_output=True, text=True)
    assert p.stdout == "Hi \n", repr(p.stdout)
    for args in (["tokenize", SHIPPED], ["detokenize", SHIPPED, "1,x"],
                 ["detokenize", SHIPPED, "999999"], ["tokenize", "/nonexistent", "x"]):
        p = subprocess.run([MYRIAD, "--quiet"] + args, capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, (args, p)
    p = subprocess.run([MYRIAD, "--quiet", "tokenize", SHIPPED, "--jsonl"], input="[1]\n",
                       capture_output=True, text=True)
    assert p.returncode == 2 and "line 1" in p.stderr, p


# ---- tokenizer.json variants ------------------------------------------------------------------


def small_byte_level_bpe():
    """A byte-level BPE trained here on the corpus (HF's trainer): small, so loads are quick."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=3000, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tk.train_from_iterator(corpus()[:300], trainer)
    return json.loads(tk.to_str())


class Variants:
    """A small byte-level BPE's tokenizer.json with some parts replaced, in a temporary folder."""

    def __init__(self):
        self.base = small_byte_level_bpe()
        self.model_text = json.dumps(self.base["model"])
        docs = corpus()
        self.texts = docs[::6] + [
            "Hello world HELLO World", "ony anthony ony. (ony) _ony ony_ ony1", "<mask>",
            "a <mask> b", "  <mask>  x", "x<mask>y", "\t<mask>\n<mask>", "的确 的确的 中的确",
            "Hello!Hello  Hello", "ｆｕｌｌｗｉｄｔｈ ﬁ ① ½ Å", "résumé RÉSUMÉ",
            "a  b\t\tc\n\nd   ", " leading", "x" * 50 + " " + "9" * 40, "Straße İ ΣΑΣ",
            "<|im_start|>user<|im_end|>",
        ]

    def text(self, model=None, **parts):
        j = {k: v for k, v in self.base.items() if k != "model"}
        j.update(parts)
        return '{"model": ' + (json.dumps(model) if model else self.model_text) + ", " + \
            json.dumps(j)[1:]

    def check(self, name, texts=None, model=None, **parts):
        text = self.text(model, **parts)
        texts = texts or self.texts
        ref = Tokenizer.from_str(text)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
                f.write(text)
            got = myriad_tokenize(d, texts)
            compare(f"variant {name} encode", texts,
                    [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)], got)
            compare(f"variant {name} decode", texts,
                    ref.decode_batch(got, skip_special_tokens=False), myriad_detokenize(d, got))


def byte_level(add_prefix_space=False, use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True,
            "use_regex": use_regex}


def seq(*pres):
    return {"type": "Sequence", "pretokenizers": list(pres)}


def test_variants():
    v = Variants()
    # Added tokens with every flag, given ids by HF itself (a token already in the vocabulary
    # keeps its id there), so that the file is consistent.
    for normalizer, label in (({"type": "Lowercase"}, "Lowercase"), (None, "no normalizer")):
        ref = Tokenizer.from_str(v.text(normalizer=normalizer))
        ref.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, normalized=False,
                                           special=True)])
        ref.add_tokens([AddedToken("ony", single_word=True, normalized=True),
                        AddedToken("HELLO", lstrip=True, normalized=True),
                        AddedToken("的确", rstrip=True, single_word=True, normalized=False),
                        AddedToken("Wor", normalized=True)])
        added = json.loads(ref.to_str())["added_tokens"]
        v.check(f"added-token flags, {label}", added_tokens=added, normalizer=normalizer)
    v.check("NFKC", normalizer={"type": "NFKC"})
    v.check("NFD", normalizer={"type": "NFD"})
    v.check("Sequence of Replace, Prepend, Strip", normalizer={"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "ab"}, "content": "X"},
        {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
        {"type": "Strip", "strip_left": True, "strip_right": False},
        {"type": "Prepend", "prepend": "▁"}]})
    for behavior in ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"):
        for invert in (False, True):
            split = {"type": "Split", "pattern": {"Regex": r"\s+|[.,!?]"}, "behavior": behavior,
                     "invert": invert}
            v.check(f"Split {behavior}{' invert' if invert else ''}",
                    pre_tokenizer=seq(split, byte_level()))
    v.check("Split on a String", pre_tokenizer=seq(
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext",
         "invert": False}, byte_level()))
    v.check("ByteLevel with GPT-2 regex and prefix space",
            pre_tokenizer=byte_level(add_prefix_space=True, use_regex=True))
    v.check("Digits individual", pre_tokenizer=seq({"type": "Digits", "individual_digits": True},
                                                   byte_level(use_regex=True)))
    v.check("Digits runs", pre_tokenizer=seq({"type": "Digits", "individual_digits": False},
                                             byte_level()))
    for scheme in ("first", "always", "never"):
        v.check(f"Metaspace {scheme}", pre_tokenizer=seq(
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": True},
            byte_level()))
    v.check("ignore_merges", model=dict(v.base["model"], ignore_merges=True))
    v.check("merges as pairs", model=dict(v.base["model"],
                                          merges=[m.split(" ") if isinstance(m, str) else m
                                                  for m in v.base["model"]["merges"]]))
    v.check("decoder Sequence of ByteLevel, Replace, Strip", decoder={
        "type": "Sequence", "decoders": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
             "use_regex": True},
            {"type": "Replace", "pattern": {"String": "e"}, "content": "E"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})


def test_character_level_bpe():
    """A BPE over characters (Metaspace, byte fallback, unk) trained here with HF's trainer."""
    texts = corpus()
    for byte_fallback in (True, False):
        tk = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=byte_fallback))
        tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
        tk.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                        decoders.Fuse(), decoders.Strip(" ", 1, 0)])
        specials = ["<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
        trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=specials,
                                      show_progress=False, limit_alphabet=200)
        tk.train_from_iterator(texts[:200], trainer)
        with tempfile.TemporaryDirectory() as d:
            tk.save(os.path.join(d, "tokenizer.json"))
            sample = texts[::4]
            got = myriad_tokenize(d, sample)
            name = f"character-level BPE, byte_fallback {byte_fallback}"
            compare(f"{name} encode", sample,
                    [e.ids for e in tk.encode_batch(sample, add_special_tokens=False)], got)
            compare(f"{name} decode", sample, tk.decode_batch(got, skip_special_tokens=False),
                    myriad_detokenize(d, got))


def main():
    tests = [make_hf_fixture_test(n) for n in ("deepseek_v3", "qwen3", "llama3")]
    tests += [make_tiktoken_test(n, os.path.join(FIXTURES, n)) for n in ("o200k_base",
                                                                           "cl100k_base")]
    tests += [make_tiktoken_test("myriad-tiny", SHIPPED), test_kimi_pattern_rewrite,
              test_long_runs,
              test_invalid_utf8, test_add_special_tokens, test_command_line, test_variants,
              test_character_level_bpe]
    passed = failed = 0
    start = time.time()
    for t in tests:
        t0 = time.time()
        try:
            t()
            print(f"ok   {t.__name__} ({time.time() - t0:.1f} s)")
            passed += 1
        except Exception:
            print(f"FAIL {t.__name__}")
            traceback.print_exc()
            failed += 1
    strings = sum(s[1] for s in STATS)
    nbytes = sum(s[2] for s in STATS)
    print(f"compared {strings} strings, {nbytes} bytes in {time.time() - start:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
