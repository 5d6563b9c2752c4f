#!/usr/bin/env python3
"""`myriad serve`'s Anthropic Messages API (/v1/messages, /v1/messages/count_tokens) with the
official `anthropic` Python SDK, on the shipped model.

As in test_serve.py, `--enable-test-output` makes the output known (`test_output` is emitted as
forced tokens), so thinking, tool calls and stop sequences go through the real engine, parsers
and SSE. Checks: text, thinking and tool_use blocks streaming and not (the SDK's accumulated
stream equals the non-streaming message), the event sequence, a multi-turn tool loop rendered
like the same conversation in OpenAI's shape, stop_reason for each end, usage against
count_tokens, a Claude-Code-shaped session whose second turn hits the prefix cache, tool_choice,
x-api-key auth and errors in Anthropic's shape.

Run: build/venv/bin/python tests/python/test_serve_anthropic.py   (MYRIAD_BINARY = the executable)
"""

import copy
import json
import os
import sys

import anthropic
import pytest
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_serve import MODEL, Server  # noqa: E402

WEATHER = {"name": "get_weather", "description": "current weather of a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
CALL = ("Let me check. <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>"
        "<|tool_calls_section_end|>")


@pytest.fixture(scope="module")
def server():
    s = Server("--enable-test-output")
    yield s
    s.stop()


def client(server, **kw):
    kw.setdefault("api_key", "none")
    return anthropic.Anthropic(base_url=server.url, max_retries=0, **kw)


def create(server, text=None, stream=False, **kw):
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    kw.setdefault("max_tokens", 200)
    extra = dict(kw.pop("extra_body", {}))
    if text is not None:
        extra["test_output"] = text
    return client(server).messages.create(model=MODEL, stream=stream, extra_body=extra, **kw)


def streamed(server, text, **kw):
    """The SDK's accumulated message of a streamed request, and the event types in order."""
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    kw.setdefault("max_tokens", 200)
    extra = {"test_output": text} if text is not None else {}
    types = []
    with client(server).messages.stream(model=MODEL, extra_body=extra, **kw) as s:
        for event in s:
            types.append(event.type)
        return s.get_final_message(), types


def blocks(message):
    return [b.model_dump(exclude_none=True) for b in message.content]


def count(server, **kw):
    return client(server).messages.count_tokens(model=MODEL, **kw).input_tokens


def test_text_streaming_and_not(server):
    m = create(server, "Hello there.")
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg")
    assert blocks(m) == [{"type": "text", "text": "Hello there."}]
    assert m.stop_reason == "end_turn" and m.stop_sequence is None
    prompt = count(server, messages=[{"role": "user", "content": "hi"}])
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == prompt
    assert m.usage.output_tokens > 0
    s, types = streamed(server, "Hello there.")
    assert blocks(s) == blocks(m) and s.stop_reason == "end_turn"
    raw = [e for e in types if not e.startswith("text") and e != "ping"]
    assert raw[0] == "message_start" and raw[-2:] == ["message_delta", "message_stop"]
    assert raw[1:-2] == ["content_block_start", "content_block_delta", "content_block_stop"] or \
        raw[1] == "content_block_start"


def test_raw_event_sequence(server):
    """The wire: `event:` lines naming each payload's type, no [DONE]."""
    r = requests.post(server.url + "/v1/messages", stream=True, timeout=120, json={
        "model": MODEL, "max_tokens": 50, "stream": True, "test_output": "<think>Hm.</think>Yes.",
        "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = []
    name = None
    for line in r.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: "):])
            assert data["type"] == name
            events.append(data)
    seq = [e["type"] for e in events]
    assert seq[0] == "message_start" and seq[1] == "ping"
    assert seq[-2:] == ["message_delta", "message_stop"]
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert starts == ["thinking", "text"]
    deltas = [e["delta"]["type"] for e in events if e["type"] == "content_block_delta"]
    assert deltas[0] == "thinking_delta" and "signature_delta" in deltas
    assert deltas[-1] == "text_delta"
    # One block open at a time: each start is closed before the next.
    open_ = None
    for e in events:
        if e["type"] == "content_block_start":
            assert open_ is None
            open_ = e["index"]
        elif e["type"] == "content_block_stop":
            assert open_ == e["index"]
            open_ = None
    assert events[0]["message"]["content"] == [] and events[0]["message"]["stop_reason"] is None
    assert events[-2]["delta"]["stop_reason"] == "end_turn"


def test_thinking_then_text(server):
    m = create(server, "<think>The user greets me.</think>Hello!",
               thinking={"type": "enabled", "budget_tokens": 1024})
    b = blocks(m)
    assert [x["type"] for x in b] == ["thinking", "text"]
    assert b[0]["thinking"] == "The user greets me." and isinstance(b[0]["signature"], str)
    assert b[1]["text"] == "Hello!"
    s, _ = streamed(server, "<think>The user greets me.</think>Hello!")
    assert blocks(s) == b


def test_tool_use_streaming_and_not(server):
    m = create(server, CALL, tools=[WEATHER])
    b = blocks(m)
    assert b[0] == {"type": "text", "text": "Let me check. "}
    assert b[1]["type"] == "tool_use" and b[1]["name"] == "get_weather"
    assert b[1]["input"] == {"city": "Paris"} and b[1]["id"]
    assert m.stop_reason == "tool_use"
    s, types = streamed(server, CALL, tools=[WEATHER])
    assert blocks(s) == b and s.stop_reason == "tool_use"
    assert "input_json" in types


def test_multi_turn_tool_loop(server):
    """The reply's blocks go back verbatim with a tool_result; the prompt is the one the same
    conversation renders to in OpenAI's shape, and the loop goes on to an answer."""
    first = create(server, CALL, tools=[WEATHER])
    call = [b for b in first.content if b.type == "tool_use"][0]
    messages = [{"role": "user", "content": "weather in Paris?"},
                {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                  for b in first.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                              "content": [{"type": "text", "text": "sunny"}]}]}]
    second = create(server, "It is sunny in Paris.", messages=messages, tools=[WEATHER])
    assert blocks(second) == [{"type": "text", "text": "It is sunny in Paris."}]
    assert second.stop_reason == "end_turn"

    openai_shape = {"messages": [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "Let me check. ", "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps(call.input)}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"}],
        "tools": [{"type": "function", "function": {
            "name": WEATHER["name"], "description": WEATHER["description"],
            "parameters": WEATHER["input_schema"]}}]}
    want = requests.post(server.url + "/tokenize", json=openai_shape).json()
    assert count(server, messages=messages, tools=[WEATHER]) == want["count"]
    rendered = requests.post(server.url + "/detokenize",
                             json={"tokens": want["tokens"]}).json()["prompt"]
    assert "## Return of functions.get_weather:0" in rendered and "sunny" in rendered
    assert second.usage.input_tokens + second.usage.cache_read_input_tokens == want["count"]


def test_system_blocks_and_thinking_history(server):
    sys_blocks = [{"type": "text", "text": "You are terse."},
                  {"type": "text", "text": "Answer in English.",
                   "cache_control": {"type": "ephemeral"}}]
    n_blocks = count(server, system=sys_blocks, messages=[{"role": "user", "content": "hi"}])
    n_string = count(server, system="You are terse.\n\nAnswer in English.",
                     messages=[{"role": "user", "content": "hi"}])
    assert n_blocks == n_string
    # An earlier turn's thinking is given back as that turn's reasoning: the template keeps it
    # in the turns after the last plain answer.
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": [
                   {"type": "thinking", "thinking": "They greet me.", "signature": "x"},
                   {"type": "tool_use", "id": "functions.get_weather:0", "name": "get_weather",
                    "input": {"city": "Oslo"}}]},
               {"role": "user", "content": [{"type": "tool_result",
                                             "tool_use_id": "functions.get_weather:0",
                                             "content": "rain", "is_error": False}]}]
    with_thinking = count(server, messages=history, tools=[WEATHER])
    plain = copy.deepcopy(history)
    plain[1]["content"] = plain[1]["content"][1:]
    assert with_thinking > count(server, messages=plain, tools=[WEATHER])


def test_stop_reasons(server):
    m = create(server, "a STOP b", stop_sequences=["STOP"])
    assert blocks(m) == [{"type": "text", "text": "a "}]
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == "STOP"
    s, _ = streamed(server, "a STOP b", stop_sequences=["STOP"])
    assert s.stop_reason == "stop_sequence" and s.stop_sequence == "STOP"
    m = create(server, None, max_tokens=3, extra_body={"ignore_eos": True})
    assert m.stop_reason == "max_tokens" and m.usage.output_tokens == 3


def test_tool_choice(server):
    rest = '{"city": "Rome"}<|tool_call_end|><|tool_calls_section_end|>'
    m = create(server, rest, tools=[WEATHER], tool_choice={"type": "tool", "name": "get_weather"})
    b = blocks(m)
    assert [x["type"] for x in b] == ["tool_use"] and b[0]["input"] == {"city": "Rome"}
    assert m.stop_reason == "tool_use"
    # none: the call the model writes is text, not a tool_use.
    m = create(server, CALL, tools=[WEATHER], tool_choice={"type": "none"})
    assert all(x["type"] == "text" for x in blocks(m))
    with pytest.raises(anthropic.BadRequestError) as e:
        create(server, "x", tools=[WEATHER], tool_choice={"type": "tool", "name": "nope"})
    assert "nope" in e.value.body["error"]["message"]


def test_empty_reply_has_one_block(server):
    # Only an empty reasoning: no block has text, and the reply still has one block.
    m = create(server, "<think></think>")
    assert blocks(m) == [{"type": "text", "text": ""}]
    s, _ = streamed(server, "<think></think>")
    assert blocks(s) == [{"type": "text", "text": ""}]


def test_claude_code_session_hits_the_prefix_cache(server):
    """A Claude-Code-shaped session: a billing line that changes every request, a long system
    prompt and a tool list sent again each turn, history growing by a call and its result. The
    second turn reads the shared prefix from the cache."""
    tools = [dict(WEATHER)] + [
        {"name": f"tool_{i}", "description": f"does thing number {i} " * 8,
         "input_schema": {"type": "object", "properties": {"arg": {"type": "string"}}}}
        for i in range(12)]
    system_text = "You are an interactive CLI coding agent. " * 60

    def system(cch):
        return [{"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.40; "
                                         f"cc_entrypoint=cli; cch={cch};"},
                {"type": "text", "text": system_text, "cache_control": {"type": "ephemeral"}}]

    turn1 = [{"role": "user", "content": "list the files"}]
    first = create(server, CALL, system=system("0a1b2"), tools=tools, messages=turn1)
    call = [b for b in first.content if b.type == "tool_use"][0]
    turn2 = turn1 + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                      "content": "README.md\nsrc/"}]}]
    second = create(server, "Two entries.", system=system("ffe93"), tools=tools, messages=turn2)
    prompt1 = first.usage.input_tokens + first.usage.cache_read_input_tokens
    assert prompt1 > 500
    # All of turn 1's prompt but its last partial block comes from the cache.
    assert second.usage.cache_read_input_tokens >= prompt1 - 64, (first.usage, second.usage)
    assert second.usage.input_tokens > 0
    assert count(server, system=system("ffe93"), tools=tools, messages=turn2) == \
        second.usage.input_tokens + second.usage.cache_read_input_tokens


def test_errors_in_anthropic_shape(server):
    with pytest.raises(anthropic.BadRequestError) as e:
        create(server, "x", messages=[{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}]}])
    body = e.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "messages[0].content[1]" in body["error"]["message"]
    assert "image" in body["error"]["message"]
    with pytest.raises(anthropic.NotFoundError) as e:
        client(server).messages.create(model="claude-nope", max_tokens=5,
                                       messages=[{"role": "user", "content": "x"}])
    assert e.value.body["error"]["type"] == "not_found_error"
    r = requests.post(server.url + "/v1/messages", json={
        "model": MODEL, "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 400 and "max_tokens" in r.json()["error"]["message"]
    r = requests.post(server.url + "/v1/messages", data="{oops")
    assert r.status_code == 400 and r.json()["type"] == "error"


def test_api_key_header():
    s = Server("--api-key", "sekret", "--enable-test-output")
    try:
        m = client(s, api_key="sekret").messages.create(
            model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "hi"}],
            extra_body={"test_output": "ok"}, extra_headers={"anthropic-beta": "x,y"})
        assert blocks(m) == [{"type": "text", "text": "ok"}]
        m = anthropic.Anthropic(base_url=s.url, auth_token="sekret", max_retries=0).messages.create(
            model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "hi"}],
            extra_body={"test_output": "ok"})
        assert blocks(m) == [{"type": "text", "text": "ok"}]
        with pytest.raises(anthropic.AuthenticationError) as e:
            client(s, api_key="wrong").messages.create(
                model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        assert e.value.body["error"]["type"] == "authentication_error"
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
