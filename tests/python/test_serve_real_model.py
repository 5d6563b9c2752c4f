#!/usr/bin/env python3
"""`myriad serve` end to end with the official `openai` client on the REAL shipped model
(models/myriad-tiny, trained: no --enable-test-output, no scripted text): tool calls, the answer
after a tool result and reasoning, streaming and not, greedy.

Prompts are squarely in the training distribution of tools/train_tiny/tasks.py (its training
phrasings and cities, its three tools) and every expected value comes from the task generator's
own logic (tool arguments, arithmetic results, tool results), never from this model's output, so
a retrained model that learned the tasks passes too.

Robustness: another CPU computes slightly different logits, which must not change the greedy
output's meaning. Each prompt's generation is read with logprobs, and every step must either have
a clear margin (MARGIN) between the chosen token and every other, or each near-tied alternative is
itself forced (token ids through /v1/completions) and its greedy continuation must pass the same
checks, recursively. The near-ties are real: the task generator picks each think and answer
sentence at random among a few equally likely ones ("Weather question. ...", "The user asks about
the weather ...", "I need live weather data ..."), so a model that learned its data well is at a
near-tie at the first word of each; requiring a margin there would reject every tool prompt.

Run: build/venv/bin/python tests/python/test_serve_real_model.py (MYRIAD_BINARY = the executable)
"""

import base64
import json
import os
import random
import re
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(REPO, "models", "myriad-tiny")
MODEL = "myriad-tiny"
sys.path.insert(0, os.path.join(REPO, "tools", "train_tiny"))

import tasks  # noqa: E402
from test_serve import Server  # noqa: E402

MAX_TOKENS = 96  # the quality bar's budget; every answer here takes about 40
# The clear margin, in nats, between the greedy token and any other. Another CPU (other SIMD
# width, summation order) changes F32 logits by rounding only: two implementations of this model
# differ by at most 1.4e-4 (model card: transformers against the training code), and myriad gives
# identical logprobs with 1 and 2 threads. 1.0 nat is thousands of times more, so a step with
# that margin cannot flip; steps below it are explored instead (module docstring).
MARGIN = 1.0
TOP = 5  # alternatives read per step: a three-way near-tie needs more than the runner-up
MAX_BRANCHES = 64  # per prompt; more near-ties than this means the model is unsure: fail

RNG = random.Random(20261130)  # tool results, drawn with the task generator's functions


def training_prompt(cores, core, **fields):
    """A request in one of the generator's training phrasings (checked, so a retrain's data covers
    it)."""
    assert core in cores, f"{core!r} is no longer a training phrasing of tasks.py: pick another"
    return core.format(**fields)


def weather_case(city, core):
    assert city in tasks.TRAIN_CITIES, city
    return {"prompt": training_prompt(tasks.WEATHER_CORES, core, c=city), "name": "get_weather",
            "arguments": {"city": city}, "value": tasks.weather_value(RNG)}


def calculate_case(a, op, b, core):
    e = tasks.arith_expression(a, op, b)
    return {"prompt": training_prompt(tasks.ARITH_CORES, core, e=e), "name": "calculate",
            "arguments": {"expression": e}, "value": str(tasks.arith_value(a, op, b))}


def lookup_case(key, core):
    name = tasks.LOOKUP_KEYS[key][0]
    return {"prompt": training_prompt(tasks.LOOKUP_CORES, core, k=name), "name": "lookup",
            "arguments": {"key": key}, "value": tasks.lookup_value(RNG, key)}


TOOL_CASES = [
    weather_case("Paris", "What's the weather in {c}?"),
    weather_case("Tokyo", "How is the weather in {c} today?"),
    calculate_case(12, "*", 34, "Calculate {e}."),
    lookup_case("wifi_password", "What is the {k}?"),
]


def arith_case(a, op, b, core, words=False):
    e = tasks.arith_expression(a, op, b, words=words)
    return {"prompt": training_prompt(tasks.ARITH_CORES, core, e=e),
            "expected": tasks.arith_value(a, op, b)}


ARITH_CASES = [arith_case(23, "+", 45, "What is {e}?"),
               arith_case(81, "-", 27, "What's {e}?", words=True)]


# --- the server -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    s = Server(MODEL_DIR, "--served-model-name", MODEL)
    s.openai = s.client(timeout=120)
    yield s
    s.stop()


# --- token ids of what the server reports ------------------------------------------------------

class Vocab:
    """Token id <-> the token's text as the server reports it in logprobs: a special token by its
    name, any other by its bytes (reference.md §4.1 layout: tiktoken.model + added tokens)."""

    def __init__(self, folder):
        self.by_bytes = {}
        with open(os.path.join(folder, "tiktoken.model"), "rb") as f:
            for line in f:
                if line.strip():
                    b64, rank = line.split()
                    self.by_bytes[base64.b64decode(b64)] = int(rank)
        with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
            added = json.load(f)["added_tokens_decoder"]
        special = {v["content"].encode(): int(k) for k, v in added.items()}
        assert not set(special) & set(self.by_bytes), "a special name is also a byte token"
        self.by_bytes.update(special)
        self.bytes_of = {i: b for b, i in self.by_bytes.items()}

    def id(self, data, where):
        assert data in self.by_bytes, f"{where}: {data!r} is no token of {MODEL_DIR}"
        return self.by_bytes[data]

    def text(self, ids):
        return b"".join(self.bytes_of[i] for i in ids).decode("utf-8", "replace")


VOCAB = Vocab(MODEL_DIR)


class Step:
    """One generated token: id, text, logprob, and the alternatives [(id or None, text, lp)]."""

    def __init__(self, token, text, logprob, alts):
        self.token, self.text, self.logprob, self.alts = token, text, logprob, alts


def chat_steps(choice, label, usage):
    """Steps of a non-streamed chat choice read with logprobs (bytes identify each token)."""
    lp = choice.logprobs
    assert lp is not None and lp.content is not None, f"{label}: no logprobs returned"
    assert len(lp.content) == usage.completion_tokens, \
        f"{label}: {len(lp.content)} logprob entries for {usage.completion_tokens} tokens"
    steps = []
    for j, e in enumerate(lp.content):
        where = f"{label}, step {j}"
        assert len(e.top_logprobs) == TOP, f"{where}: {len(e.top_logprobs)} top logprobs"
        alts = [(VOCAB.id(bytes(t.bytes), where), t.token, t.logprob) for t in e.top_logprobs]
        steps.append(Step(VOCAB.id(bytes(e.bytes), where), e.token, e.logprob, alts))
    return steps


def completion(server, prompt_ids, max_tokens, label):
    """Greedy continuation of token ids through /v1/completions: (text, steps, finish reason).
    Legacy logprobs name tokens by text; a token that is not whole UTF-8 reads as U+FFFD there,
    so its bytes are taken from the text at its text_offset instead (an alternative that reads
    as U+FFFD stays unidentified: None)."""
    r = server.post("/v1/completions", {
        "model": MODEL, "prompt": prompt_ids, "max_tokens": max_tokens, "temperature": 0,
        "logprobs": TOP, "skip_special_tokens": False})
    choice = r["choices"][0]
    text, lp = choice["text"], choice["logprobs"]
    raw, offsets = text.encode(), lp["text_offset"]
    steps = []
    for j, (tok, logprob, top) in enumerate(zip(lp["tokens"], lp["token_logprobs"],
                                                lp["top_logprobs"])):
        where = f"{label}, step {j}"
        if offsets[j] < len(raw):
            end = offsets[j + 1] if j + 1 < len(offsets) else len(raw)
            data = raw[offsets[j]:end]
        else:  # the stop token: not part of the text
            data = tok.encode()
        token = VOCAB.id(data, where)
        # Texts that are not whole UTF-8 collide as keys; the chosen token's own entry is known.
        alts = [(token if t == tok and abs(x - logprob) < 1e-6 else
                 None if "\ufffd" in t else VOCAB.id(t.encode(), where), t, x)
                for t, x in top.items()]
        steps.append(Step(token, tok, logprob, alts))
    assert r["usage"]["completion_tokens"] == len(steps), f"{label}: logprobs missing"
    return text, steps, choice["finish_reason"]


def check_near_ties(server, label, messages, tools, steps, grade):
    """The robustness precondition (module docstring): every step of the greedy output has a clear
    margin, or each near-tied alternative, forced, leads to an output `grade` accepts
    (recursively). Returns (the served output's margins per step, branches explored)."""
    body = {"model": MODEL, "messages": messages}
    if tools:
        body["tools"] = tools
    prompt_ids = server.post("/tokenize", body)["tokens"]
    margins, branches = [], 0
    todo = [("served output", [], steps)]  # (name, forced prefix, steps generated after it)
    while todo:
        name, prefix, path = todo.pop()
        for j, s in enumerate(path):
            where = f"{label}: {name}, step {len(prefix) + j} ({s.text!r})"
            others = [a for a in s.alts if a[0] != s.token]
            assert others, f"{where}: no alternative reported"
            best = max(lp for _, _, lp in s.alts)
            assert s.logprob >= best - 1e-6, f"{where}: temperature 0 did not take the top token"
            margin = s.logprob - max(lp for _, _, lp in others)
            if not prefix:
                margins.append(margin)
            for alt, alt_text, alt_lp in others:
                if s.logprob - alt_lp >= MARGIN:
                    continue
                branches += 1
                assert branches <= MAX_BRANCHES, f"{label}: more than {MAX_BRANCHES} near-ties"
                assert alt is not None, f"{where}: near-tied {alt_text!r} cannot be identified"
                forced = prefix + [x.token for x in path[:j]] + [alt]
                bname = f"{name} > step {len(forced) - 1} {alt_text!r} " \
                        f"(margin {s.logprob - alt_lp:.3f}) instead of {s.text!r}"
                text, bsteps, finish = completion(server, prompt_ids + forced,
                                                  MAX_TOKENS - len(forced), f"{label}: {bname}")
                grade(VOCAB.text(forced) + text, finish, f"{label}: {bname}")
                todo.append((bname, forced, bsteps))
    return margins, branches


# --- graders of raw output (the branches explored) --------------------------------------------

def split_think(text, where):
    m = re.match(r"<think>(.*?)</think>(.*)", text, re.S)
    assert m and m.group(1).strip(), f"{where}: no reasoning in {text!r}"
    return m.group(2)


def grade_call(case):
    def grade(text, finish, where):
        assert finish == "stop", f"{where}: finished by {finish}: {text!r}"
        split_think(text, where)
        calls = tasks.parse_tool_calls(text)
        assert [c[0] for c in calls] == [case["name"]], f"{where}: calls {calls} in {text!r}"
        try:
            args = json.loads(calls[0][1])
        except ValueError:
            args = calls[0][1]
        assert args == case["arguments"], f"{where}: arguments {calls[0][1]!r}"
    return grade


def grade_answer(value):
    def grade(text, finish, where):
        assert finish == "stop", f"{where}: finished by {finish}: {text!r}"
        answer = split_think(text, where)
        assert "<|tool_call" not in answer, f"{where}: a tool call instead of an answer: {text!r}"
        assert value in answer, f"{where}: {value!r} not in the answer {answer!r}"
    return grade


def grade_arith(expected):
    def grade(text, finish, where):
        assert finish == "stop", f"{where}: finished by {finish}: {text!r}"
        answer = split_think(text, where)
        assert tasks.grade_arith({"expected": expected}, answer), \
            f"{where}: {expected} is not the answer's last number: {answer!r}"
    return grade


# --- the client's view -------------------------------------------------------------------------

def ask(server, messages, tools, stream, **kw):
    return server.openai.chat.completions.create(
        model=MODEL, messages=messages, tools=tools, temperature=0, max_tokens=MAX_TOKENS,
        stream=stream, **kw)


def reasoning_of(message_or_delta, where):
    extra = message_or_delta.model_extra or {}
    assert extra.get("reasoning_content") == extra.get("reasoning"), \
        f"{where}: reasoning_content and reasoning differ"
    return extra.get("reasoning_content") or ""


def streamed(server, messages, tools, where):
    """The stream joined: (content, reasoning, [(name, arguments)], finish reason)."""
    content, reasoning, calls, finish = "", "", {}, None
    for chunk in ask(server, messages, tools, True):
        for c in chunk.choices:
            content += c.delta.content or ""
            reasoning += reasoning_of(c.delta, where)
            for t in c.delta.tool_calls or []:
                call = calls.setdefault(t.index, ["", ""])
                if t.function and t.function.name:
                    call[0] += t.function.name
                if t.function and t.function.arguments:
                    call[1] += t.function.arguments
            if c.finish_reason:
                assert finish is None, f"{where}: two finish reasons"
                finish = c.finish_reason
    return content, reasoning, [tuple(calls[i]) for i in sorted(calls)], finish


def served(server, label, messages, tools, check, grade):
    """The non-streamed reply, checked by `check(choice)`; the streamed reply, equal to it; then
    the robustness precondition, with `grade` for the explored alternatives. Returns the choice."""
    r = ask(server, messages, tools, False, logprobs=True, top_logprobs=TOP)
    choice = r.choices[0]
    m = choice.message
    reasoning = reasoning_of(m, label)
    assert reasoning.strip(), f"{label}: no reasoning_content: {m}"
    check(choice)
    calls = [(c.function.name, c.function.arguments) for c in m.tool_calls or []]
    s_content, s_reasoning, s_calls, s_finish = streamed(server, messages, tools,
                                                         f"{label} (streamed)")
    assert (s_content, s_reasoning, s_calls, s_finish) == \
        (m.content or "", reasoning, calls, choice.finish_reason), f"{label}: streamed differs"
    margins, branches = check_near_ties(server, label, messages, tools,
                                        chat_steps(choice, label, r.usage), grade)
    clear = [x for x in margins if x >= MARGIN]
    print(f"{label}: {len(margins)} tokens, {len(margins) - len(clear)} near-ties (smallest "
          f"margin {min(margins):.3f}), {branches} alternatives explored; smallest clear margin "
          f"{min(clear):.2f}")
    return choice


# --- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", TOOL_CASES, ids=[c["prompt"] for c in TOOL_CASES])
def test_tool_call_then_answer(server, case):
    prompt = case["prompt"]
    messages = [{"role": "user", "content": prompt}]
    label = f"{prompt!r} (tool call)"

    def check_call(choice):
        m = choice.message
        assert choice.finish_reason == "tool_calls", f"{label}: {choice.finish_reason}: {m}"
        assert len(m.tool_calls or []) == 1, f"{label}: {m.tool_calls}"
        call = m.tool_calls[0]
        assert call.type == "function" and call.id, f"{label}: {call}"
        assert call.function.name == case["name"], f"{label}: {call.function.name}"
        assert json.loads(call.function.arguments) == case["arguments"], \
            f"{label}: arguments {call.function.arguments!r}"
        assert not m.content, f"{label}: content beside the call: {m.content!r}"

    m = served(server, label, messages, tasks.TOOLS, check_call, grade_call(case)).message

    # The client sends the call back as it got it (without the reasoning) with the tool's result.
    call, value = m.tool_calls[0], case["value"]
    messages += [{"role": "assistant", "content": m.content,
                  "tool_calls": [call.model_dump(exclude_none=True)]},
                 {"role": "tool", "tool_call_id": call.id, "content": value}]
    label = f"{prompt!r} (answer after the result {value!r})"

    def check_answer(choice):
        assert choice.finish_reason == "stop", f"{label}: {choice.finish_reason}"
        assert not choice.message.tool_calls, f"{label}: {choice.message.tool_calls}"
        assert value in (choice.message.content or ""), f"{label}: {choice.message.content!r}"

    served(server, label, messages, tasks.TOOLS, check_answer, grade_answer(value))


@pytest.mark.parametrize("case", ARITH_CASES, ids=[c["prompt"] for c in ARITH_CASES])
def test_reasoning_without_tools(server, case):
    label, expected = f"{case['prompt']!r} (no tools)", case["expected"]

    def check(choice):
        assert choice.finish_reason == "stop", f"{label}: {choice.finish_reason}"
        assert not choice.message.tool_calls, f"{label}: {choice.message.tool_calls}"
        content = choice.message.content or ""
        assert str(expected) in content and tasks.grade_arith({"expected": expected}, content), \
            f"{label}: {expected} is not the answer's last number: {content!r}"

    served(server, label, [{"role": "user", "content": case["prompt"]}], None, check,
           grade_arith(expected))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
