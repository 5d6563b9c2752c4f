#!/usr/bin/env python3
"""Builds bench/data/code_edit.jsonl: a code-editing workload for speculative decoding (prompt
lookup drafts from the prompt, so an answer that rewrites part of the prompt is its case).

Each record: a C++ source file of this repository in the prompt (this project's own code, under
the project's terms; nothing downloaded), an instruction to rewrite one function of it (rename an
identifier, or qualify the fixed-width integer types with std::), and the answer, that function
rewritten, in a code block. The answer is made by the edit itself, so a model with random
weights can be forced through it (bench-model --dataset) and the drafts meet real edits.

Every record also holds the token ids of the prompt and the answer in the tokenizers the
benchmarks use (no special tokens added; special-token text encodes as ordinary text):
  myriad-tiny  models/myriad-tiny (the shipped model; tiktoken with its pat_str)
  deepseek_v3  tests/data/tokenizers/deepseek_v3 (HF tokenizers; ids < 129280: bench-model
               --random moonlight, whose vocabulary is DeepSeek-V3's)
  cl100k_base  tests/data/tokenizers/cl100k_base (tiktoken; ids < 100277: bench-model --random
               kimi-k2, 163840 ids, for which no Kimi tokenizer file is in the repository)
and "prompt" / "max_tokens" as `myriad bench --dataset` reads them.

Deterministic (seeded): the same sources give the same file.
Usage: python3 tools/make_code_edit_dataset.py [--out bench/data/code_edit.jsonl] [--records 12]
       [--seed 28]
"""

import argparse
import json
import lzma
import os
import random
import re
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZERS = os.path.join(REPO, "tests", "data", "tokenizers")
TINY = os.path.join(REPO, "models", "myriad-tiny")

# Files of this size are whole in the prompt (about 600 to 1,500 tokens of DeepSeek-V3's).
MIN_BYTES, MAX_BYTES = 2000, 5000
# A function of this many lines is rewritten (the answer: about 100 to 600 tokens).
MIN_LINES, MAX_LINES = 6, 45
KEYWORDS = {
    "auto", "bool", "break", "case", "catch", "char", "const", "constexpr", "continue",
    "default", "delete", "double", "else", "enum", "false", "float", "for", "if", "inline",
    "int", "long", "namespace", "new", "nullptr", "return", "size_t", "static", "struct",
    "switch", "template", "this", "throw", "true", "try", "typename", "uint8_t", "uint16_t",
    "uint32_t", "uint64_t", "int8_t", "int16_t", "int32_t", "int64_t", "unsigned", "using",
    "void", "while", "std", "const_cast", "static_cast", "reinterpret_cast", "sizeof", "class",
    "public", "private", "operator", "virtual", "override", "final", "noexcept", "explicit",
}
SUFFIXES = ["value", "item", "entry", "count", "next", "here", "seen", "out"]
FIXED_TYPES = ["int64_t", "int32_t", "uint64_t", "uint32_t", "uint16_t", "uint8_t", "size_t"]


def source_files():
    out = []
    for root, _, files in os.walk(os.path.join(REPO, "src")):
        for f in files:
            if f.endswith(".cpp"):
                path = os.path.join(root, f)
                size = os.path.getsize(path)
                if MIN_BYTES <= size <= MAX_BYTES:
                    out.append(os.path.relpath(path, REPO))
    return sorted(out)


def functions(lines):
    """(first, last) line pairs of top-level function definitions: a line at column 0 ending
    with '{' (not a namespace, struct, class or enum), to the next line that is '}'."""
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if (line and not line[0].isspace() and line.rstrip().endswith("{") and "(" in line and
                not re.match(r"(namespace|struct|class|enum|union|extern)\b", line)):
            for j in range(i + 1, len(lines)):
                if lines[j] == "}":
                    if MIN_LINES <= j - i + 1 <= MAX_LINES:
                        found.append((i, j))
                    i = j
                    break
        i += 1
    return found


def rename_edit(body, rng):
    names = {}
    for m in re.finditer(r"\b[a-z_][a-z0-9_]{2,}\b", body):
        w = m.group(0)
        if w not in KEYWORDS and not w.startswith("__"):
            names[w] = names.get(w, 0) + 1
    # A local-looking name used at least twice: never a member, a namespace or a function.
    cands = sorted(w for w, n in names.items()
                   if n >= 2 and not re.search(r"(\.|->|::)" + w + r"\b", body) and
                   not re.search(r"\b" + w + r"\s*(::|\(|<)", body))
    if not cands:
        return None
    old = rng.choice(cands)
    new = old + "_" + rng.choice(SUFFIXES)
    if re.search(r"\b" + new + r"\b", body):
        return None
    return (f"Rename `{old}` to `{new}` in that function.",
            re.sub(r"\b" + old + r"\b", new, body))


def qualify_edit(body, _rng):
    used = [t for t in FIXED_TYPES if re.search(r"(?<![\w:])" + t + r"\b", body)]
    if not used:
        return None
    out = body
    for t in used:
        out = re.sub(r"(?<![\w:])" + t + r"\b", "std::" + t, out)
    names = ", ".join(f"`{t}`" for t in used)
    return (f"Write {names} as `std::` types in that function (add the `std::` prefix).", out)


def function_name(header):
    m = re.search(r"([A-Za-z_][\w:~]*)\s*\(", header)
    return m.group(1) if m else "the function"


def make_records(count, seed):
    rng = random.Random(seed)
    files = source_files()
    rng.shuffle(files)
    records = []
    for path in files:
        if len(records) == count:
            break
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        fns = functions(lines)
        if not fns:
            continue
        first, last = rng.choice(fns)
        body = "\n".join(lines[first:last + 1])
        edits = [rename_edit, qualify_edit]
        rng.shuffle(edits)
        for edit in edits:
            made = edit(body, rng)
            if made and made[1] != body:
                break
        else:
            continue
        instruction, rewritten = made
        name = function_name(lines[first])
        prompt = (f"Here is the file {path}:\n\n```cpp\n{text.rstrip()}\n```\n\n"
                  f"In `{name}`: {instruction} Reply with the whole rewritten function only, in "
                  f"one ```cpp code block.\n")
        answer = f"```cpp\n{rewritten}\n```"
        records.append({"id": f"code-edit-{len(records):02d}", "source": path,
                        "function": name, "instruction": instruction, "prompt": prompt,
                        "answer": answer})
    if len(records) < count:
        raise SystemExit(f"only {len(records)} of {count} records: too few source files")
    return records


def xz_text(path):
    with lzma.open(path, "rb") as f:
        return f.read()


def encoders():
    """name -> (encode(text) -> ids, vocab size)."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tokenizers import Tokenizer

    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # load_tiktoken_bpe would otherwise cache by path
    out = {}
    with open(os.path.join(TINY, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(TINY, "config.json"), encoding="utf-8") as f:
        tiny_vocab = json.load(f)["vocab_size"]
    specials = {v["content"]: int(k) for k, v in cfg["added_tokens_decoder"].items()}
    tiny = tiktoken.Encoding("myriad-tiny", pat_str=cfg["pat_str"],
                             mergeable_ranks=load_tiktoken_bpe(os.path.join(TINY,
                                                                            "tiktoken.model")),
                             special_tokens=specials, explicit_n_vocab=tiny_vocab)
    out["myriad-tiny"] = (lambda t: tiny.encode(t, disallowed_special=()), tiny_vocab)

    ds = Tokenizer.from_str(xz_text(os.path.join(TOKENIZERS, "deepseek_v3",
                                                 "tokenizer.json.xz")).decode("utf-8"))
    out["deepseek_v3"] = (lambda t: ds.encode(t, add_special_tokens=False).ids, 129280)

    cl_dir = os.path.join(TOKENIZERS, "cl100k_base")
    cl_cfg = json.loads(xz_text(os.path.join(cl_dir, "tokenizer_config.json.xz")))
    with tempfile.NamedTemporaryFile(suffix=".tiktoken") as tmp:
        tmp.write(xz_text(os.path.join(cl_dir, "tiktoken.model.xz")))
        tmp.flush()
        ranks = load_tiktoken_bpe(tmp.name)
    cl_specials = {v["content"]: int(k) for k, v in cl_cfg["added_tokens_decoder"].items()}
    cl = tiktoken.Encoding("cl100k_base", pat_str=cl_cfg["pat_str"], mergeable_ranks=ranks,
                           special_tokens=cl_specials)
    out["cl100k_base"] = (lambda t: cl.encode(t, disallowed_special=()), 163840)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "data", "code_edit.jsonl"))
    ap.add_argument("--records", type=int, default=12)
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()
    records = make_records(args.records, args.seed)
    encs = encoders()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in records:
            tokens = {}
            for name, (encode, vocab) in encs.items():
                p, a = encode(r["prompt"]), encode(r["answer"])
                assert max(p + a) < vocab, (name, max(p + a), vocab)
                tokens[name] = {"prompt": p, "answer": a}
            r["max_tokens"] = len(tokens["deepseek_v3"]["answer"])
            r["tokens"] = tokens
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{args.out}: {len(records)} records")


if __name__ == "__main__":
    main()
