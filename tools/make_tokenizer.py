#!/usr/bin/env python3
"""Builds the tokenizer of models/myriad-tiny: a byte-level BPE in Kimi-K2's tiktoken layout.

Output (in --out, default models/myriad-tiny):
  tiktoken.model         one line per base token, `<base64 of its bytes> <rank>`, rank = token id:
                         ranks 0..255 are the 256 single bytes, ranks 256..3839 the merges in the
                         order `tokenizers`' BpeTrainer learned them, so tiktoken's rank-merge
                         BPE reproduces them.
  tokenizer_config.json  Kimi's layout (added_tokens_decoder, bos/eos/pad/unk, TikTokenTokenizer)
                         plus `pat_str` and the chat template.
  chat_template.jinja    the same chat template as a file.

Vocabulary: 3840 base tokens (ids 0..3839) + 256 special tokens (ids 3840..4095) = 4096. The
special tokens sit at Kimi-K2's offsets from its first special id (163584 there, 3840 here);
unnamed ones are `<|reserved_token_{id}|>` as in Kimi's tokenization_kimi.py.

Pre-tokenization: Kimi-K2's pat_str (docs/reference.md §4.1) with `\\p{N}{1,3}` replaced by
`\\p{N}` so that every digit is its own piece. It uses class intersection (`&&`), which
tiktoken (fancy-regex) and `tokenizers` (Oniguruma) both read; the script checks on the whole
training text that the two split it into the same pieces.

Training text (all read offline, in this fixed order; nothing of it ships, only the ranks):
  1. This project's docs: shared/docs/*.md (sorted by name).
  2. The Python 3.11 documentation sources (reStructuredText) of the Debian package
     python3.11-doc (bookworm 3.11.2-6+deb12u9), /usr/share/doc/python3.11/html/_sources/,
     folders PY_DOC_DIRS below, files sorted by path, with light markup clean-up.
     Licence: PSF License Agreement (examples also Zero-Clause BSD); "Copyright (c) 2001-2023
     Python Software Foundation; All Rights Reserved". Install: apt-get install python3.11-doc.
  3. Synthetic chat-like text made here from a fixed seed: arithmetic ("12 + 7 = 19"), tool
     calls and results as JSON ({"city": "Paris"}), function-call ids, short chat turns.

Trainer: the Hugging Face `tokenizers` package learns the merges: tokenizers.trainers.BpeTrainer
on a byte-level BPE model whose pre-tokenizer is Split(pat_str) then ByteLevel(use_regex=False)
(its alphabet: all 256 bytes). Its merges, mapped back from byte-level characters to bytes, give
the ranks in the order learned; a merge whose bytes already are a token adds no new rank.
Deterministic: same input -> same bytes out (checked: reruns, and RAYON_NUM_THREADS=1, give
an identical tiktoken.model).

Usage: python3 tools/make_tokenizer.py [--out models/myriad-tiny] [--shared ../shared]
Needs: python3 with the `tokenizers`, `tiktoken` and `regex` (reST clean-up) packages, as pinned
in tools/requirements-test.txt (build/venv).
"""

import argparse
import base64
import hashlib
import json
import os
import random
import subprocess
import sys

import regex
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

N_BASE = 3840
N_SPECIAL = 256
VOCAB = N_BASE + N_SPECIAL  # 4096
MODEL_MAX_LENGTH = 131072

# Kimi-K2's pat_str (reference.md §4.1) with single digits.
PAT_PARTS = [
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
]
PAT_STR = "|".join(PAT_PARTS)

# Offsets from the first special id, as in Kimi-K2's tokenizer_config.json.
SPECIAL_NAMES = {
    0: "[BOS]",
    1: "[EOS]",
    2: "<|im_end|>",
    3: "<|im_user|>",
    4: "<|im_assistant|>",
    6: "<|start_header_id|>",
    7: "<|end_header_id|>",
    9: "[EOT]",
    10: "<|im_system|>",
    11: "<|tool_calls_section_begin|>",
    12: "<|tool_calls_section_end|>",
    13: "<|tool_call_begin|>",
    14: "<|tool_call_argument_begin|>",
    15: "<|tool_call_end|>",
    17: "<|im_middle|>",
    18: "<|media_begin|>",
    19: "<|media_content|>",
    20: "<|media_end|>",
    21: "<|media_pad|>",
    22: "<think>",
    23: "</think>",
    254: "[UNK]",
    255: "[PAD]",
}

PY_DOC_ROOT = "/usr/share/doc/python3.11/html/_sources"
PY_DOC_PACKAGE = ("python3.11-doc", "3.11.2-6+deb12u9")
PY_DOC_DIRS = ["tutorial", "faq", "howto", "reference", "library", "using"]
CHAT_TEMPLATE = "fixtures/chat_templates/kimi-k2-thinking.jinja"  # under shared/
SYNTH_SEED = 20240601
SYNTH_SAMPLES = 8000


def special_tokens():
    """{id: name} for all 256 special ids."""
    return {
        N_BASE + i: SPECIAL_NAMES.get(i, f"<|reserved_token_{N_BASE + i}|>") for i in range(N_SPECIAL)
    }


# ---------------------------------------------------------------- training text


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def project_docs(shared):
    d = os.path.join(shared, "docs")
    names = sorted(n for n in os.listdir(d) if n.endswith(".md"))
    if not names:
        sys.exit(f"no *.md in {d}")
    return [read_text(os.path.join(d, n)) for n in names]


_RST_UNDERLINE = regex.compile(r"^\s*([=\-~^*+#\"'`.:_])\1{2,}\s*$")
_RST_TABLE = regex.compile(r"^\s*\+[-=+]+\+\s*$")
_RST_LABEL = regex.compile(r"^\s*\.\. _[^:]*:\s*$")
_RST_DIRECTIVE = regex.compile(r"^(\s*)\.\. [\w:-]+::\s?")
_RST_ROLE = regex.compile(r":[\w:+-]+:`~?!?([^`<]*?)\s*(?:<[^`>]*>)?`")
_RST_LITERAL = regex.compile(r"``([^`]+)``")
_RST_SUBST = regex.compile(r"\|(release|version)\|")


def clean_rst(text):
    out = []
    for line in text.split("\n"):
        if _RST_UNDERLINE.match(line) or _RST_TABLE.match(line) or _RST_LABEL.match(line):
            continue
        line = _RST_DIRECTIVE.sub(r"\1", line)
        line = _RST_ROLE.sub(r"`\1`", line)
        line = _RST_LITERAL.sub(r"`\1`", line)
        line = _RST_SUBST.sub("3.11", line)
        out.append(line.rstrip())
    return regex.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"


def python_docs():
    if not os.path.isdir(PY_DOC_ROOT):
        sys.exit(f"{PY_DOC_ROOT} missing: apt-get install {PY_DOC_PACKAGE[0]}")
    try:
        ver = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", PY_DOC_PACKAGE[0]],
            capture_output=True, text=True, check=False,
        ).stdout.strip()
    except OSError:
        ver = "?"
    if ver != PY_DOC_PACKAGE[1]:
        print(f"warning: {PY_DOC_PACKAGE[0]} {ver} installed, the shipped tokenizer used "
              f"{PY_DOC_PACKAGE[1]}: the output may differ", file=sys.stderr)
    paths = []
    for sub in PY_DOC_DIRS:
        for root, dirs, files in os.walk(os.path.join(PY_DOC_ROOT, sub)):
            dirs.sort()
            paths += [os.path.join(root, f) for f in files if f.endswith(".rst.txt")]
    return [clean_rst(read_text(p)) for p in sorted(paths)]


CITIES = ["Paris", "Tokyo", "London", "New York", "Berlin", "Beijing", "Sydney", "Cairo",
          "Toronto", "Madrid", "Rome", "Seoul", "Mumbai", "Moscow", "Lagos", "Lima",
          "San Francisco", "Mexico City", "Istanbul", "Amsterdam", "Vienna", "Oslo"]
NAMES = ["Alice", "Bob", "Carol", "Dave", "Eve", "Frank", "Grace", "Heidi", "Ivan", "Judy"]
CONDITIONS = ["sunny", "cloudy", "rainy", "snowy", "windy", "foggy", "clear", "stormy"]
TOPICS = ["the weather", "prime numbers", "the solar system", "photosynthesis", "sorting",
          "binary search", "the French Revolution", "neural networks", "recursion", "gravity"]
TOOLS = {
    "get_weather": lambda r: {"city": r.choice(CITIES)},
    "get_forecast": lambda r: {"location": r.choice(CITIES), "days": r.randint(1, 7),
                               "unit": r.choice(["celsius", "fahrenheit"])},
    "get_time": lambda r: {"timezone": r.choice(["UTC", "Europe/Paris", "Asia/Tokyo",
                                                 "America/New_York"])},
    "search_web": lambda r: {"query": f"{r.choice(TOPICS)} explained", "max_results": r.randint(1, 10)},
    "calculator": lambda r: {"expression": f"{r.randint(1, 999)} * {r.randint(1, 99)}"},
    "send_email": lambda r: {"to": f"{r.choice(NAMES).lower()}@example.com",
                             "subject": "Meeting", "body": "See you at 10."},
    "read_file": lambda r: {"path": f"/home/{r.choice(NAMES).lower()}/notes.txt"},
    "get_stock_price": lambda r: {"symbol": r.choice(["AAPL", "MSFT", "NVDA", "GOOG"])},
}


def synth_arith(r):
    a, b = r.randint(0, 999 if r.random() < 0.3 else 99), r.randint(1, 99)
    op = r.choice("+-*/")
    if op == "+":
        res = a + b
    elif op == "-":
        res = a - b
    elif op == "*":
        res = a * b
    else:
        a = a - a % b
        res = a // b
    form = r.randrange(4)
    if form == 0:
        return f"{a} {op} {b} = {res}"
    if form == 1:
        return f"What is {a} {op} {b}?\n{a} {op} {b} = {res}. The answer is {res}."
    if form == 2:
        return f"Q: {a} {op} {b} = ?\nA: {res}"
    return f"Let's compute {a} {op} {b} step by step. {a} {op} {b} equals {res}, so the result is {res}."


def synth_tool(r, idx):
    name = r.choice(sorted(TOOLS))
    args = TOOLS[name](r)
    call_id = f"functions.{name}:{idx}"
    compact = r.random() < 0.3
    sep = (",", ":") if compact else (", ", ": ")
    result = {"temperature": r.randint(-10, 35), "condition": r.choice(CONDITIONS)} \
        if "weather" in name or "forecast" in name else {"status": "ok", "value": r.randint(0, 10000)}
    user = f"Can you use {name} for me? " + json.dumps(args, ensure_ascii=False)
    lines = [
        f"user\n{user}",
        f"assistant\nI'll call {name}.",
        f"{call_id} " + json.dumps(args, separators=sep, ensure_ascii=False),
        f"## Return of {call_id}\n" + json.dumps(result, separators=sep),
    ]
    if r.random() < 0.5:
        tools = [{"type": "function", "function": {"name": name, "description": f"Call {name}.",
                  "parameters": {"type": "object", "properties": {k: {"type": "string"} for k in args},
                                 "required": sorted(args)}}}]
        lines.insert(0, "tool_declare\n" + json.dumps(tools, separators=sep))
    return "\n".join(lines)


def synth_chat(r):
    name, topic, city = r.choice(NAMES), r.choice(TOPICS), r.choice(CITIES)
    return r.choice([
        f"system\nYou are Kimi, an AI assistant created by Moonshot AI.\nuser\nHi, I'm {name}. "
        f"Can you explain {topic}?\nassistant\nSure, {name}! Here is a short explanation of {topic}.",
        f"user\nWhat's the weather like in {city} today?\nassistant\nLet me check the weather "
        f"in {city} for you.",
        f"user\nCount from 1 to {r.randint(3, 12)}.\nassistant\n"
        + ", ".join(str(i) for i in range(1, r.randint(4, 13))) + ".",
        f"user\nWrite a Python function that adds two numbers.\nassistant\n```python\n"
        f"def add(a, b):\n    return a + b\n```",
        f"user\nTranslate \"hello\" to French.\nassistant\n\"Bonjour\".",
        f"user\nThank you!\nassistant\nYou're welcome, {name}. Is there anything else I can help with?",
    ])


def synthetic_text():
    r = random.Random(SYNTH_SEED)
    out = []
    for i in range(SYNTH_SAMPLES):
        k = r.random()
        if k < 0.4:
            out.append(synth_arith(r))
        elif k < 0.75:
            out.append(synth_tool(r, i % 4))
        else:
            out.append(synth_chat(r))
    return out


# ---------------------------------------------------------------- BPE training


def split_pieces(doc, split=pre_tokenizers.Split(Regex(PAT_STR), behavior="isolated")):
    """PAT_STR's pieces of one text, as `tokenizers` splits it for training."""
    return [p for p, _ in split.pre_tokenize_str(doc)]


def pre_tokenizer():
    """PAT_STR's split (Oniguruma in `tokenizers`; checked against tiktoken's below), then
    byte-level: each byte of a piece becomes one of the 256 printable stand-in characters of
    GPT-2's byte-level BPE, so the trainer works on bytes."""
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PAT_STR), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def byte_stand_ins():
    """{byte: character} of byte-level BPE (GPT-2's table, which `tokenizers` uses): printable
    Latin-1 bytes stand for themselves, the other 68 take U+0100.. in byte order. Checked
    against the package: same 256 characters, and the pre-tokenizer maps text through it."""
    keep = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    if set(table.values()) != set(pre_tokenizers.ByteLevel.alphabet()):
        sys.exit("tokenizers' byte-level alphabet is not GPT-2's table")
    probe = "".join(chr(c) for c in range(1, 0x800)) + "\u4e2d\U0001F600"
    ((seen, _),) = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False) \
        .pre_tokenize_str(probe)
    if seen != "".join(table[b] for b in probe.encode("utf-8")):
        sys.exit("tokenizers' byte-level pre-tokenizer does not use GPT-2's table")
    return table


def train_bpe(docs, n_tokens):
    """Returns the token byte strings in rank order (256 single bytes first, then the merges
    in the order the `tokenizers` BpeTrainer learned them)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=n_tokens, min_frequency=0, show_progress=False, special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(docs, trainer=trainer, length=len(docs))
    state = json.loads(tok.to_str())["model"]
    unbyte = {ch: b for b, ch in byte_stand_ins().items()}

    def to_bytes(s):
        return bytes(unbyte[ch] for ch in s)

    vocab = [bytes([i]) for i in range(256)]
    index = {b: i for i, b in enumerate(vocab)}
    for merge in state["merges"]:
        left, right = merge if isinstance(merge, list) else merge.split(" ")
        merged = to_bytes(left) + to_bytes(right)
        # Two merges can make the same bytes ("ab"+"c", "a"+"bc"): the first one gives the rank.
        if merged not in index:
            index[merged] = len(vocab)
            vocab.append(merged)
    if len(vocab) != n_tokens or len(state["vocab"]) != n_tokens:
        sys.exit(f"training text too small: {len(vocab)} of {n_tokens} tokens")
    if {to_bytes(t) for t in state["vocab"]} != set(vocab):
        sys.exit("the trainer's vocabulary is not its alphabet plus its merges")
    return vocab


# ---------------------------------------------------------------- checks and output


def check_with_tiktoken(vocab, docs):
    import tiktoken

    ranks = {b: i for i, b in enumerate(vocab)}
    specials = {name: i for i, name in special_tokens().items()}
    enc = tiktoken.Encoding("myriad-tiny", pat_str=PAT_STR, mergeable_ranks=ranks,
                            special_tokens=specials, explicit_n_vocab=VOCAB)
    # Same pre-tokenization as tiktoken's: a throw-away vocabulary holding every piece whole
    # makes tiktoken return one token per piece of its own split.
    pieces = sorted({p.encode("utf-8") for doc in docs for p in split_pieces(doc)})
    whole = {bytes([i]): i for i in range(256)}
    for p in pieces:
        whole.setdefault(p, len(whole))
    enc_whole = tiktoken.Encoding("pieces", pat_str=PAT_STR, mergeable_ranks=whole, special_tokens={})
    n_bytes = n_tok = 0
    for doc in docs:
        mine = [whole[p.encode("utf-8")] for p in split_pieces(doc)]
        if enc_whole.encode_ordinary(doc) != mine:
            sys.exit("tokenizers' (Oniguruma) split of PAT_STR differs from tiktoken's")
        toks = enc.encode_ordinary(doc)
        if enc.decode_bytes(toks) != doc.encode("utf-8"):
            sys.exit("round trip failed")
        n_bytes += len(doc.encode("utf-8"))
        n_tok += len(toks)
    unreachable = sum(1 for b, r in ranks.items() if enc._encode_single_piece(b) != [r])
    return n_bytes, n_tok, unreachable


def write_outputs(out, vocab, chat_template):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tiktoken.model"), "wb") as f:
        for rank, b in enumerate(vocab):
            f.write(base64.b64encode(b) + b" " + str(rank).encode() + b"\n")
    added = {
        str(i): {"content": name, "lstrip": False, "normalized": False, "rstrip": False,
                 "single_word": False, "special": True}
        for i, name in special_tokens().items()
    }
    config = {
        "added_tokens_decoder": added,
        "bos_token": "[BOS]",
        "chat_template": chat_template,
        "clean_up_tokenization_spaces": False,
        "eos_token": "[EOS]",
        "model_max_length": MODEL_MAX_LENGTH,
        "pad_token": "[PAD]",
        "pat_str": PAT_STR,
        "tokenizer_class": "TikTokenTokenizer",
        "unk_token": "[UNK]",
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out, "chat_template.jinja"), "w", encoding="utf-8", newline="\n") as f:
        f.write(chat_template)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "models", "myriad-tiny"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared"),
                    help="the project's shared/ folder (docs/, fixtures/)")
    args = ap.parse_args()

    sources = [("project docs", project_docs(args.shared)),
               ("python3.11-doc", python_docs()),
               ("synthetic", synthetic_text())]
    docs = []
    digest = hashlib.sha256()
    for name, texts in sources:
        size = sum(len(t.encode("utf-8")) for t in texts)
        print(f"{name}: {len(texts)} texts, {size} bytes")
        docs += texts
        for t in texts:
            digest.update(t.encode("utf-8") + b"\0")
    print(f"training text sha256 {digest.hexdigest()}")

    vocab = train_bpe(docs, N_BASE)
    assert len(vocab) == N_BASE and len(set(vocab)) == N_BASE

    n_bytes, n_tok, unreachable = check_with_tiktoken(vocab, docs)
    print(f"training text: {n_tok} tokens for {n_bytes} bytes ({n_bytes / n_tok:.3f} bytes/token, "
          f"{n_tok / n_bytes:.4f} tokens/byte); {unreachable} base tokens that tiktoken's BPE "
          f"never produces from their own bytes")

    chat_template = read_text(os.path.join(args.shared, CHAT_TEMPLATE))
    write_outputs(args.out, vocab, chat_template)
    print(f"wrote {args.out}/tiktoken.model, tokenizer_config.json, chat_template.jinja "
          f"({N_BASE} base + {N_SPECIAL} special = {VOCAB} tokens)")


if __name__ == "__main__":
    main()
