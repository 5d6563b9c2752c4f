#!/usr/bin/env python3
"""`myriad serve` end to end for the DeepSeek-V3 family, on a throwaway model: random BF16 weights
in a tiny DeepSeek-V3 shape (written here, never committed) with the real DeepSeek-V3 tokenizer
and chat template (the repository's fixture). Checks, through the official `openai` client,
streaming and not: the deepseek_v3 and deepseek_v31 tool-call parsers on reference.md §5.2/§5.5
outputs, the tool-aware DeepSeek template (tools declared, earlier calls and results rendered),
tool_choice forcing, and R1-style reasoning when the prompt opens <think> (DeepSeek-V3.1's
template with thinking on). The output text comes from the server's test facility
(--enable-test-output: forced tokens through the real engine, detokenizer and parsers).

Run: build/venv/bin/python tests/python/test_serve_deepseek.py   (MYRIAD_BINARY = the executable)
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import requests

from test_serve import BINARY, REPO, Server, collect_stream

TOKENIZER = os.path.join(os.path.dirname(BINARY), "tokenizers", "deepseek_v3")
V31_TEMPLATE = os.path.join(REPO, "tests", "data", "chat_templates", "deepseek-v3.1.jinja")
NAME = "deepseek-tiny"
BEGIN, END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
WEATHER = {"type": "function", "function": {
    "name": "get_current_weather", "description": "weather of a place",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                   "required": ["location"]}}}

CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "vocab_size": 129280, "hidden_size": 32, "intermediate_size": 64,
    "moe_intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
    "num_key_value_heads": 2, "q_lora_rank": 16, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 8, "v_head_dim": 8, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "n_shared_experts": 1, "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 1,
    "topk_group": 1, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
    "norm_topk_prob": True, "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0, "rope_scaling": None, "max_position_embeddings": 4096,
    "num_nextn_predict_layers": 0, "tie_word_embeddings": False, "bos_token_id": 0,
    "eos_token_id": 1,
}


def tensor_shapes(c):
    h, heads = c["hidden_size"], c["num_attention_heads"]
    qk = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
    yield "model.embed_tokens.weight", [c["vocab_size"], h]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", [h]
        yield p + "post_attention_layernorm.weight", [h]
        yield p + "self_attn.q_a_proj.weight", [c["q_lora_rank"], h]
        yield p + "self_attn.q_a_layernorm.weight", [c["q_lora_rank"]]
        yield p + "self_attn.q_b_proj.weight", [heads * qk, c["q_lora_rank"]]
        yield p + "self_attn.kv_a_proj_with_mqa.weight", [c["kv_lora_rank"] + c["qk_rope_head_dim"], h]
        yield p + "self_attn.kv_a_layernorm.weight", [c["kv_lora_rank"]]
        yield p + "self_attn.kv_b_proj.weight", [
            heads * (c["qk_nope_head_dim"] + c["v_head_dim"]), c["kv_lora_rank"]]
        yield p + "self_attn.o_proj.weight", [h, heads * c["v_head_dim"]]
        if l < c["first_k_dense_replace"]:
            mlps = [("mlp.", c["intermediate_size"])]
        else:
            yield p + "mlp.gate.weight", [c["n_routed_experts"], h]
            yield p + "mlp.gate.e_score_correction_bias", [c["n_routed_experts"]]
            mlps = [(f"mlp.experts.{e}.", c["moe_intermediate_size"])
                    for e in range(c["n_routed_experts"])]
            mlps.append(("mlp.shared_experts.", c["moe_intermediate_size"] * c["n_shared_experts"]))
        for prefix, inter in mlps:
            yield p + prefix + "gate_proj.weight", [inter, h]
            yield p + prefix + "up_proj.weight", [inter, h]
            yield p + prefix + "down_proj.weight", [h, inter]
    yield "model.norm.weight", [h]
    yield "lm_head.weight", [c["vocab_size"], h]


def write_safetensors(path, tensors):
    """tensors: name -> (dtype name, shape, raw bytes)."""
    header, offset = {}, 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for _, _, raw in tensors.values():
            f.write(raw)


def write_model(folder):
    rng = np.random.default_rng(20261130)
    tensors = {}
    for name, shape in tensor_shapes(CONFIG):
        if name.endswith("e_score_correction_bias"):
            tensors[name] = ("F32", shape, rng.uniform(0, 0.1, shape).astype("<f4").tobytes())
            continue
        if name.endswith("norm.weight"):
            x = np.ones(shape, np.float32)
        else:
            x = rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[-1])
        bf16 = (x.astype("<f4").view("<u4") >> 16).astype("<u2")  # truncation to BF16
        tensors[name] = ("BF16", shape, bf16.tobytes())
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(CONFIG, f)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER, name), folder)


@pytest.fixture(scope="module")
def model_dir():
    d = tempfile.mkdtemp(prefix="myriad-deepseek-")
    write_model(d)
    yield d
    shutil.rmtree(d)


@pytest.fixture(scope="module")
def v3(model_dir):
    s = Server(model_dir, "--served-model-name", NAME, "--enable-test-output")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def v31(model_dir):
    s = Server(model_dir, "--served-model-name", NAME, "--enable-test-output", "--chat-template",
               V31_TEMPLATE, "--tool-call-parser", "deepseek_v31")
    yield s
    s.stop()


def chat(server, text, stream=False, **kw):
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    kw.setdefault("max_tokens", 200)
    extra = dict(kw.pop("extra_body", {}))
    if text is not None:
        extra["test_output"] = text
    return server.client().chat.completions.create(model=NAME, stream=stream, extra_body=extra,
                                                   **kw)


def both_ways(server, text, **kw):
    """(content, reasoning, [(name, arguments)], finish) non-streaming, checked equal streaming."""
    r = chat(server, text, **kw)
    msg = r.choices[0].message
    calls = [(t.function.name, t.function.arguments) for t in msg.tool_calls or []]
    for t in msg.tool_calls or []:
        assert t.id.startswith("chatcmpl-tool-") and t.type == "function"
    reasoning = (msg.model_extra or {}).get("reasoning")
    s_content, s_reasoning, s_calls, s_finish, _ = collect_stream(chat(server, text, stream=True,
                                                                       **kw))
    assert s_content == (msg.content or "")
    assert s_reasoning == (reasoning or "")
    assert [(c["name"], c["arguments"]) for _, c in sorted(s_calls.items())] == calls
    assert s_finish == r.choices[0].finish_reason
    return msg.content, reasoning, calls, r.choices[0].finish_reason


V3_CALL = (f'{BEGIN}{CALL}function{SEP}get_current_weather\n```json\n{{"location": "Beijing"}}\n'
           f'```{CALL_END}\n{CALL}function{SEP}get_current_weather\n```json\n'
           f'{{"location": "Beijing"}}\n```{CALL_END}{END}')


def test_v3_tool_calls_the_parser_docstring_example(v3):
    content, _, calls, finish = both_ways(v3, "Let me check. " + V3_CALL, tools=[WEATHER])
    assert content == "Let me check. "
    assert calls == [("get_current_weather", '{"location": "Beijing"}')] * 2
    assert finish == "tool_calls"


def test_v3_call_cut_short_at_max_tokens_is_kept(v3):
    text = f'{BEGIN}{CALL}function{SEP}get_current_weather\n```json\n{{"location": "Oslo"}}'
    content, _, calls, _ = both_ways(v3, text, tools=[WEATHER])
    assert content is None and calls == [("get_current_weather", '{"location": "Oslo"}')]


@pytest.mark.parametrize("text,content,calls", [
    ("normal text" + BEGIN + CALL + 'foo' + SEP + '{"x":1}' + CALL_END + END,
     "normal text", [("foo", '{"x":1}')]),
    ("some prefix text" + BEGIN + CALL + "foo" + SEP + '{"x":1}' + CALL_END + CALL + "bar" + SEP +
     '{"y":2}' + CALL_END + END + " some suffix text",
     "some prefix text", [("foo", '{"x":1}'), ("bar", '{"y":2}')]),
])
def test_v31_tool_calls_reference_examples(v31, text, content, calls):
    got_content, _, got_calls, finish = both_ways(v31, text, tools=[WEATHER])
    assert (got_content, got_calls, finish) == (content, calls, "tool_calls")


def detokenized_prompt(server, **body):
    ids = requests.post(server.url + "/tokenize", json={"model": NAME, **body}).json()["tokens"]
    return requests.post(server.url + "/detokenize", json={"model": NAME, "tokens": ids}).json()[
        "prompt"]


def test_rendered_prompt_holds_one_bos(v3, model_dir):
    """DeepSeek's template writes BOS itself, so the rendered prompt is encoded without special
    tokens: the ids equal transformers' apply_chat_template(tokenize=True), with one BOS, through
    /tokenize, the chat completion's usage, `chat-template` + `tokenize` and `generate --chat`."""
    from transformers import AutoTokenizer  # noqa: PLC0415 - heavy; this test only
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "weather in Paris?"}]
    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    want = list(tok.apply_chat_template(messages, add_generation_prompt=True,
                                        tokenize=True)["input_ids"])
    bos = tok.bos_token_id
    assert want.count(bos) == 1 and want[0] == bos

    got = requests.post(v3.url + "/tokenize", json={"model": NAME, "messages": messages}).json()
    assert got["tokens"] == want
    r = chat(v3, "ok", messages=messages, max_tokens=4)
    assert r.usage.prompt_tokens == len(want)

    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump({"messages": messages}, f)
        f.flush()
        text = subprocess.run([BINARY, "chat-template", model_dir, "--request", f.name],
                              capture_output=True, text=True, check=True).stdout
    ids = json.loads(subprocess.run([BINARY, "tokenize", model_dir, text], capture_output=True,
                                    text=True, check=True).stdout)
    assert ids == want

    p = subprocess.run([BINARY, "generate", model_dir, "--chat", messages[1]["content"],
                        "--max-tokens", "1", "--ids"], capture_output=True, text=True, check=True)
    one_turn = list(tok.apply_chat_template(messages[1:], add_generation_prompt=True,
                                            tokenize=True)["input_ids"])
    assert f" {len(one_turn)} prompt tokens each" in p.stderr, (len(one_turn), p.stderr)


def test_tool_aware_template_declares_tools_and_renders_history(v3):
    messages = [{"role": "user", "content": "weather in Paris?"}]
    plain = detokenized_prompt(v3, messages=messages)
    with_tools = detokenized_prompt(v3, messages=messages, tools=[WEATHER])
    assert "get_current_weather" not in plain, "DeepSeek's own template shows no tools"
    assert '"name": "get_current_weather"' in with_tools and "## Tools" in with_tools
    history = messages + [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_current_weather", "arguments": '{"location": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}]
    rendered = detokenized_prompt(v3, messages=history, tools=[WEATHER])
    assert (f"{CALL}function{SEP}get_current_weather\n```json\n{{\"location\": \"Paris\"}}\n```"
            f"{CALL_END}") in rendered
    assert "sunny, 21 C" in rendered
    # And the conversation runs through the engine to an answer that uses the result.
    content, _, calls, finish = both_ways(v3, "It is sunny, 21 C.", messages=history,
                                          tools=[WEATHER])
    assert (content, calls, finish) == ("It is sunny, 21 C.", [], "stop")


def test_tool_choice_named_forces_the_call_header(v3):
    rest = '{"location": "Rome"}\n```' + CALL_END + END
    tc = {"type": "function", "function": {"name": "get_current_weather"}}
    content, _, calls, finish = both_ways(v3, rest, tools=[WEATHER], tool_choice=tc)
    assert calls == [("get_current_weather", '{"location": "Rome"}')] and finish == "tool_calls"


def test_tool_choice_required_forces_the_section(v3):
    r = chat(v3, None, tools=[WEATHER], tool_choice="required", max_tokens=1, logprobs=True,
             extra_body={"skip_special_tokens": False})
    assert r.choices[0].logprobs.content[0].token == BEGIN


THINKING = {"chat_template_kwargs": {"thinking": True}}


@pytest.mark.parametrize("text,reasoning,content", [
    ("This is a reasoning section</think>This is the rest", "This is a reasoning section",
     "This is the rest"),
    ("This is a reasoning section", "This is a reasoning section", None),
    ("</think>This is the rest", "", "This is the rest"),
    ("This is content", "This is content", None),
])
def test_v31_thinking_prompt_starts_in_reasoning(v31, text, reasoning, content):
    assert detokenized_prompt(v31, messages=[{"role": "user", "content": "hi"}],
                              **THINKING).rstrip().endswith("<think>")
    got_content, got_reasoning, _, _ = both_ways(v31, text, extra_body=dict(THINKING))
    assert (got_reasoning, got_content) == (reasoning, content)


def test_v31_thinking_off_is_content(v31):
    content, reasoning, _, _ = both_ways(v31, "Plain</think> answer",
                                         extra_body={"chat_template_kwargs": {"thinking": False}})
    assert reasoning is None and content == "Plain</think> answer"


def test_reasoning_then_tool_call_v31(v31):
    text = "I need the weather</think>" + BEGIN + CALL + "get_current_weather" + SEP + \
        '{"location": "Oslo"}' + CALL_END + END
    content, reasoning, calls, finish = both_ways(v31, text, tools=[WEATHER],
                                                  extra_body=dict(THINKING))
    assert reasoning == "I need the weather" and content is None
    assert calls == [("get_current_weather", '{"location": "Oslo"}')] and finish == "tool_calls"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
