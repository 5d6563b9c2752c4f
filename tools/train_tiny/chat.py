"""Renders conversations with the shipped chat template as Hugging Face does (reference.md §4.5:
jinja2 sandbox, trim_blocks, lstrip_blocks, loop controls, HF's tojson), except that in-place list
methods are allowed (myriad's choice: Kimi-K2-Thinking's template appends and pops on tool-call
turns, which transformers' immutable sandbox refuses). Needs jinja2.

training_pieces() cuts an example into (text, learn) pieces: the prompt exactly as myriad renders
it at inference (add_generation_prompt), then the assistant turn to learn. Every cut falls on a
special token, so tokenizing the pieces one by one equals tokenizing their concatenation.
"""

import datetime
import json
import os

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import SandboxedEnvironment


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _raise(message):
    raise jinja2.exceptions.TemplateError(message)


class ChatTemplate:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "chat_template.jinja"), encoding="utf-8") as f:
            source = f.read()
        with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                   extensions=[loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
        self.template = env.from_string(source)
        self.special = {k: config[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token")
                        if isinstance(config.get(k), str)}

    def render(self, messages, tools=None, add_generation_prompt=False):
        return self.template.render(messages=messages, tools=tools,
                                    add_generation_prompt=add_generation_prompt, **self.special)


ASSISTANT_HEADER = "<|im_assistant|>assistant<|im_middle|>"


def assistant_turn(message):
    """The text the model generates for an assistant message, after the generation prompt: the
    template's form for a turn it keeps the reasoning of (`<think>{reasoning}</think>{content}`,
    tool calls, `<|im_end|>`). Final answers are never in that part of a rendered conversation
    (the template blanks the reasoning of the last plain answer), so they are written here; the
    test checks this against the template for tool-call turns and reasoning-free answers."""
    assert not message.get("tool_calls"), "tool-call turns come from the template"
    return (f"<think>{message.get('reasoning_content', '')}</think>{message.get('content') or ''}"
            "<|im_end|>")


def training_pieces(template, example):
    """[(text, learn)] for one example of tasks.make_training_examples."""
    msgs, tools = example["messages"], example["tools"]
    last = msgs[-1]
    prompt = template.render(msgs[:-1], tools, add_generation_prompt=True)
    if last.get("tool_calls"):
        full = template.render(msgs, tools)
        assert full.startswith(prompt), "the template changed the prompt of a tool-call turn"
        target = full[len(prompt):]
    else:
        target = assistant_turn(last)
    pieces = [(prompt, False), (target, True)]
    if example.get("train_calls"):
        # The earlier tool-call turn, resent with its reasoning, is also what the model says.
        i = next(j for j, m in enumerate(msgs) if m.get("tool_calls"))
        head = template.render(msgs[:i], tools, add_generation_prompt=True)
        upto = template.render(msgs[:i + 1], tools)
        if prompt.startswith(upto) and upto.startswith(head):
            pieces = [(head, False), (upto[len(head):], True), (prompt[len(upto):], False),
                      (target, True)]
    return pieces
