#!/usr/bin/env python3
"""The quality bar of the shipped model (issue 9), measured through myriad on the CPU from the
committed files in models/myriad-tiny, on the held-out tasks of tools/train_tiny/tasks.py (another
seed, phrasings and cities training never saw), greedy, at most 96 generated tokens:

- arithmetic through `myriad generate --chat` (no tools declared): >= 90 % of + and - and
  >= 70 % of * answered right (the last number after the think is the result);
- tool requests to `myriad serve` with the three tools declared, read with the openai client:
  >= 90 % give one tool call (kimi_k2 parser) of the right function with the right arguments;
- the same requests continued with the tool's result: >= 90 % of answers contain the value.

Tasks and graders are the ones tools/train_tiny/train.py checks with torch before export, so the
two measurements can be compared: the model folder's eval.json (train.py's report) holds torch's
figures, and myriad's must equal them. Prints the figures; exit status 1 when they differ, or
when the report says the bar was met and myriad does not meet it (without a report: when the
bar is not met).

First, the training data's own checks (fast): held-out cities and phrasings never occur in
training conversations; train.py's renderer (tools/train_tiny/chat.py) gives what transformers'
apply_chat_template gives where transformers can render (no tool-call turns) and what
`myriad chat-template` gives for every kind of conversation; the assistant turns it learns are the
template's; its tokenizer without tiktoken (tools/train_tiny/tokenizer.py on `regex`) gives
tiktoken's ids.
Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_shipped_model_quality.py
     (MYRIAD_QUALITY_MODEL=DIR measures another model folder)
"""

import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import openai

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
# MYRIAD_QUALITY_MODEL: measure another export (e.g. train.py's --out) before it is committed.
MODEL_DIR = os.environ.get("MYRIAD_QUALITY_MODEL", os.path.join(REPO, "models", "myriad-tiny"))
sys.path.insert(0, os.path.join(REPO, "tools", "train_tiny"))

import chat  # noqa: E402
import tasks  # noqa: E402
from test_serve import Server  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

EVAL_SEED = 90210  # the seed train.py's bar check uses
MAX_TOKENS = 96


def generate(text):
    r = subprocess.run([BINARY, "generate", MODEL_DIR, "--chat", text, "--temperature", "0",
                        "--max-tokens", str(MAX_TOKENS), "--threads", "1"],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    return r.stdout.decode("utf-8", "replace")


def check_held_out(ev):
    """Held-out cities and phrasings are never seen in training conversations."""
    assert len(set(tasks.TRAIN_CITIES)) >= 230 and len(set(tasks.HELD_OUT_CITIES)) >= 100
    assert not set(tasks.TRAIN_CITIES) & set(tasks.HELD_OUT_CITIES)
    for train, held in [(tasks.ARITH_CORES, tasks.HELD_OUT_ARITH_CORES),
                        (tasks.WEATHER_CORES, tasks.HELD_OUT_WEATHER_CORES),
                        (tasks.LOOKUP_CORES, tasks.HELD_OUT_LOOKUP_CORES)]:
        assert not set(train) & set(held)
    examples = tasks.make_training_examples(1234, 20000)
    train_users = {m["content"] for e in examples for m in e["messages"] if m["role"] == "user"}
    eval_users = {t["messages"][0]["content"] for k in ("arith", "tool") for t in ev[k]}
    assert not train_users & eval_users, sorted(train_users & eval_users)[:5]
    blob = "\n".join(train_users)
    seen = [c for c in tasks.HELD_OUT_CITIES if re.search(rf"(?<!\w){re.escape(c)}(?!\w)", blob)]
    assert not seen, f"held-out cities in training requests: {seen[:5]}"
    print(f"held out: {len(eval_users)} eval requests, none among {len(train_users)} training ones")
    return examples


def myriad_render(request):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(request, f, ensure_ascii=False)
    try:
        r = subprocess.run([BINARY, "chat-template", MODEL_DIR, "--request", f.name],
                           capture_output=True, timeout=60)
    finally:
        os.unlink(f.name)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    return r.stdout.decode("utf-8")


def check_training_renderer(examples, ev):
    """chat.py renders as transformers and myriad do; learned turns are the template's; the
    regex tokenizer equals tiktoken."""
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415
    from tokenizers import Tokenizer as RawTokenizer, models  # noqa: PLC0415
    template = chat.ChatTemplate(MODEL_DIR)
    with open(os.path.join(MODEL_DIR, "chat_template.jinja"), encoding="utf-8") as f:
        source = f.read()
    # The template path of transformers needs no vocabulary: a one-word tokenizer will do.
    hf = PreTrainedTokenizerFast(
        tokenizer_object=RawTokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")),
        chat_template=source)
    by_kind = {}
    for e in examples:
        kind = ("call" if e["messages"][-1].get("tool_calls") else
                "after_tool" if any(m["role"] == "tool" for m in e["messages"]) else
                "tools" if e["tools"] else "multi" if len(e["messages"]) > 3 else "plain")
        by_kind.setdefault(kind, [])
        if len(by_kind[kind]) < 3:
            by_kind[kind].append(e)
    assert set(by_kind) == {"call", "after_tool", "tools", "multi", "plain"}, set(by_kind)
    n_hf = n_myriad = 0
    cases = [(e["messages"][:-1], e["tools"]) for es in by_kind.values() for e in es]
    cases += [(t["messages"], t["tools"]) for k in ("arith", "tool", "followup") for t in ev[k][:2]]
    for msgs, tools in cases:
        mine = template.render(msgs, tools, add_generation_prompt=True)
        if not any(m.get("tool_calls") for m in msgs):  # transformers refuses tool-call turns
            theirs = hf.apply_chat_template(msgs, tools=tools, add_generation_prompt=True,
                                            tokenize=False)
            assert mine == theirs, (mine, theirs)
            n_hf += 1
        request = {"messages": msgs, "add_generation_prompt": True}
        if tools:
            request["tools"] = tools
        assert mine == myriad_render(request), msgs
        n_myriad += 1
    # What training learns is what the template writes for that turn.
    for es in by_kind.values():
        for e in es:
            pieces = chat.training_pieces(template, e)
            last = e["messages"][-1]
            if last.get("tool_calls"):
                assert "".join(p for p, _ in pieces) == template.render(e["messages"], e["tools"])
            else:
                # The template blanks the reasoning of a final answer it renders (and of the
                # turns before it): without reasoning, its turn is assistant_turn's form.
                plain = [{k: v for k, v in m.items() if k != "reasoning_content"}
                         for m in e["messages"]]
                prompt = template.render(plain[:-1], e["tools"], add_generation_prompt=True)
                assert template.render(plain, e["tools"]) == \
                    prompt + chat.assistant_turn(plain[-1])
                assert pieces[-1] == (chat.assistant_turn(last), True)
            assert pieces[-1][0].startswith("<think>") and pieces[-1][0].endswith("<|im_end|>")
    # The tokenizer train.py uses on a host without tiktoken.
    fast, plain = Tokenizer(MODEL_DIR, "tiktoken"), Tokenizer(MODEL_DIR, "regex")
    texts = ["".join(p for p, _ in chat.training_pieces(template, e)) for e in examples[:300]]
    texts += tasks.english_documents(REPO)
    for text in texts:
        assert fast.encode(text) == plain.encode(text), text[:200]
    print(f"renderer: {n_hf} prompts equal transformers', {n_myriad} equal myriad's; "
          f"regex tokenizer equals tiktoken on {len(texts)} texts")


def main():
    t0 = time.time()
    ev = tasks.make_eval_tasks(EVAL_SEED)
    check_training_renderer(check_held_out(ev), ev)
    results = {"plus_minus": [], "times": [], "tool_call": [], "followup": []}
    failures = {k: [] for k in results}

    def note(key, ok, prompt, output):
        results[key].append(ok)
        if not ok and len(failures[key]) < 3:
            failures[key].append((prompt, output))

    # Arithmetic: one `myriad generate --chat` per task, four at a time: on the 2-core machine a
    # run spends most of its ~0.8 s starting (loading the binary's libraries), not computing, so
    # four in flight take about 2/3 of the time two did.
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        outs = list(ex.map(lambda t: generate(t["messages"][0]["content"]), ev["arith"]))
    for t, out in zip(ev["arith"], outs):
        note("times" if t["op"] == "*" else "plus_minus", tasks.grade_arith(t, out),
             t["messages"][0]["content"], out)
    t_arith = time.time() - t0

    server = Server(MODEL_DIR, "--served-model-name", "myriad-tiny")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0,
                               timeout=300)

        def ask(task):
            r = client.chat.completions.create(model="myriad-tiny", messages=task["messages"],
                                               tools=task["tools"], temperature=0,
                                               max_tokens=MAX_TOKENS)
            return r.choices[0].message

        # The tool requests and their continuations are independent requests: all in one pass,
        # 64 in flight (serve's --max-num-seqs).
        with concurrent.futures.ThreadPoolExecutor(64) as ex:
            messages = list(ex.map(ask, ev["tool"] + ev["followup"]))
        calls, answers = messages[:len(ev["tool"])], messages[len(ev["tool"]):]
        assert len(answers) == len(ev["followup"])
    finally:
        server.stop()
    for t, m in zip(ev["tool"], calls):
        got = [(c.function.name, c.function.arguments) for c in m.tool_calls or []]
        note("tool_call", tasks.grade_tool_call(t, got), t["messages"][0]["content"],
             f"tool_calls={got} content={m.content!r}")
    for t, m in zip(ev["followup"], answers):
        note("followup", tasks.grade_followup(t, m.content or ""),
             f"{t['messages'][0]['content']} -> {t['value']}", repr(m.content))

    figures, passed = tasks.bar(results)
    for k, f in figures.items():
        print(f"{k:10s} {f['correct']:3d}/{f['total']:3d} = {f['rate'] * 100:5.1f} % "
              f"(need {f['need'] * 100:.0f} %)")
        for prompt, out in failures[k]:
            print(f"    wrong: {prompt!r}\n       got {out[:300]!r}")
    print(f"arithmetic {t_arith:.0f} s, all {time.time() - t0:.0f} s; "
          f"bar {'met' if passed else 'NOT met'}")
    # The model folder's eval.json is train.py's report: the same tasks graded with torch (F32)
    # on the exported weights. myriad must score exactly what torch scored, task for task in
    # count; and once a model that meets the bar ships (bar_met), the bar is enforced here.
    report_path = os.path.join(MODEL_DIR, "eval.json")
    if not os.path.exists(report_path):
        print(f"{report_path}: no training report; the bar decides")
        return 0 if passed else 1
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    status = 0
    for k, f in figures.items():
        torch_correct = report["figures"][k]["correct"]
        if (f["correct"], f["total"]) != (torch_correct, report["figures"][k]["total"]):
            print(f"MISMATCH {k}: myriad {f['correct']}/{f['total']}, torch {torch_correct}/"
                  f"{report['figures'][k]['total']} ({report_path})")
            status = 1
    if status == 0:
        print(f"myriad's figures equal torch's ({report_path})")
    if report["bar_met"] and not passed:
        print("the shipped model met the bar with torch but not through myriad")
        status = 1
    if not report["bar_met"]:
        print("note: this model does not meet issue 9's bar yet (its training report says so)")
    return status


if __name__ == "__main__":
    sys.exit(main())
