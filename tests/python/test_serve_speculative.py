#!/usr/bin/env python3
"""`myriad serve --speculative ngram` against `myriad serve` without it, with the official `openai`
client, on the shipped model: greedy text (chat and completions, streamed and not, with a stop
string and with logprobs) is the same, the streamed deltas add up to the non-streamed text, and
/metrics counts drafted and accepted tokens.
Run: build/venv/bin/python tests/python/test_serve_speculative.py   (MYRIAD_BINARY = the executable)
"""
import json
import os
import sys

import jsonschema
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_serve import MODEL, Server  # noqa: E402

CODE = ("def area(width, height):\n    return width * height\n\n"
        "def perimeter(width, height):\n    return 2 * (width + height)\n\n")
PROMPTS = [
    CODE + CODE + "def area(width, height):\n",
    "The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The cat",
    "one two three four five one two three four five one two three",
]
MESSAGES = [
    [{"role": "user", "content": "Repeat this exactly:\n" + CODE}],
    [{"role": "user", "content": "Say 'hello world' three times: hello world hello world"}],
]


@pytest.fixture(scope="module")
def servers():
    plain = Server()
    try:
        spec = Server("--speculative", "ngram", "--num-speculative-tokens", "4")
    except Exception:
        plain.stop()
        raise
    plain.openai = plain.client(timeout=120)
    spec.openai = spec.client(timeout=120)
    yield plain, spec
    spec.stop()
    plain.stop()


def complete(server, prompt, stream, **kw):
    args = dict(model=MODEL, prompt=prompt, max_tokens=60, temperature=0, **kw)
    if not stream:
        c = server.openai.completions.create(**args).choices[0]
        return c.text, c.finish_reason
    text, finish = "", None
    for chunk in server.openai.completions.create(stream=True, **args):
        for c in chunk.choices:
            text += c.text or ""
            finish = c.finish_reason or finish
    return text, finish


def chat(server, messages, stream):
    args = dict(model=MODEL, messages=messages, max_tokens=60, temperature=0)
    if not stream:
        c = server.openai.chat.completions.create(**args).choices[0]
        return c.message.content, c.finish_reason
    text, finish = "", None
    for chunk in server.openai.chat.completions.create(stream=True, **args):
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    return text, finish


@pytest.mark.parametrize("i", range(len(PROMPTS)))
def test_completions_same_text_streamed_or_not(servers, i):
    plain, spec = servers
    want = complete(plain, PROMPTS[i], False)
    assert want[0], "the plain run generated nothing"
    assert complete(spec, PROMPTS[i], False) == want
    assert complete(spec, PROMPTS[i], True) == want
    assert complete(plain, PROMPTS[i], True) == want


@pytest.mark.parametrize("i", range(len(MESSAGES)))
def test_chat_same_text_streamed_or_not(servers, i):
    plain, spec = servers
    want = chat(plain, MESSAGES[i], False)
    assert chat(spec, MESSAGES[i], False) == want
    assert chat(spec, MESSAGES[i], True) == want


def test_stop_string_inside_an_accepted_run(servers):
    plain, spec = servers
    full, _ = complete(plain, PROMPTS[0], False)
    # A stop string from the middle of the plain output: both stop there.
    words = full.split()
    assert len(words) >= 4, full
    stop = words[len(words) // 2]
    want = complete(plain, PROMPTS[0], False, stop=[stop])
    assert want[1] == "stop"
    assert complete(spec, PROMPTS[0], False, stop=[stop]) == want
    assert complete(spec, PROMPTS[0], True, stop=[stop]) == want


def test_logprobs_as_without(servers):
    plain, spec = servers
    args = dict(model=MODEL, prompt=PROMPTS[1], max_tokens=30, temperature=0, logprobs=2)
    a = plain.openai.completions.create(**args).choices[0].logprobs
    b = spec.openai.completions.create(**args).choices[0].logprobs
    assert a.tokens == b.tokens
    for x, y in zip(a.token_logprobs, b.token_logprobs):
        assert abs(x - y) < 1e-4
    for x, y in zip(a.top_logprobs, b.top_logprobs):
        assert x.keys() == y.keys()


def test_structured_output_as_without(servers):
    """Drafts are checked against the grammar's mask at every verified position."""
    plain, spec = servers
    schema = {"type": "object", "properties": {"name": {"type": "string"},
                                               "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
              "required": ["name", "tags"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": True}}
    args = dict(model=MODEL, messages=MESSAGES[0], max_tokens=80, temperature=0,
                response_format=fmt)
    want = plain.openai.chat.completions.create(**args).choices[0]
    got = spec.openai.chat.completions.create(**args).choices[0]
    assert (got.message.content, got.finish_reason) == (want.message.content, want.finish_reason)
    text = ""
    for chunk in spec.openai.chat.completions.create(stream=True, **args):
        for c in chunk.choices:
            text += c.delta.content or ""
    assert text == want.message.content
    if want.finish_reason == "stop":
        jsonschema.validate(json.loads(want.message.content), schema)


def test_metrics_count_drafts(servers):
    plain, spec = servers
    for p in PROMPTS:
        complete(spec, p, False)
    m = spec.metrics()
    drafted = m["myriad_spec_decode_num_draft_tokens_total"]
    accepted = m["myriad_spec_decode_num_accepted_tokens_total"]
    assert m["myriad_spec_decode_num_drafts_total"] > 0
    assert 0 < accepted < drafted
    assert abs(m["myriad_spec_decode_acceptance_rate"] - accepted / drafted) < 1e-5
    assert plain.metrics()["myriad_spec_decode_num_draft_tokens_total"] == 0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
