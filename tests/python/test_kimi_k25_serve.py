#!/usr/bin/env python3
"""`myriad serve` with Kimi-K2.5's chat template (--chat-template tests/data/chat_templates/
kimi-k2.5.jinja) on the shipped model: the prompt the server renders for a chat request with
tools is the one of ../shared/docs/kimi-k25-tools.md §3.4 (P1-P4, extracted into
tests/data/kimi_k25_tools/examples.json), TypeScript-style tool declarations included, as
/tokenize followed by /detokenize shows it; and the kimi_k2 output parsers read the model's tool
calls with the official `openai` client (forced output through --enable-test-output).

Run: build/venv/bin/python tests/python/test_kimi_k25_serve.py   (MYRIAD_BINARY = myriad)
"""

import json
import os
import sys

import pytest
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_serve import REPO, Server  # noqa: E402

TEMPLATE = os.path.join(REPO, "tests", "data", "chat_templates", "kimi-k2.5.jinja")
with open(os.path.join(REPO, "tests", "data", "kimi_k25_tools", "examples.json"),
          encoding="utf-8") as f:
    PROMPTS = json.load(f)["prompts"]


@pytest.fixture(scope="module")
def server():
    s = Server("--enable-test-output", "--chat-template", TEMPLATE)
    yield s
    s.stop()


def body(p):
    out = {"messages": json.loads(p["messages"]), "tools": json.loads(p["tools"])}
    if p["thinking"] is not None:
        out["chat_template_kwargs"] = {"thinking": p["thinking"]}
    return out


@pytest.mark.parametrize("p", PROMPTS, ids=[p["id"] for p in PROMPTS])
def test_rendered_prompt_is_the_models(server, p):
    tokens = requests.post(server.url + "/tokenize", json=body(p)).json()["tokens"]
    prompt = requests.post(server.url + "/detokenize", json={"tokens": tokens}).json()["prompt"]
    assert prompt == p["expected"]


def test_tool_calls_parse_with_kimi_k2(server):
    p = PROMPTS[0]
    text = ("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
            '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
            "<|tool_calls_section_end|>")
    r = server.client().chat.completions.create(
        model="myriad-tiny", max_tokens=200, extra_body={"test_output": text}, **body(p))
    calls = r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == \
        [("functions.get_weather:0", "get_weather", {"city": "Paris"})]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
