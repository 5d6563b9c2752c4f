#!/usr/bin/env python3
"""`myriad serve` end to end with the official `openai` client, on the shipped model.

Most checks use the server's test facility (`--enable-test-output`: a request's `test_output`
text is emitted as forced tokens instead of sampled ones) to make the output known, whatever the
model would say: tool calls, reasoning and stop strings go through the real engine, detokenizer,
parsers, HTTP and SSE (the trained model's own output: test_serve_real_model.py). Also: errors
(401, 400, 404, 413, 429), usage against /tokenize, seeds, logprobs, n, completions, a bounded
load test with disconnects, and SIGTERM draining.

Run: build/venv/bin/python tests/python/test_serve.py   (MYRIAD_BINARY = the myriad executable)
"""

import json
import os
import random
import re
import signal
import socket
import subprocess
import tempfile
import sys
import threading
import time

import openai
import pytest
import requests

import serve_process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
MODEL = "myriad-tiny"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Tests start several servers at once: on a GPU each takes this share of its memory (serve's own
# default, 0.9, is for a server that has the GPU to itself), unless the test sets its own.
GPU_SHARE = os.environ.get("MYRIAD_TEST_GPU_MEMORY_UTILIZATION", "0.2")


class Server:
    def __init__(self, *flags, env=None):
        if "--gpu-memory-utilization" not in flags:
            flags = (*flags, "--gpu-memory-utilization", GPU_SHARE)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()  # not a pipe: nobody reads it while the server runs
        self.proc = serve_process.spawn(
            [BINARY, "serve", "--port", str(self.port), "--threads", "2", *flags],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        serve_process.wait_healthy(self.proc, self.url, self.output)

    def output(self):
        """What the server printed so far."""
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def client(self, key="none", **kw):
        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, **kw)

    def post(self, path, body):
        r = requests.post(self.url + path, json=body, timeout=120)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text}"
        return r.json()

    def metrics(self):
        out = {}
        for line in requests.get(self.url + "/metrics").text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])

    def stop(self):
        serve_process.stop(self.proc)


@pytest.fixture(scope="module")
def server():
    s = Server("--enable-test-output")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def strict():
    s = Server("--api-key", "sekret", "--max-num-seqs", "1", "--max-queue", "1",
               "--max-request-bytes", "4096")
    yield s
    s.stop()


def chat(server, text=None, stream=False, **kw):
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    kw.setdefault("max_tokens", 200)
    extra = dict(kw.pop("extra_body", {}))
    if text is not None:
        extra["test_output"] = text
    return server.client().chat.completions.create(model=MODEL, stream=stream, extra_body=extra,
                                                   **kw)


def collect_stream(stream, expect_role=True):
    """Joins a chat stream: (role, content, reasoning, tool calls by index, finish, usage)."""
    role, content, reasoning, calls, finish, usage, first = None, "", "", {}, None, None, expect_role
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            d = c.delta
            if first:
                assert d.role == "assistant", "the first delta carries the role"
                first = False
            content += d.content or ""
            extra = d.model_extra or {}
            assert extra.get("reasoning_content") == extra.get("reasoning")
            reasoning += extra.get("reasoning") or ""
            for t in d.tool_calls or []:
                call = calls.setdefault(t.index, {"id": None, "name": None, "arguments": ""})
                if t.id:
                    assert call["id"] is None, "id sent once per call"
                    call["id"] = t.id
                if t.function and t.function.name:
                    call["name"] = t.function.name
                if t.function and t.function.arguments:
                    call["arguments"] += t.function.arguments
            if c.finish_reason:
                finish = c.finish_reason
    return content, reasoning, calls, finish, usage


# --- basics -----------------------------------------------------------------------------------

def test_health_models_metrics(server):
    assert requests.get(server.url + "/health").json() == {"status": "ok"}
    models = server.client().models.list()
    assert [m.id for m in models.data] == [MODEL]
    m = server.metrics()
    assert m["myriad_kv_blocks_total"] > 0 and m["myriad_ready"] == 1


def test_chat_non_streaming_and_usage_matches_tokenize(server):
    messages = [{"role": "user", "content": "What is 12 + 7?"}]
    r = chat(server, messages=messages, max_tokens=5, extra_body={"ignore_eos": True})
    assert r.object == "chat.completion" and r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 5
    tok = requests.post(server.url + "/tokenize", json={"model": MODEL, "messages": messages}).json()
    assert r.usage.prompt_tokens == tok["count"]
    assert r.usage.total_tokens == r.usage.prompt_tokens + 5
    assert r.usage.prompt_tokens_details.cached_tokens >= 0


def reply(message):
    """(reasoning, content) of a non-streamed message; no content and no reasoning read as ''."""
    return (message.model_extra or {}).get("reasoning_content") or "", message.content or ""


def test_streaming_equals_non_streaming_with_seed(server):
    # The shipped model reasons first: 12 tokens may all be reasoning, so both parts compare.
    kw = dict(max_tokens=12, seed=7, temperature=1.0, extra_body={"ignore_eos": True})
    a = reply(chat(server, **kw).choices[0].message)
    b = reply(chat(server, **kw).choices[0].message)
    assert a == b, "same seed, same text"
    assert a != ("", ""), "something was generated"
    content, reasoning, _, finish, usage = collect_stream(
        chat(server, stream=True, stream_options={"include_usage": True}, **kw))
    assert (reasoning, content) == a
    assert finish == "length" and usage.completion_tokens == 12
    c = reply(chat(server, **dict(kw, seed=8)).choices[0].message)
    assert c != a, "another seed, another text"


def test_n_choices(server):
    r = chat(server, n=3, max_tokens=4, seed=1, extra_body={"ignore_eos": True})
    assert [c.index for c in r.choices] == [0, 1, 2]
    assert r.usage.completion_tokens == 12
    got = {}
    for chunk in chat(server, stream=True, n=2, max_tokens=4, seed=1,
                      extra_body={"ignore_eos": True}):
        for c in chunk.choices:
            reasoning, content = got.get(c.index, ("", ""))
            got[c.index] = (reasoning + ((c.delta.model_extra or {}).get("reasoning") or ""),
                            content + (c.delta.content or ""))
    assert got == {0: reply(r.choices[0].message), 1: reply(r.choices[1].message)}


def test_stop_strings(server):
    text = "Hello world. STOP and more text after"
    r = chat(server, text, stop=["STOP"])
    assert r.choices[0].message.content == "Hello world. "
    assert r.choices[0].finish_reason == "stop"
    content, _, _, finish, _ = collect_stream(chat(server, text, stream=True, stop="d. ST"))
    assert content == "Hello worl" and finish == "stop"
    # A partial stop string that never completes is not lost.
    content, _, _, _, _ = collect_stream(chat(server, "abc xyz", stream=True, stop=["xyq"]))
    assert content == "abc xyz"


def test_logprobs(server):
    r = chat(server, max_tokens=6, logprobs=True, top_logprobs=3, extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs.content
    assert len(lp) == 6
    for e in lp:
        assert e.logprob <= 0 and len(e.top_logprobs) == 3
        assert e.top_logprobs[0].logprob >= e.logprob - 1e-6


def test_test_output_and_eos(server):
    r = chat(server, "Exactly this.")
    assert r.choices[0].message.content == "Exactly this."
    assert r.choices[0].finish_reason == "stop"


# --- reasoning and tool calls -------------------------------------------------------------------

KIMI_EXAMPLES = [
    ("I'll help you check the weather. <|tool_calls_section_begin|> <|tool_call_begin|>\n"
     "functions.get_weather:0 <|tool_call_argument_begin|> {\"city\": \"Beijing\"} "
     "<|tool_call_end|> <|tool_calls_section_end|>",
     "I'll help you check the weather. ",
     [("functions.get_weather:0", "get_weather", '{"city": "Beijing"}')]),
    ("I'll help you with multiple tasks. <|tool_calls_section_begin|><|tool_call_begin|>"
     "functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"New York\"}<|tool_call_end|>"
     "<|tool_call_begin|>functions.get_news:1<|tool_call_argument_begin|>{\"topic\": \"technology\"}"
     "<|tool_call_end|><|tool_call_begin|>functions.send_email:2<|tool_call_argument_begin|>"
     "{\"to\": \"user@example.com\", \"subject\": \"Daily Update\"}<|tool_call_end|>"
     "<|tool_calls_section_end|>",
     "I'll help you with multiple tasks. ",
     [("functions.get_weather:0", "get_weather", '{"city": "New York"}'),
      ("functions.get_news:1", "get_news", '{"topic": "technology"}'),
      ("functions.send_email:2", "send_email",
       '{"to": "user@example.com", "subject": "Daily Update"}')]),
    ("Mixed spacing test. <|tool_calls_section_begin|> <|tool_call_begin|> functions.test:0 "
     "<|tool_call_argument_begin|> {} <|tool_call_end|><|tool_call_begin|>functions.test2:1"
     "<|tool_call_argument_begin|>{}<|tool_call_end|> <|tool_calls_section_end|>",
     "Mixed spacing test. ",
     [("functions.test:0", "test", "{}"), ("functions.test2:1", "test2", "{}")]),
    ("I need to process HTML content. <|tool_calls_section_begin|><|tool_call_begin|>"
     "functions.process_html:0<|tool_call_argument_begin|>{\"html\": \"<div>content</div>\", "
     "\"text\": \"normal text\"}<|tool_call_end|><|tool_calls_section_end|>",
     "I need to process HTML content. ",
     [("functions.process_html:0", "process_html",
       '{"html": "<div>content</div>", "text": "normal text"}')]),
    ("This is a test", "This is a test", []),
    # Tool names with dots (MCP) and a section cut short by max tokens/end of output.
    ("<|tool_calls_section_begin|><|tool_call_begin|>functions.fs.read_file:0"
     "<|tool_call_argument_begin|>{\"path\": \"/tmp/x\"}",
     None, [("functions.fs.read_file:0", "fs.read_file", '{"path": "/tmp/x"}')]),
]


@pytest.mark.parametrize("case", range(len(KIMI_EXAMPLES)))
def test_kimi_tool_calls_streaming_and_not(server, case):
    text, content, calls = KIMI_EXAMPLES[case]
    r = chat(server, text, tools=[WEATHER_TOOL])
    msg = r.choices[0].message
    assert msg.content == content
    got = [(t.id, t.function.name, t.function.arguments) for t in msg.tool_calls or []]
    assert got == calls
    assert r.choices[0].finish_reason == ("tool_calls" if calls else "stop")
    s_content, _, s_calls, finish, _ = collect_stream(chat(server, text, stream=True,
                                                           tools=[WEATHER_TOOL]))
    assert s_content == (content or "")
    assert [(c["id"], c["name"], c["arguments"]) for _, c in sorted(s_calls.items())] == calls
    assert finish == r.choices[0].finish_reason


def test_reasoning_then_answer(server):
    text = "<think>The user greets me.</think>Hello!"
    msg = chat(server, text).choices[0].message
    extra = msg.model_extra
    assert extra["reasoning_content"] == extra["reasoning"] == "The user greets me."
    assert msg.content == "Hello!"
    content, reasoning, _, _, _ = collect_stream(chat(server, text, stream=True))
    assert (reasoning, content) == ("The user greets me.", "Hello!")


def test_reasoning_ends_at_tool_section(server):
    text = ("<think>I should call a tool<|tool_calls_section_begin|><|tool_call_begin|>"
            "functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Oslo\"}"
            "<|tool_call_end|><|tool_calls_section_end|>")
    msg = chat(server, text, tools=[WEATHER_TOOL]).choices[0].message
    assert msg.model_extra["reasoning"] == "I should call a tool"
    assert msg.tool_calls[0].function.arguments == '{"city": "Oslo"}'


def test_no_tags_is_content_not_blank(server):
    msg = chat(server, "Plain answer without tags.").choices[0].message
    assert msg.content == "Plain answer without tags."
    assert "reasoning" not in (msg.model_extra or {})


def test_tool_choice_named_is_forced(server):
    # The server forces "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    # <|tool_call_argument_begin|>"; the test output supplies only the arguments.
    rest = '{"city": "Rome"}<|tool_call_end|><|tool_calls_section_end|>'
    tc = {"type": "function", "function": {"name": "get_weather"}}
    r = chat(server, rest, tools=[WEATHER_TOOL], tool_choice=tc)
    call = r.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == (
        "functions.get_weather:0", "get_weather", '{"city": "Rome"}')
    assert r.choices[0].finish_reason == "tool_calls"
    _, _, calls, finish, _ = collect_stream(chat(server, rest, stream=True, tools=[WEATHER_TOOL],
                                                 tool_choice=tc))
    assert calls[0]["name"] == "get_weather" and calls[0]["arguments"] == '{"city": "Rome"}'
    assert finish == "tool_calls"


def test_tool_choice_required_forces_the_section(server):
    # Random weights: whatever follows, the output starts with the section opening.
    r = chat(server, None, tools=[WEATHER_TOOL], tool_choice="required", max_tokens=1,
             logprobs=True, extra_body={"skip_special_tokens": False})
    assert r.choices[0].logprobs.content[0].token == "<|tool_calls_section_begin|>"


def test_nothing_the_model_wrote_is_lost(server):
    # An id without a function name resolves to the one declared tool.
    text = ("<|tool_calls_section_begin|><|tool_call_begin|>call_3<|tool_call_argument_begin|>"
            "{\"city\": \"Rome\"}<|tool_call_end|><|tool_calls_section_end|>")
    msg = chat(server, text, tools=[WEATHER_TOOL]).choices[0].message
    assert [(t.id, t.function.name, t.function.arguments) for t in msg.tool_calls] == [
        ("call_3", "get_weather", '{"city": "Rome"}')]
    # With two declared tools it cannot be resolved: it comes back as text, never as nothing.
    other = {"type": "function", "function": {"name": "get_time", "parameters": {}}}
    r = chat(server, text, tools=[WEATHER_TOOL, other])
    assert not r.choices[0].message.tool_calls
    assert "call_3" in r.choices[0].message.content and "Rome" in r.choices[0].message.content
    s_content, _, s_calls, _, _ = collect_stream(chat(server, text, stream=True,
                                                      tools=[WEATHER_TOOL, other]))
    assert s_content == r.choices[0].message.content and not s_calls
    assert "does not name a declared tool" in server.output()


def test_tool_choice_required_never_ends_empty(server):
    """A forced section that still holds no call that parses is an error the client sees, not
    a 200 with an empty message and finish_reason stop."""
    text = "no call here<|tool_calls_section_end|>"
    with pytest.raises(openai.InternalServerError) as e:
        chat(server, text, tools=[WEATHER_TOOL], tool_choice="required")
    assert "tool_choice" in e.value.body["message"]
    stream = chat(server, text, stream=True, tools=[WEATHER_TOOL], tool_choice="required")
    with pytest.raises(openai.APIError) as e:
        collect_stream(stream)
    assert "tool_choice" in str(e.value)


def test_tool_choice_none_does_not_render_or_parse(server):
    text = ("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
            "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>")
    msg = chat(server, text, tools=[WEATHER_TOOL], tool_choice="none").choices[0].message
    assert not msg.tool_calls
    with_tools = requests.post(server.url + "/tokenize", json={
        "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER_TOOL]}).json()
    without = requests.post(server.url + "/tokenize", json={
        "messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER_TOOL],
        "tool_choice": "none"}).json()
    rendered = requests.post(server.url + "/detokenize",
                             json={"tokens": with_tools["tokens"]}).json()["prompt"]
    assert "tool_declare" in rendered and "get_weather" in rendered
    assert without["count"] < with_tools["count"]


def test_tool_history_renders(server):
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "functions.get_weather:0", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "sunny"},
    ]
    r = chat(server, "It is sunny.", messages=messages, tools=[WEATHER_TOOL])
    assert r.choices[0].message.content == "It is sunny."


# --- completions --------------------------------------------------------------------------------

def test_completions_forms(server):
    c = server.client()
    r = c.completions.create(model=MODEL, prompt="Hello", extra_body={"ignore_eos": True})
    assert r.usage.completion_tokens == 16, "max_tokens defaults to 16"
    r = c.completions.create(model=MODEL, prompt=["one", "two"], max_tokens=3, n=2,
                             extra_body={"ignore_eos": True})
    assert len(r.choices) == 4 and [x.index for x in r.choices] == [0, 1, 2, 3]
    r = c.completions.create(model=MODEL, prompt=[3840, 100, 101], max_tokens=3, echo=True,
                             logprobs=2, extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == 6 and lp.token_logprobs[0] is None and lp.token_logprobs[5] <= 0
    prompt_text = requests.post(server.url + "/detokenize",
                                json={"tokens": [3840, 100, 101]}).json()["prompt"]
    assert r.choices[0].text.startswith(prompt_text)
    r = c.completions.create(model=MODEL, prompt="x", extra_body={"test_output": "a STOP b"},
                             stop=["STOP"])
    assert r.choices[0].text == "a " and r.choices[0].finish_reason == "stop"
    text = "".join(ch.choices[0].text for ch in c.completions.create(
        model=MODEL, prompt="x", stream=True, extra_body={"test_output": "streamed words"}))
    assert text == "streamed words"


# --- errors -------------------------------------------------------------------------------------

def test_errors(server):
    c = server.client()
    with pytest.raises(openai.NotFoundError):
        c.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                  temperature="hot")
    assert e.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                  response_format={"type": "xml"})
    assert e.value.body["param"] == "response_format.type" and "xml" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                  max_tokens=10**7)
    max_model_len = c.models.list().data[0].max_model_len  # the model's own (the run plan's)
    assert "10000000" in e.value.body["message"]
    assert str(max_model_len) in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=MODEL, messages=[{"role": "wizard", "content": "x"}])
    assert e.value.body["param"] == "messages[0].role"
    r = requests.post(server.url + "/v1/chat/completions", data="{not json")
    assert r.status_code == 400 and "error" in r.json()
    r = requests.post(server.url + "/v1/chat/completions", data="[" * 100000 + "]" * 100000)
    assert r.status_code == 400
    # model is optional (as in vLLM): the served one.
    r = requests.post(server.url + "/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "x"}], "test_output": "ok"})
    assert r.status_code == 200 and r.json()["model"] == MODEL
    r = requests.post(server.url + "/v1/completions", json={"prompt": "x", "max_tokens": 2})
    assert r.status_code == 200 and r.json()["model"] == MODEL
    # Unknown fields are ignored.
    r = chat(server, "ok", extra_body={"some_future_field": {"x": 1}})
    assert r.choices[0].message.content == "ok"


def test_auth_and_limits(strict):
    with pytest.raises(openai.AuthenticationError):
        strict.client("wrong").models.list()
    assert [m.id for m in strict.client("sekret").models.list().data] == [MODEL]
    assert requests.get(strict.url + "/health").status_code == 200
    assert requests.get(strict.url + "/metrics").status_code == 200
    with pytest.raises(openai.BadRequestError) as e:  # test facility off
        strict.client("sekret").chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}],
            extra_body={"test_output": "x"})
    assert e.value.body["param"] == "test_output"
    r = requests.post(strict.url + "/v1/chat/completions", data="x" * 5000,
                      headers={"Authorization": "Bearer sekret"})
    assert r.status_code == 413 and "max-request-bytes" in r.json()["error"]["message"]
    # max-num-seqs 1 + max-queue 1: a third concurrent sequence gets 429.
    c = strict.client("sekret")
    streams = [c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                         max_tokens=2000, stream=True,
                                         extra_body={"ignore_eos": True}) for _ in range(2)]
    with pytest.raises(openai.RateLimitError):
        c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                  max_tokens=2)
    for s in streams:
        s.close()


# --- load, disconnects, drain -------------------------------------------------------------------

def one_stream(url, rng, errors):
    body = {"model": MODEL, "messages": [{"role": "user", "content": f"hello {rng.random()}"}],
            "max_tokens": rng.randint(8, 40), "stream": True, "ignore_eos": True}
    disconnect_after = rng.randint(1, 10) if rng.random() < 0.3 else None
    try:
        with requests.post(url + "/v1/chat/completions", json=body, stream=True, timeout=120) as r:
            if r.status_code != 200:
                errors.append(f"status {r.status_code}")
                return
            events = 0
            for line in r.iter_lines():
                if not line:
                    continue
                events += 1
                if disconnect_after and events >= disconnect_after:
                    return  # closing the response drops the connection mid-stream
                if line == b"data: [DONE]":
                    return
            errors.append("stream ended without [DONE]")
    except Exception as e:  # noqa: BLE001
        errors.append(repr(e))


def wait_idle(server, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = server.metrics()
        if m["myriad_num_requests_running"] == 0 and m["myriad_kv_blocks_used"] == 0 and \
                m["myriad_num_requests_waiting"] == 0:
            return m
        time.sleep(0.2)
    raise AssertionError(f"engine not idle: {server.metrics()}")


@pytest.fixture(scope="module")
def small_cache():
    """A KV cache the first rounds fill (the CPU's cache takes its pages as blocks are first
    used, and the prefix cache keeps old blocks while fresh ones remain): later rounds reuse
    them, so a leak shows in RSS and a filling cache does not."""
    s = Server("--max-model-len", "4096", "--kv-cache-memory", "12MiB")
    yield s
    s.stop()


def test_load_64_streams_3_rounds_with_disconnects(small_cache):
    server = small_cache
    rng = random.Random(5)
    rss = []
    health_codes = []
    for _ in range(3):
        errors = []
        stop = threading.Event()

        def probe():
            while not stop.is_set():
                health_codes.append(requests.get(server.url + "/health", timeout=10).status_code)
                time.sleep(0.05)
        prober = threading.Thread(target=probe)
        prober.start()
        threads = [threading.Thread(target=one_stream,
                                    args=(server.url, random.Random(rng.random()), errors))
                   for _ in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        prober.join()
        assert errors == []
        m = wait_idle(server)
        assert m["myriad_kv_blocks_used"] == 0
        time.sleep(0.5)  # the engine returns freed memory to the system as it goes idle
        rss.append(server.rss_kb())
    print(f"RSS by round (kB): {rss}")
    assert health_codes and all(c == 200 for c in health_codes)
    assert abs(rss[2] - rss[1]) <= 0.10 * rss[1], f"RSS by round (kB): {rss}"


def test_non_streaming_client_that_leaves_frees_its_sequence(server):
    before = server.metrics()
    body = {"model": MODEL, "messages": [{"role": "user", "content": "write a lot"}],
            "max_tokens": 4000, "ignore_eos": True}
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(server.url + "/v1/chat/completions", json=body, timeout=0.5)
    m = wait_idle(server, timeout=60)
    steps = m["myriad_engine_steps_total"] - before["myriad_engine_steps_total"]
    assert steps < 2000, f"the sequence ran {steps} steps after its client left"
    key = 'myriad_requests_total{endpoint="/v1/chat/completions",status="499"}'
    assert m.get(key, 0) == before.get(key, 0) + 1


def test_fp8_kv_cache_serves():
    s = Server("--kv-cache-dtype", "fp8")
    try:
        r = s.client().completions.create(model=MODEL, prompt="The cache", max_tokens=8,
                                          temperature=0, extra_body={"ignore_eos": True})
        assert r.usage.completion_tokens == 8 and r.choices[0].finish_reason == "length"
    finally:
        s.stop()
    bad = subprocess.run([BINARY, "serve", "--kv-cache-dtype", "int4"], capture_output=True,
                         text=True, timeout=30)
    assert bad.returncode == 2 and "--kv-cache-dtype int4" in bad.stderr


def test_sigterm_drains_and_exits_0():
    s = Server()
    try:
        c = s.client()
        stream = c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                           max_tokens=600, stream=True,
                                           extra_body={"ignore_eos": True})
        first = next(iter(stream))
        assert first.choices[0].delta.role == "assistant"
        s.proc.send_signal(signal.SIGTERM)
        # Draining: /health answers 503 while the running request finishes. Polled, not after a
        # fixed sleep: on a GPU the 600 tokens take about a tenth of a second, and the server
        # had drained and exited before a 0.2 s sleep ended.
        status, deadline = None, time.time() + 5
        while status != 503 and time.time() < deadline:
            status = requests.get(s.url + "/health").status_code
            time.sleep(0.002)
        assert status == 503
        content, _, _, finish, _ = collect_stream(stream, expect_role=False)
        assert finish == "length", "the running request finished"
        assert s.proc.wait(120) == 0
    finally:
        s.stop()


def sigterm_during_a_long_stream(s):
    """SIGTERM while a stream that would outlast --drain-timeout 1 runs: the server exits 0
    within the drain timeout and the hard stop. Returns the seconds it took."""
    stream = s.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "x"}], max_tokens=4000,
        stream=True, extra_body={"ignore_eos": True})
    next(iter(stream))
    start = time.time()
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(30) == 0, s.output()
    took = time.time() - start
    assert took < 1 + 10, "exited within the drain timeout and the hard stop"
    return took


def test_sigterm_at_tp8_exits_within_the_drain_timeout():
    """Eight ranks (whole experts per rank): a request that would run far past --drain-timeout is
    cancelled when it ends, and the process exits 0 soon after, its ranks stopped with it."""
    s = Server("--tp", "8", "--expert-parallel", "--device", "cpu", "--drain-timeout", "1")
    try:
        sigterm_during_a_long_stream(s)
        assert re.search(r"\n  layout +TP=8\+EP ", s.output()), s.output()  # the run plan's
    finally:
        s.stop()


def _has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not _has_gpu(), reason="needs a GPU (run by tools/gpu_run.sh)")
def test_tp8_on_one_gpu_answers_as_tp1_and_exits_on_sigterm():
    """Eight ranks on one GPU (--devices 0 x 8, CUDA graphs with their collectives inside): the
    greedy answer is the one GPU's, and SIGTERM during a long stream exits within the drain
    timeout."""
    prompt = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 12, "temperature": 0}
    one = Server("--device", "cuda")
    try:
        want = one.post("/v1/completions", prompt)["choices"][0]["text"]
    finally:
        one.stop()
    s = Server("--tp", "8", "--device", "cuda", "--devices", ",".join(["0"] * 8),
               "--drain-timeout", "1")
    try:
        got = [s.post("/v1/completions", prompt)["choices"][0]["text"] for _ in range(3)]
        assert got == [want] * 3, (want, got)  # the later two replay the decode graphs
        print(f"TP 8 on one GPU: exited {sigterm_during_a_long_stream(s):.1f} s after SIGTERM")
        assert re.search(r"\n  layout +TP=8 ", s.output()), s.output()  # the run plan's
        assert "collectives: kernels over GPU memory" in s.output(), s.output()[-2000:]
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


def test_metrics_time_the_decode_steps(server):
    """A lone request of 16 tokens: its prefill step samples the first token, and each of the
    other 15 comes from a step in which it is the only sequence and decodes; /metrics counts
    those steps, their sequences and their seconds (within the request's own time)."""
    before = wait_idle(server)
    start = time.time()
    r = server.client().completions.create(model=MODEL, prompt=f"time the steps {time.time()}",
                                           max_tokens=16, temperature=0,
                                           extra_body={"ignore_eos": True})
    wall = time.time() - start
    assert r.usage.completion_tokens == 16
    m = wait_idle(server)
    steps = m["myriad_engine_decode_steps_total"] - before["myriad_engine_decode_steps_total"]
    seqs = (m["myriad_engine_decode_step_sequences_total"]
            - before["myriad_engine_decode_step_sequences_total"])
    secs = (m["myriad_engine_decode_step_seconds_total"]
            - before["myriad_engine_decode_step_seconds_total"])
    assert steps == 15, m
    assert seqs == steps
    assert 0 < secs < wall
