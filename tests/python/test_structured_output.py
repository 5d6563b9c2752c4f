#!/usr/bin/env python3
"""Structured output end to end on the REAL shipped model (models/myriad-tiny, no scripted text),
with the official `openai` and `anthropic` clients and the `jsonschema` package as the oracle.

- response_format json_schema over the schema corpus (tests/data/schemas, tools/
  make_schema_corpus.py): every output parses and validates (all of the corpus, or a spread
  subset of SUBSET schemas with MYRIAD_SCHEMA_SUBSET=1), within max_tokens;
  json_object; streaming and n > 1; the same request again (prefix cache);
- tool_choice "required" over 50 prompts (arithmetic questions that need no tool among them):
  a call every time, its name declared and its arguments valid for that tool's schema;
  named tool_choice; strict tools under tool_choice auto; Anthropic's any / tool and
  output_config.format; the Responses API's text.format;
- schemas the grammar cannot enforce: 400s naming the keyword, on every endpoint.

The model is tiny and trained on arithmetic and three tools only: what it writes inside the
constraint is nonsense as often as not, which is the point: the grammar, not the model, makes it
valid.

Run: build/venv/bin/python tests/python/test_structured_output.py (MYRIAD_BINARY = the executable)
"""

import concurrent.futures
import glob
import json
import os
import sys

import anthropic
import jsonschema
import openai
import pytest
import requests

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "train_tiny"))

import tasks  # noqa: E402
from test_serve import MODEL, Server  # noqa: E402

CASES = sorted(glob.glob(os.path.join(REPO, "tests", "data", "schemas", "*.json")))
SUBSET = 50
MAX_TOKENS = 400
# Tool calls: one call of these tools is at most ~55 tokens; past that the model repeats parallel
# calls until the budget closes the section, so a budget of 400 only made half the requests run 400
# steps. At 128 those still end in a complete, valid call (the budget steers the close).
TOOL_MAX_TOKENS = 128
# Requests in flight at once, and the server's --max-num-seqs: the engine batches them. On the
# 2-core CI machine the corpus takes half the time at 64 that it took at 8 (the same outputs).
WORKERS = 64


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


SUPPORTED = [c for c in CASES if "error" not in load(c)]
UNSUPPORTED = [c for c in CASES if "error" in load(c)]


def spread(items, n):
    """n items spread evenly over the list (every kind of the corpus, not its first names)."""
    if len(items) <= n:
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


# The whole corpus takes about a minute on 2 loaded cores; MYRIAD_SCHEMA_SUBSET=1 runs a spread
# SUBSET of it.
CORPUS = spread(SUPPORTED, SUBSET) if os.environ.get("MYRIAD_SCHEMA_SUBSET") == "1" else SUPPORTED


def validator(schema):
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def check_document(text, schema):
    doc = json.loads(text)
    errors = [e.message for e in validator(schema).iter_errors(doc)]
    assert not errors, (text, errors)
    return doc


@pytest.fixture(scope="module")
def server():
    s = Server("--max-num-seqs", str(WORKERS))
    yield s
    s.stop()


def client(server):
    return server.client(timeout=600)


def ask(server, prompt, **kw):
    kw.setdefault("max_tokens", MAX_TOKENS)
    return client(server).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": prompt}], **kw)


def json_schema_format(schema, name="answer"):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def parallel(fn, items):
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fn, items))


def test_corpus_has_both_kinds():
    assert len(SUPPORTED) >= 200 and len(UNSUPPORTED) >= 20, (len(SUPPORTED), len(UNSUPPORTED))


def test_every_output_over_the_schema_corpus_validates(server):
    def one(i_path):
        i, path = i_path
        schema = load(path)["schema"]
        r = ask(server, "Answer with the data as JSON.", seed=i,
                response_format=json_schema_format(schema))
        c = r.choices[0]
        # A document that may go on (a number's digits, an open array) can meet max_tokens
        # while complete: "length", and still valid, as the budget steers it to an end.
        assert c.finish_reason in ("stop", "length"), (os.path.basename(path), c.finish_reason)
        check_document(c.message.content, schema)
        return c.finish_reason

    reasons = parallel(one, list(enumerate(CORPUS)))
    assert len(reasons) == len(CORPUS)
    assert reasons.count("stop") >= len(CORPUS) // 2, reasons  # most end on their own


def test_json_object_streaming_and_not(server):
    r = ask(server, "What is 3 + 4? Reply in JSON.", response_format={"type": "json_object"},
            seed=1)
    assert isinstance(json.loads(r.choices[0].message.content), dict)
    assert r.choices[0].finish_reason == "stop"
    stream = ask(server, "What is 3 + 4? Reply in JSON.", response_format={"type": "json_object"},
                 seed=1, stream=True)
    content, finish = "", None
    for chunk in stream:
        for c in chunk.choices:
            content += c.delta.content or ""
            finish = c.finish_reason or finish
    # The same seed, the same document, whether streamed or not.
    assert content == r.choices[0].message.content and finish == "stop"


PERSON = {"type": "object", "additionalProperties": False, "required": ["name", "age", "tags"],
          "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 12},
                         "age": {"type": "integer", "minimum": 0, "maximum": 120},
                         "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                                  "minItems": 1, "maxItems": 3}}}


def test_n_choices_streamed_each_validates(server):
    fmt = json_schema_format(PERSON, "person")
    r = ask(server, "Describe a person.", n=3, seed=5, response_format=fmt)
    assert len(r.choices) == 3
    for c in r.choices:
        check_document(c.message.content, PERSON)
    stream = ask(server, "Describe a person.", n=3, seed=5, response_format=fmt, stream=True)
    contents = {}
    for chunk in stream:
        for c in chunk.choices:
            contents[c.index] = contents.get(c.index, "") + (c.delta.content or "")
    assert sorted(contents) == [0, 1, 2]
    for i, c in enumerate(r.choices):  # one matcher per choice: each stream is its own document
        assert contents[i] == c.message.content
        check_document(contents[i], PERSON)


def test_the_same_request_again_hits_the_prefix_cache(server):
    fmt = json_schema_format(PERSON, "person")
    prompt = "Describe a person with a long name, " * 8
    first = ask(server, prompt, seed=9, response_format=fmt)
    again = ask(server, prompt, seed=9, response_format=fmt)
    assert again.usage.prompt_tokens_details.cached_tokens > 0
    assert again.choices[0].message.content == first.choices[0].message.content
    check_document(again.choices[0].message.content, PERSON)


def tool_schema(name):
    return next(t["function"]["parameters"] for t in tasks.TOOLS if t["function"]["name"] == name)


def check_calls(message, allowed=None):
    assert message.tool_calls, message
    for call in message.tool_calls:
        names = allowed or [t["function"]["name"] for t in tasks.TOOLS]
        assert call.function.name in names, call
        check_document(call.function.arguments, tool_schema(call.function.name))


def fifty_prompts():
    t = tasks.make_eval_tasks(20261202)
    return [x["messages"][0]["content"] for x in t["arith"][:25] + t["tool"][:25]]


def test_tool_choice_required_calls_a_tool_every_time(server):
    prompts = fifty_prompts()
    assert len(prompts) == 50

    def one(i_prompt):
        i, prompt = i_prompt
        r = ask(server, prompt, tools=tasks.TOOLS, tool_choice="required", seed=i,
                max_tokens=TOOL_MAX_TOKENS)
        assert r.choices[0].finish_reason == "tool_calls", r.choices[0]
        check_calls(r.choices[0].message)
        return len(r.choices[0].message.tool_calls)

    calls = parallel(one, list(enumerate(prompts)))
    assert sum(calls) >= 50


def test_tool_choice_required_streamed_and_single(server):
    prompt = fifty_prompts()[0]  # an arithmetic question: no tool would be called unasked
    stream = ask(server, prompt, tools=tasks.TOOLS, tool_choice="required", stream=True,
                 parallel_tool_calls=False, seed=3)
    calls, finish = {}, None
    for chunk in stream:
        for c in chunk.choices:
            finish = c.finish_reason or finish
            for t in c.delta.tool_calls or []:
                call = calls.setdefault(t.index, {"name": None, "arguments": ""})
                if t.function and t.function.name:
                    call["name"] = t.function.name
                call["arguments"] += (t.function.arguments or "") if t.function else ""
    assert finish == "tool_calls" and len(calls) == 1, calls
    check_document(calls[0]["arguments"], tool_schema(calls[0]["name"]))


def test_named_tool_choice(server):
    weather = [p for p in fifty_prompts()[25:]][:6]

    def one(i_prompt):
        i, prompt = i_prompt
        r = ask(server, prompt, tools=tasks.TOOLS, seed=i, max_tokens=TOOL_MAX_TOKENS,
                tool_choice={"type": "function", "function": {"name": "lookup"}})
        check_calls(r.choices[0].message, allowed=["lookup"])

    parallel(one, list(enumerate(weather)))


# A schema the model never saw: the city must be capitalised letters, and a unit is required.
STRICT_WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.", "strict": True,
    "parameters": {"type": "object", "additionalProperties": False, "required": ["city", "unit"],
                   "properties": {"city": {"type": "string", "pattern": "^[A-Z][a-z]{1,15}$"},
                                  "unit": {"enum": ["celsius", "fahrenheit"]}}}}}


def test_strict_tools_under_auto(server):
    t = tasks.make_eval_tasks(7)["tool"]
    prompts = [x["messages"][0]["content"] for x in t if x["name"] == "get_weather"][:10]
    assert len(prompts) == 10

    def one(i_prompt):
        i, prompt = i_prompt
        m = ask(server, prompt, tools=[STRICT_WEATHER], seed=i).choices[0].message
        for call in m.tool_calls or []:
            assert call.function.name == "get_weather"
            check_document(call.function.arguments, STRICT_WEATHER["function"]["parameters"])
        return len(m.tool_calls or [])

    called = sum(parallel(one, list(enumerate(prompts))))
    assert called >= 5  # the model asks for the weather, now in the strict schema's shape


def anthropic_client(server):
    return anthropic.Anthropic(base_url=server.url, api_key="none", max_retries=0, timeout=600)


ANTHROPIC_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"]} for t in tasks.TOOLS]


def test_anthropic_any_and_tool(server):
    cases = [(prompt, choice, names)
             for prompt in fifty_prompts()[:4] + fifty_prompts()[30:32]
             for choice, names in [({"type": "any"}, None),
                                   ({"type": "tool", "name": "calculate"}, ["calculate"])]]
    assert len(cases) == 12

    def one(case):
        prompt, choice, names = case
        m = anthropic_client(server).messages.create(
            model=MODEL, max_tokens=TOOL_MAX_TOKENS, tools=ANTHROPIC_TOOLS, tool_choice=choice,
            messages=[{"role": "user", "content": prompt}])
        uses = [b for b in m.content if b.type == "tool_use"]
        assert uses and m.stop_reason == "tool_use", m
        for u in uses:
            assert u.name in (names or [t["name"] for t in ANTHROPIC_TOOLS])
            errors = list(validator(tool_schema(u.name)).iter_errors(u.input))
            assert not errors, (u.input, errors)

    parallel(one, cases)


def test_anthropic_output_config_format(server):
    m = anthropic_client(server).messages.create(
        model=MODEL, max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": "A person?"}],
        extra_body={"output_config": {"format": {"type": "json_schema", "schema": PERSON}}})
    text = "".join(b.text for b in m.content if b.type == "text")
    check_document(text, PERSON)
    assert m.stop_reason == "end_turn"


def test_responses_text_format(server):
    fmt = {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}
    r = client(server).responses.create(model=MODEL, input="Describe a person.",
                                        max_output_tokens=MAX_TOKENS, text={"format": fmt})
    check_document(r.output_text, PERSON)
    assert r.text.format.type == "json_schema"
    r = client(server).responses.create(model=MODEL, input="Give me JSON.",
                                        max_output_tokens=MAX_TOKENS,
                                        text={"format": {"type": "json_object"}})
    assert isinstance(json.loads(r.output_text), dict)


def test_completions_response_format(server):
    r = client(server).completions.create(model=MODEL, prompt="Some JSON:", max_tokens=MAX_TOKENS,
                                          extra_body={"response_format": json_schema_format(PERSON)})
    check_document(r.choices[0].text, PERSON)


@pytest.mark.parametrize("path", UNSUPPORTED, ids=[os.path.basename(c)[:-5] for c in UNSUPPORTED])
def test_unsupported_keywords_are_400s_naming_them(server, path):
    case = load(path)
    schema, keyword = case["schema"], case["error"]
    with pytest.raises(openai.BadRequestError) as e:
        ask(server, "x", response_format=json_schema_format(schema))
    assert keyword in e.value.body["message"] and e.value.body["param"] == \
        "response_format.json_schema.schema"
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    with pytest.raises(openai.BadRequestError) as e:
        ask(server, "x", tools=[tool], tool_choice="required")
    assert keyword in e.value.body["message"] and "'f'" in e.value.body["message"]
    r = requests.post(server.url + "/v1/responses", timeout=60, json={
        "model": MODEL, "input": "x",
        "text": {"format": {"type": "json_schema", "name": "x", "schema": schema}}})
    assert r.status_code == 400 and keyword in r.text, r.text
    r = requests.post(server.url + "/v1/messages", timeout=60, json={
        "model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
        "output_config": {"format": {"type": "json_schema", "schema": schema}}})
    assert r.status_code == 400 and keyword in r.text, r.text


def test_malformed_response_formats_are_400s(server):
    for fmt, field in [({"type": "yaml"}, "response_format.type"),
                       ({"type": "json_schema", "json_schema": 3}, "response_format.json_schema"),
                       ({"type": "json_schema", "json_schema": {"schema": "x"}},
                        "response_format.json_schema.schema")]:
        with pytest.raises(openai.BadRequestError) as e:
            ask(server, "x", response_format=fmt)
        assert e.value.body["param"] == field, e.value.body
    # The server still answers afterwards.
    r = ask(server, "What is 2 + 2?", max_tokens=20)
    assert r.choices[0].message is not None


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
