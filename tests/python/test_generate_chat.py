#!/usr/bin/env python3
"""`myriad generate --chat TEXT` runs the chat template: its prompt is the shipped template
rendered by Python jinja2 (HF's environment, as in test_chat_template_oracle.py) for one user
message and encoded by tiktoken with the shipped tokenizer (allowed_special="all", no BOS added),
not TEXT alone. Checked two ways: the prompt token count generate reports, and the greedy tokens,
which must equal generate's from those oracle ids given as --prompt-ids.

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_generate_chat.py
"""

import os
import re
import subprocess
import sys

import pytest

from test_chat_template_oracle import TINY, load_model, make_environment, render_jinja2
from test_shipped_tokenizer import make_encoding
from test_serve import BINARY

TEXTS = ["What is 12 + 7? Answer briefly.", "héllo, 世界 <|im_end|>"]


def generate(*args):
    p = subprocess.run([BINARY, "generate", TINY, "--max-tokens", "6", "--temperature", "0",
                        "--ignore-eos", "--ids", *args], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


@pytest.mark.parametrize("text", TEXTS)
def test_chat_prompt_is_the_rendered_template(text):
    source, special = load_model(TINY, None)
    rendered, err = render_jinja2(make_environment(), source, special,
                                  {"messages": [{"role": "user", "content": text}]})
    assert err is None, err
    enc = make_encoding()
    ids = enc.encode(rendered, allowed_special="all")
    assert len(ids) > len(enc.encode(text, allowed_special="all"))  # the template adds turns

    out, log = generate("--chat", text)
    m = re.search(r"(\d+) prompt tokens each", log)
    assert m, log
    assert int(m.group(1)) == len(ids), (m.group(1), len(ids), rendered)
    from_ids, _ = generate("--prompt-ids", ",".join(map(str, ids)))
    assert out == from_ids


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
