#!/usr/bin/env python3
"""The code-editing workload (bench/data/code_edit.jsonl, by tools/make_code_edit_dataset.py) and
what runs it: `myriad bench-model --dataset` and `myriad bench --dataset`.

- The committed file loads, and each record is what it says: the prompt holds a source file, the
  answer is one function of that file with the instruction's edit applied (undoing the edit gives
  the function as it stands in the prompt), and the token ids of every tokenizer decode to the
  prompt and the answer (tiktoken and HF tokenizers as oracles), below its model's vocab_size.
- The shipped tokenizer of myriad (`myriad tokenize`) gives the record's myriad-tiny ids.
- The tool is deterministic: two runs write the same bytes.
- bench-model --dataset on the shipped model (CPU) prints its figures, generated and forced:
  greedy output with ngram drafts equal to the output without (bench-model stops otherwise),
  forced answers reproduced with drafts accepted (the answers copy the prompt).
- myriad bench sends the dataset's prompts to a speculating server.

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_code_edit_dataset.py
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools"))
import make_code_edit_dataset as tool  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
DATASET = os.path.join(REPO, "bench", "data", "code_edit.jsonl")
TINY = os.path.join(REPO, "models", "myriad-tiny")


def records():
    with open(DATASET, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def code_block(text):
    m = re.fullmatch(r"```cpp\n(.*)\n```", text, re.S)
    assert m, text[:200]
    return m.group(1)


def undo(instruction, code):
    m = re.fullmatch(r"Rename `(\w+)` to `(\w+)` in that function\.", instruction)
    if m:
        old, new = m.groups()
        assert re.search(r"\b" + new + r"\b", code)
        return re.sub(r"\b" + new + r"\b", old, code)
    types = re.findall(r"`(\w+)`", instruction.split(" as ")[0])
    assert instruction.startswith("Write ") and types, instruction
    for t in types:
        assert "std::" + t in code
        code = code.replace("std::" + t, t)
    return code


def test_records_are_edits_of_their_prompt():
    rs = records()
    assert len(rs) >= 8
    assert len({r["id"] for r in rs}) == len(rs)
    for r in rs:
        with_file = re.search(r"```cpp\n(.*?)\n```", r["prompt"], re.S)
        assert with_file and r["source"] in r["prompt"], r["id"]
        source = with_file.group(1)
        answer = code_block(r["answer"])
        assert answer not in source, r["id"]  # an edit, not a copy
        original = undo(r["instruction"], answer)
        if "`std::`" in r["instruction"]:  # the original may have had some std:: already
            strip = lambda s: re.sub(r"std::(u?int\d+_t|size_t)", r"\1", s)  # noqa: E731
            assert strip(original) in strip(source), r["id"]
        else:
            assert original in source, r["id"]
        assert r["function"].split("::")[-1] in original.split("\n")[0], r["id"]
        assert r["max_tokens"] == len(r["tokens"]["deepseek_v3"]["answer"])


def test_token_ids_decode_to_the_texts():
    encs = tool.encoders()
    for r in records():
        assert set(r["tokens"]) == set(encs), r["id"]
        for name, (encode, vocab) in encs.items():
            t = r["tokens"][name]
            assert t["prompt"] == encode(r["prompt"]), (r["id"], name)
            assert t["answer"] == encode(r["answer"]), (r["id"], name)
            assert 0 <= min(t["prompt"] + t["answer"]) and max(t["prompt"] + t["answer"]) < vocab


def test_myriad_tokenizer_gives_the_shipped_ids():
    rs = records()[:4]
    lines = "".join(json.dumps(t) + "\n" for r in rs for t in (r["prompt"], r["answer"]))
    p = subprocess.run([BINARY, "tokenize", TINY, "--jsonl"], input=lines, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got = [json.loads(line) for line in p.stdout.splitlines()]
    want = [r["tokens"]["myriad-tiny"][k] for r in rs for k in ("prompt", "answer")]
    assert got == want


def test_tool_is_deterministic():
    with tempfile.TemporaryDirectory() as d:
        outs = []
        for i in range(2):
            path = os.path.join(d, f"{i}.jsonl")
            p = subprocess.run([sys.executable, os.path.join(REPO, "tools",
                                                             "make_code_edit_dataset.py"),
                                "--out", path, "--records", "4"], capture_output=True, text=True,
                               timeout=300)
            assert p.returncode == 0, p.stderr
            with open(path, "rb") as f:
                outs.append(f.read())
        assert outs[0] == outs[1] and outs[0].count(b"\n") == 4


def bench_model(*args, requests=2, batch="1,2"):
    p = subprocess.run([BINARY, "bench-model", "--device", "cpu", "--threads", "2", "--dataset",
                        DATASET, "--requests", str(requests), "--batch", batch, "--spec-len", "3",
                        *args],
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr
    return p


@pytest.mark.parametrize("forced", [False, True])
def test_bench_model_dataset_figures(forced):
    p = bench_model("--json", *(["--force-answers"] if forced else []))
    j = json.loads(p.stdout)
    assert j["forced_answers"] is forced and j["spec_len"] == 3
    assert [r["concurrency"] for r in j["results"]] == [1, 2]
    for r in j["results"]:
        assert r["requests"] == 2 and r["outputs_differing"] == 0
        none, ngram = r["none"], r["ngram"]
        assert none["tokens_per_step"] == pytest.approx(1.0)  # one token a step without drafts
        assert none["tok_s_per_seq"] > 0 and ngram["tok_s_per_seq"] > 0
        assert 0 <= ngram["accepted_tokens"] <= ngram["draft_tokens"]
        assert ngram["acceptance_rate"] == pytest.approx(
            ngram["accepted_tokens"] / max(1, ngram["draft_tokens"]))
        assert ngram["tokens_per_step"] >= 1.0
        assert r["speedup_per_seq"] == pytest.approx(ngram["tok_s_per_seq"] /
                                                     none["tok_s_per_seq"])
        if forced:  # the answers rewrite part of the prompt: the drafts find them
            assert ngram["accepted_tokens"] > 0 and ngram["tokens_per_step"] > 1.2
            assert ngram["steps"] < none["steps"]


def test_bench_model_dataset_table_and_errors():
    p = bench_model("--force-answers", requests=1, batch="1")
    for word in ("code-editing dataset: 1 requests, answers forced", "tok/s per seq",
                 "tokens a step", "ngram", "none"):
        assert word in p.stdout, p.stdout
    bad = subprocess.run([BINARY, "bench-model", "--device", "cpu", "--dataset", DATASET,
                          "--dataset-tokens", "nope"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "deepseek_v3" in bad.stderr and "nope" in bad.stderr
    bad = subprocess.run([BINARY, "bench-model", "--device", "cpu", "--dataset", DATASET,
                          "--dataset-tokens", "deepseek_v3"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "vocab_size" in bad.stderr, bad.stderr


def test_bench_sends_the_dataset_to_a_speculating_server():
    import serve_process
    from test_bench import free_port

    port = free_port()
    log = tempfile.TemporaryFile()
    proc = serve_process.spawn([BINARY, "serve", "--port", str(port), "--threads", "2",
                                "--speculative", "ngram"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def output():
        log.seek(0)
        return log.read().decode("utf-8", "replace")

    try:
        serve_process.wait_healthy(proc, url, output)
        r = subprocess.run([BINARY, "bench", url, "--dataset", DATASET, "--requests", "2",
                            "--concurrency", "2", "--json"], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)
        assert j["completed"] == 2 and j["failed"] == 0
        rs = records()
        assert all(q["prompt_tokens"] >= len(rs[0]["tokens"]["myriad-tiny"]["prompt"]) // 2
                   for q in j["per_request"])
        assert all(0 < q["completion_tokens"] <= rs[i]["max_tokens"]
                   for i, q in enumerate(j["per_request"]))
    finally:
        serve_process.stop(proc)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
