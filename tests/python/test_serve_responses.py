#!/usr/bin/env python3
"""`myriad serve`'s OpenAI Responses API (/v1/responses) with the official `openai` client's
`responses.create`, on the shipped model.

As in test_serve.py, `--enable-test-output` makes the output known. Checks: text, reasoning and
function-call items streaming and not (the streamed items and the final response equal the
non-streaming response), the event sequence and its sequence_number, a tool loop both stateless
(the items sent back) and through previous_response_id, store: false and the LRU's eviction
(404), Codex's custom tools, skipped tool types, max_output_tokens (incomplete), and the
openai-agents SDK on its default path when it is installed.

Run: build/venv/bin/python tests/python/test_serve_responses.py   (MYRIAD_BINARY = the executable)
"""

import os
import sys

import openai
import pytest
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_serve import MODEL, Server  # noqa: E402

WEATHER = {"type": "function", "name": "get_weather", "description": "current weather of a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
CALL = ("Let me check. <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>"
        "<|tool_calls_section_end|>")


@pytest.fixture(scope="module")
def server():
    s = Server("--enable-test-output", "--responses-store", "3")
    yield s
    s.stop()


def create(server, text=None, **kw):
    kw.setdefault("input", "hi")
    kw.setdefault("max_output_tokens", 200)
    extra = dict(kw.pop("extra_body", {}))
    if text is not None:
        extra["test_output"] = text
    return server.client().responses.create(model=MODEL, extra_body=extra, **kw)


def items(r):
    """Output items without their random ids."""
    out = []
    for it in r.output:
        d = it.model_dump(exclude_none=True)
        d.pop("id", None)
        out.append(d)
    return out


def streamed(server, text, **kw):
    events = list(create(server, text, stream=True, **kw))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created" and events[1].type == "response.in_progress"
    assert events[-1].type in ("response.completed", "response.incomplete")
    done = [e.item for e in events if e.type == "response.output_item.done"]
    final = events[-1].response
    assert [i.model_dump() for i in done] == [i.model_dump() for i in final.output]
    return final, [e.type for e in events]


def test_text_streaming_and_not(server):
    r = create(server, "Hello there.", instructions="Be brief.")
    assert r.object == "response" and r.status == "completed" and r.id.startswith("resp")
    assert r.output_text == "Hello there."
    assert items(r) == [{"type": "message", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": "Hello there.",
                                      "annotations": []}]}]
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    s, types = streamed(server, "Hello there.", instructions="Be brief.")
    assert items(s) == items(r)
    assert types[2:5] == ["response.output_item.added", "response.content_part.added",
                          "response.output_text.delta"]
    assert types[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]


def test_reasoning_item(server):
    r = create(server, "<think>The user greets me.</think>Hello!", reasoning={"effort": "high"})
    got = items(r)
    assert got[0]["type"] == "reasoning"
    assert got[0]["content"] == [{"type": "reasoning_text", "text": "The user greets me."}]
    assert r.output_text == "Hello!"
    s, types = streamed(server, "<think>The user greets me.</think>Hello!")
    assert items(s) == got and "response.reasoning_text.delta" in types


def test_function_call_and_tool_loops(server):
    r = create(server, CALL, tools=[WEATHER])
    calls = [i for i in r.output if i.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert calls[0].arguments == '{"city": "Paris"}' and calls[0].call_id
    s, types = streamed(server, CALL, tools=[WEATHER])
    assert items(s) == items(r) and "response.function_call_arguments.delta" in types

    # Stateless: the output items go back with the call's output.
    history = [{"role": "user", "content": "weather in Paris?"}] + \
        [i.model_dump(exclude_none=True) for i in r.output] + \
        [{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny"}]
    second = create(server, "It is sunny.", input=history, tools=[WEATHER], store=False)
    assert second.output_text == "It is sunny."
    # The same loop through previous_response_id renders the same prompt.
    first = create(server, CALL, input="weather in Paris?", tools=[WEATHER])
    chained = create(server, "It is sunny.", previous_response_id=first.id, tools=[WEATHER],
                     input=[{"type": "function_call_output", "call_id": calls[0].call_id,
                             "output": "sunny"}])
    assert chained.output_text == "It is sunny."
    assert chained.usage.input_tokens == second.usage.input_tokens
    assert chained.usage.input_tokens_details.cached_tokens > 0


def test_store_false_and_eviction_are_404(server):
    r = create(server, "ok", store=False)
    with pytest.raises(openai.NotFoundError) as e:
        create(server, "ok", previous_response_id=r.id)
    assert "previous_response_id" == e.value.body["param"]
    kept = create(server, "ok")
    create(server, "ok", previous_response_id=kept.id)
    for _ in range(4):  # the store holds 3
        create(server, "ok")
    with pytest.raises(openai.NotFoundError):
        create(server, "ok", previous_response_id=kept.id)


def test_custom_tool_and_skipped_tools(server):
    patch = "*** Begin Patch\n*** End Patch"
    text = ("<|tool_calls_section_begin|><|tool_call_begin|>functions.apply_patch:0"
            "<|tool_call_argument_begin|>{\"input\": \"*** Begin Patch\\n*** End Patch\"}"
            "<|tool_call_end|><|tool_calls_section_end|>")
    tools = [{"type": "custom", "name": "apply_patch", "description": "edit files"},
             {"type": "web_search"}]
    r = create(server, text, tools=tools)
    got = items(r)
    assert got == [{"type": "custom_tool_call", "status": "completed",
                    "call_id": "functions.apply_patch:0", "name": "apply_patch", "input": patch}]
    s, types = streamed(server, text, tools=tools)
    assert items(s) == got and "response.custom_tool_call_input.done" in types
    # The custom tool is declared to the model as a function taking {input: string}.
    back = create(server, "done", tools=tools, input=[
        {"role": "user", "content": "fix it"}, r.output[0].model_dump(exclude_none=True),
        {"type": "custom_tool_call_output", "call_id": "functions.apply_patch:0",
         "output": "applied"}])
    assert back.output_text == "done"


def test_max_output_tokens_is_incomplete(server):
    r = create(server, None, max_output_tokens=3, extra_body={"ignore_eos": True})
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 3


def test_errors(server):
    with pytest.raises(openai.BadRequestError) as e:
        create(server, "x", input=[{"role": "user", "content": [
            {"type": "input_image", "image_url": "https://example.com/a.png"}]}])
    assert e.value.body["param"] == "input[0].content[0].type"
    with pytest.raises(openai.NotFoundError):
        server.client().responses.create(model="nope", input="x")
    r = requests.post(server.url + "/v1/responses", json={"model": MODEL})
    assert r.status_code == 400 and "input" in r.json()["error"]["message"]


def test_openai_agents_sdk_default_path(server):
    agents = pytest.importorskip("agents")
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool  # noqa: PLC0415

    @function_tool
    def get_weather(city: str) -> str:
        """current weather of a city"""
        return f"sunny in {city}"

    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
    agents.set_tracing_disabled(True)
    model = OpenAIResponsesModel(model=MODEL, openai_client=client)
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=[get_weather],
                  model_settings=agents.ModelSettings(
                      max_tokens=100, extra_body={"test_output": "Sunny."}))
    result = Runner.run_sync(agent, "weather in Paris?")
    assert result.final_output == "Sunny."


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
