#!/usr/bin/env python3
"""Tokenizer encode throughput on one thread: myriad (bench/tokenizer_bench.cpp, in process)
against HF `tokenizers` (tokenizer.json) and `tiktoken` (tiktoken files) on the same corpus
(tests/data/tokenizers/corpus.jsonl.xz, each document encoded on its own, best of N rounds,
timed in CPU seconds of the encoding thread).
Prints a Markdown table for bench/README.md.

Usage: build/venv/bin/python bench/tokenizer_bench.py [--build build] [--rounds 5] [--repeat 4]
(needs a built `tokenizer_bench` target and the unpacked fixtures in BUILD/tokenizers).
"""

import argparse
import json
import lzma
import os
import subprocess
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # HF: one thread (encode() of one text is serial anyway)
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")

import tiktoken  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best_time(fn, rounds):
    best = float("inf")
    first = None
    for _ in range(rounds):
        t = time.thread_time()  # CPU time of this thread: other work on the machine is not counted
        fn()
        dt = time.thread_time() - t
        first = dt if first is None else first
        best = min(best, dt)
    return best, first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=4, help="corpus copies (about 270 KB each)")
    args = ap.parse_args()
    fixtures = os.path.join(args.build, "tokenizers")
    bench = os.path.join(args.build, "bench", "tokenizer_bench")
    with lzma.open(os.path.join(REPO, "tests", "data", "tokenizers", "corpus.jsonl.xz"), "rt",
                   encoding="utf-8") as f:
        docs = [json.loads(line) for line in f] * args.repeat
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
        corpus_path = f.name

    rows = []
    cases = [("deepseek_v3", "tokenizers"), ("qwen3", "tokenizers"), ("llama3", "tokenizers"),
             ("o200k_base", "tiktoken"), ("cl100k_base", "tiktoken")]
    for name, kind in cases:
        path = os.path.join(fixtures, name)
        if kind == "tokenizers":
            tk = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
            ref = lambda: [tk.encode(d, add_special_tokens=False) for d in docs]  # noqa: E731
        else:
            with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
                cfg = json.load(f)
            enc = tiktoken.Encoding(name, pat_str=cfg["pat_str"],
                                    mergeable_ranks=load_tiktoken_bpe(
                                        os.path.join(path, "tiktoken.model")),
                                    special_tokens={v["content"]: int(k) for k, v in
                                                    cfg["added_tokens_decoder"].items()})
            ref = lambda: [enc.encode(d, allowed_special="all") for d in docs]  # noqa: E731
        ref_best, ref_first = best_time(ref, args.rounds)
        out = subprocess.run([bench, path, corpus_path, str(args.rounds)], capture_output=True,
                             text=True, check=True)
        m = json.loads(out.stdout)
        rows.append((name, kind, nbytes / ref_best / 1e6, nbytes / ref_first / 1e6,
                     m["mb_per_s"], m["first_mb_per_s"], m["load_s"]))
    os.unlink(corpus_path)
    print(f"corpus: {len(docs)} documents, {nbytes / 1e6:.2f} MB; best of {args.rounds} rounds "
          f"(first round in parentheses: cold caches)\n")
    print("| tokenizer | reference | reference MB/s | myriad MB/s | myriad / reference | "
          "myriad load s |")
    print("|---|---|---|---|---|---|")
    for name, kind, rb, rf, mb, mf, load in rows:
        print(f"| {name} | {kind} | {rb:.1f} ({rf:.1f}) | {mb:.1f} ({mf:.1f}) | "
              f"{mb / rb:.2f}x | {load:.2f} |")


if __name__ == "__main__":
    main()
