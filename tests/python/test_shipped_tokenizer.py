#!/usr/bin/env python3
"""Checks the tokenizer shipped in models/myriad-tiny (made by tools/make_tokenizer.py) with
tiktoken, and that config.json / generation_config.json / model.safetensors agree with it.

A plain script: prints one line per check and `N passed, N failed`; exits 1 on any failure.
Run: build/venv/bin/python tests/python/test_shipped_tokenizer.py
"""

import base64
import glob
import json
import os
import random
import re
import struct
import sys
import traceback

os.environ["TIKTOKEN_CACHE_DIR"] = ""  # load_tiktoken_bpe would otherwise cache by path

import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(REPO, "models", "myriad-tiny")
SHARED = os.path.join(os.path.dirname(REPO), "shared")

N_BASE, VOCAB = 3840, 4096
SPECIALS = {
    "[BOS]": 3840, "[EOS]": 3841, "<|im_end|>": 3842, "<|im_user|>": 3843,
    "<|im_assistant|>": 3844, "<|start_header_id|>": 3846, "<|end_header_id|>": 3847,
    "[EOT]": 3849, "<|im_system|>": 3850, "<|tool_calls_section_begin|>": 3851,
    "<|tool_calls_section_end|>": 3852, "<|tool_call_begin|>": 3853,
    "<|tool_call_argument_begin|>": 3854, "<|tool_call_end|>": 3855, "<|im_middle|>": 3857,
    "<|media_begin|>": 3858, "<|media_content|>": 3859, "<|media_end|>": 3860,
    "<|media_pad|>": 3861, "<think>": 3862, "</think>": 3863, "[UNK]": 4094, "[PAD]": 4095,
}
# Kimi-K2's pat_str (reference.md §4.1) with \p{N}{1,3} -> \p{N}.
PAT_STR = (
    r"[\p{Han}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+"
)

ENGLISH = (
    "The quick brown fox jumps over the lazy dog. Inference servers batch requests from many "
    "users, keep a cache of the attention keys and values, and stream the generated text back "
    "as soon as each token is sampled. When the model finishes its answer, it emits an end "
    "token and the server closes the stream. Questions? Write to the maintainers; they're "
    "happy to help, and they'll usually reply within a day or two.\n"
)


def read_json(name):
    with open(os.path.join(MODEL, name), encoding="utf-8") as f:
        return json.load(f)


def read_ranks():
    """Strict parse of tiktoken.model: `<base64> <rank>` lines, rank = line number."""
    ranks = {}
    with open(os.path.join(MODEL, "tiktoken.model"), "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), "no final newline"
    for i, line in enumerate(data[:-1].split(b"\n")):
        b64, rank = line.split(b" ")
        tok = base64.b64decode(b64, validate=True)
        assert base64.b64encode(tok) == b64, f"line {i}: non-canonical base64"
        assert int(rank) == i and rank == str(i).encode(), f"line {i}: rank {rank!r}"
        assert tok not in ranks, f"line {i}: duplicate token {tok!r}"
        ranks[tok] = i
    return ranks


def make_encoding():
    cfg = read_json("tokenizer_config.json")
    ranks = load_tiktoken_bpe(os.path.join(MODEL, "tiktoken.model"))
    specials = {v["content"]: int(k) for k, v in cfg["added_tokens_decoder"].items()}
    return tiktoken.Encoding("myriad-tiny", pat_str=cfg["pat_str"], mergeable_ranks=ranks,
                             special_tokens=specials, explicit_n_vocab=VOCAB)


def test_file_format():
    ranks = read_ranks()
    assert len(ranks) == N_BASE, len(ranks)
    for b in range(256):
        assert ranks[bytes([b])] == b, f"byte {b} not at rank {b}"
    assert all(len(t) >= 2 for t, r in ranks.items() if r >= 256)
    assert load_tiktoken_bpe(os.path.join(MODEL, "tiktoken.model")) == ranks


def test_tokenizer_config():
    cfg = read_json("tokenizer_config.json")
    assert cfg["tokenizer_class"] == "TikTokenTokenizer"
    assert cfg["pat_str"] == PAT_STR, cfg["pat_str"]
    assert (cfg["bos_token"], cfg["eos_token"], cfg["pad_token"], cfg["unk_token"]) == \
        ("[BOS]", "[EOS]", "[PAD]", "[UNK]")
    assert isinstance(cfg["model_max_length"], int) and cfg["model_max_length"] > 0
    assert "auto_map" not in cfg
    added = cfg["added_tokens_decoder"]
    assert sorted(int(k) for k in added) == list(range(N_BASE, VOCAB))
    names = {}
    for k, v in added.items():
        assert v["special"] is True, k
        names[v["content"]] = int(k)
    assert len(names) == VOCAB - N_BASE, "duplicate special names"
    for name, i in SPECIALS.items():
        assert names.get(name) == i, f"{name}: {names.get(name)} != {i}"
    for name, i in names.items():
        if name not in SPECIALS:
            assert name == f"<|reserved_token_{i}|>", name


def test_chat_template():
    cfg = read_json("tokenizer_config.json")
    with open(os.path.join(MODEL, "chat_template.jinja"), encoding="utf-8") as f:
        tmpl = f.read()
    assert cfg["chat_template"] == tmpl
    fixture = os.path.join(SHARED, "fixtures", "chat_templates", "kimi-k2-thinking.jinja")
    if os.path.exists(fixture):
        with open(fixture, encoding="utf-8") as f:
            assert f.read() == tmpl, "differs from the kimi-k2-thinking fixture"
    names = {v["content"] for v in cfg["added_tokens_decoder"].values()}
    # <|media_start|> is in Kimi-K2-Thinking's published template but in no Kimi vocabulary.
    used = set(re.findall(r"<\|[a-z_]+\|>|</?think>", tmpl)) - {"<|media_start|>"}
    assert used and used <= names, used - names


def test_vocab_and_specials(enc):
    assert enc.n_vocab == VOCAB and enc.max_token_value == VOCAB - 1
    seen = set()
    for i in range(VOCAB):
        b = enc.decode_single_token_bytes(i)
        assert b not in seen, f"id {i}: bytes {b!r} twice"
        seen.add(b)
    for name, i in SPECIALS.items():
        assert enc.encode(name, allowed_special="all") == [i], name
        assert enc.encode_single_token(name) == i
        assert len(enc.encode_ordinary(name)) > 1, f"{name} as plain text"
    ids = enc.encode("<|im_user|>user<|im_middle|>hi<|im_end|>", allowed_special="all")
    assert ids[0] == 3843 and ids[-1] == 3842 and 3857 in ids, ids


def test_digits(enc):
    ids = enc.encode_ordinary("12345")
    assert [enc.decode([i]) for i in ids] == list("12345"), ids
    ids = enc.encode_ordinary("x = 3.14159 + 2024")
    assert sum(enc.decode([i]).isdigit() for i in ids) == 10
    assert all(not (len(s := enc.decode([i])) > 1 and any(c.isdigit() for c in s)) for i in ids)
    for text in ("12345", "１２３٤٥", "v2.0.1"):  # every \p{N} character is its own piece
        assert enc.encode_ordinary(text) == [i for c in text for i in enc.encode_ordinary(c)], text


def test_round_trip(enc):
    texts = [
        ENGLISH,
        "Don't stop; we'RE HERE, it's 9:41 a.m. -- isn't it?",
        'def f(x):\n    return {"a": [1, 2, 3], "b": x ** 2}\n\n\nclass A:\n\tpass\r\n',
        '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}',
        "int main() { printf(\"%d\\n\", 42); return 0; }",
        "中文测试：你好，世界！日本語のテキストも。한국어 텍스트.",
        "Emoji 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ and symbols ∑∫√∞ ≠ ≤ ± °C €£¥",
        "   leading and trailing spaces   ",
        "\n\n\n  \t \n   x\n\r\n\r\n",
        " " * 100 + "\t" * 7 + "\n" * 5,
        "Ünïcödé àçcénts, Ελληνικά, Русский текст, العربية, עברית, हिन्दी",
        "<|im_end|> plain-text look-alike of a special token",
        "",
    ]
    rng = random.Random(7)
    alphabet = [chr(c) for c in list(range(32, 127)) + list(range(0xA0, 0x2FF)) +
                list(range(0x4E00, 0x4E40)) + list(range(0x1F600, 0x1F610))] + [" ", "\n", "\t"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200))) for _ in range(300)]
    for t in texts:
        ids = enc.encode_ordinary(t)
        assert enc.decode_bytes(ids) == t.encode("utf-8"), repr(t)
        assert enc.decode(ids) == t
        assert all(0 <= i < N_BASE for i in ids)


def test_compression(enc):
    """English prose > 3 bytes/token; each project doc (tables of figures, code: digits are
    single tokens) > 1.5, all of them together > 2."""
    docs = [("inline English paragraph", ENGLISH * 3)]
    paths = [os.path.join(MODEL, "README.md")] + sorted(glob.glob(os.path.join(SHARED, "docs", "*.md")))
    for p in paths:
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                docs.append((os.path.relpath(p, os.path.dirname(REPO)), f.read()))
    total_bytes = total_tokens = 0
    for k, (name, text) in enumerate(docs):
        n_bytes, n_tok = len(text.encode("utf-8")), len(enc.encode_ordinary(text))
        ratio = n_bytes / n_tok
        print(f"    {name}: {n_bytes} bytes, {n_tok} tokens, {ratio:.2f} bytes/token")
        assert ratio > (3.0 if k == 0 else 1.5), f"{name}: {ratio:.2f} bytes/token"
        if k > 0:
            total_bytes, total_tokens = total_bytes + n_bytes, total_tokens + n_tok
    if total_tokens:
        print(f"    all docs: {total_bytes / total_tokens:.2f} bytes/token")
        assert total_bytes / total_tokens > 2.0


def test_configs_agree(enc):
    cfg = read_json("config.json")
    gen = read_json("generation_config.json")
    assert cfg["bos_token_id"] == SPECIALS["[BOS]"] == enc.encode_single_token("[BOS]")
    assert cfg["eos_token_id"] == SPECIALS["[EOS]"] == enc.encode_single_token("[EOS]")
    assert cfg["vocab_size"] >= enc.n_vocab and cfg["vocab_size"] % 4 == 0, cfg["vocab_size"]
    assert gen["bos_token_id"] == SPECIALS["[BOS]"]
    eos = gen["eos_token_id"] if isinstance(gen["eos_token_id"], list) else [gen["eos_token_id"]]
    assert sorted(eos) == [SPECIALS["[EOS]"], SPECIALS["<|im_end|>"]], eos
    if "pad_token_id" in gen:
        assert gen["pad_token_id"] == SPECIALS["[PAD]"]
    with open(os.path.join(MODEL, "model.safetensors"), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        assert header[name]["shape"] == [cfg["vocab_size"], cfg["hidden_size"]], name


def main():
    tests = [test_file_format, test_tokenizer_config, test_chat_template]
    enc_tests = [test_vocab_and_specials, test_digits, test_round_trip, test_compression,
                 test_configs_agree]
    passed = failed = 0
    enc = None
    for t in tests + enc_tests:
        try:
            if t in enc_tests:
                enc = enc or make_encoding()
                t(enc)
            else:
                t()
            print(f"ok   {t.__name__}")
            passed += 1
        except Exception:
            print(f"FAIL {t.__name__}")
            traceback.print_exc()
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
