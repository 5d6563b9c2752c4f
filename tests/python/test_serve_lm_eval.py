#!/usr/bin/env python3
"""lm-eval against `myriad serve` on the shipped model, and the prompt logprobs it needs.

The `openai` client checks /v1/completions with `echo`: the prompt's tokens with their logprobs
(the first null), `max_tokens: 0`, top_logprobs at prompt positions, text_offset (streamed too),
each prompt logprob against the same token's logprob obtained another way (a request for the
prefix alone with a logit_bias that makes the token the generated one: the sampler's path, whose
logprobs are the model's unprocessed distribution); also `created` of /v1/models, `model` left
out, stream_options.continuous_usage_stats and GET /tokenizer_info.

Then lm-eval's `local-completions` model with `tokenizer_backend=remote` runs a multiple-choice
(loglikelihood) task and a generate_until task from tests/data/lm_eval (local JSON lines; no hub
access). The loglikelihoods lm-eval used must be the sums of the continuation tokens' logprobs
asked for directly, the true sums must win, and its generations must be the server's answers.

Run: build/venv/bin/python tests/python/test_serve_lm_eval.py   (MYRIAD_BINARY = the myriad
executable)
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import openai
import pytest
import requests

import serve_process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
MODEL = "myriad-tiny"
TASKS = os.path.join(REPO, "tests", "data", "lm_eval")
PROMPT = "Mind computing 23 + 27? It is 50."
# Two passes over the same row of logits on the CPU (a prefill's row, a decode's last row) agree
# to rounding; a logprob is a few units in size.
LP_TOL = 2e-3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *flags):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()
        self.started = time.time()
        self.proc = serve_process.spawn(
            [BINARY, "serve", "--port", str(self.port), "--threads", "2", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        serve_process.wait_healthy(self.proc, self.url, self.output)

    def output(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def client(self):
        return openai.OpenAI(base_url=self.url + "/v1", api_key="none", max_retries=0,
                             timeout=300)

    def post(self, path, body):
        r = requests.post(self.url + path, json=body, timeout=300)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text}"
        return r.json()

    def tokenize(self, text):
        return self.post("/tokenize", {"prompt": text, "add_special_tokens": False})["tokens"]

    def stop(self):
        serve_process.stop(self.proc)


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def echo(server, prompt, top=1, **kw):
    """The prompt's logprobs: a completion of nothing with echo (lm-eval's request, max_tokens 0)."""
    return server.client().completions.create(model=MODEL, prompt=prompt, echo=True,
                                              logprobs=top, max_tokens=0, temperature=0, **kw)


def decode_logprob(server, prefix_ids, token):
    """The logprob of `token` after `prefix_ids` by the sampler's path: a bias that makes it the
    generated token (logprobs describe the distribution before any bias)."""
    r = server.client().completions.create(model=MODEL, prompt=prefix_ids, max_tokens=1,
                                           temperature=0, logprobs=0,
                                           logit_bias={str(token): 100})
    lp = r.choices[0].logprobs
    assert r.choices[0].logprobs.tokens[0] == server.post(
        "/detokenize", {"tokens": [token]})["prompt"]
    return lp.token_logprobs[0]


# --- prompt logprobs through the openai client -------------------------------------------------

def test_echo_returns_the_prompt_with_its_logprobs(server):
    ids = server.tokenize(PROMPT)
    r = echo(server, ids, top=3)
    ch = r.choices[0]
    lp = ch.logprobs
    assert ch.text == server.post("/detokenize", {"tokens": ids})["prompt"]
    assert r.usage.prompt_tokens == len(ids) and r.usage.completion_tokens == 0
    assert ch.finish_reason == "length"
    assert len(lp.tokens) == len(ids) == len(lp.token_logprobs) == len(lp.top_logprobs)
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert "".join(lp.tokens) == ch.text
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(len(ids))]
    for k in range(1, len(ids)):
        top = lp.top_logprobs[k]
        assert len(top) == 3 and all(v <= 0 for v in top.values())
        assert lp.token_logprobs[k] <= max(top.values()) + 1e-6
        # The token's own logprob, the sampler's way, from the prefix alone.
        want = decode_logprob(server, ids[:k], ids[k])
        assert abs(lp.token_logprobs[k] - want) < LP_TOL, (k, lp.token_logprobs[k], want)


def test_top_logprobs_of_the_prompt_are_the_models_best(server):
    """At a prompt position, the top entries are the best next tokens a generation there sees."""
    ids = server.tokenize(PROMPT)
    lp = echo(server, ids, top=5).choices[0].logprobs
    k = len(ids) - 3
    gen = server.client().completions.create(model=MODEL, prompt=ids[:k], max_tokens=1,
                                             temperature=0, logprobs=5)
    want = gen.choices[0].logprobs.top_logprobs[0]
    assert set(lp.top_logprobs[k]) == set(want)
    for t, v in want.items():
        assert abs(lp.top_logprobs[k][t] - v) < LP_TOL


def test_echo_with_generation_and_streamed_text_offsets(server):
    """echo with max_tokens 3: prompt entries then generated ones, offsets counting up over both,
    the stream's chunks carrying the same entries as the whole answer."""
    c = server.client()
    kw = dict(model=MODEL, prompt=PROMPT, echo=True, logprobs=2, max_tokens=3, temperature=0,
              extra_body={"ignore_eos": True})
    whole = c.completions.create(**kw).choices[0]
    n_prompt = len(server.tokenize(PROMPT))
    lp = whole.logprobs
    assert whole.text.startswith(PROMPT) and len(lp.tokens) == n_prompt + 3
    assert lp.token_logprobs[0] is None and all(x is not None for x in lp.token_logprobs[1:])
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(len(lp.tokens))]
    tokens, offsets, text = [], [], ""
    for chunk in c.completions.create(stream=True, **kw):
        for ch in chunk.choices:
            text += ch.text
            if ch.logprobs:
                tokens += ch.logprobs.tokens
                offsets += ch.logprobs.text_offset
    assert text == whole.text and tokens == lp.tokens
    assert offsets == lp.text_offset and offsets == sorted(set(offsets))


def test_max_tokens_zero_needs_echo(server):
    with pytest.raises(openai.BadRequestError) as e:
        server.client().completions.create(model=MODEL, prompt="x", max_tokens=0)
    assert "echo" in str(e.value)
    # Without logprobs, the echo alone.
    r = server.client().completions.create(model=MODEL, prompt="hello there", max_tokens=0,
                                           echo=True)
    assert r.choices[0].text == "hello there" and r.choices[0].logprobs is None


def test_prompt_logprobs_do_not_depend_on_the_prefix_cache(server):
    """A prompt whose blocks are cached (asked before, without logprobs) gives the same logprobs
    at every position: the hit must not skip their rows."""
    ids = server.tokenize("The quick brown fox jumps over the lazy dog. " * 4)
    server.client().completions.create(model=MODEL, prompt=ids, max_tokens=1)
    again = echo(server, ids, top=1)
    assert again.usage.prompt_tokens_details.cached_tokens == 0
    for k in (1, len(ids) // 2, len(ids) - 1):
        want = decode_logprob(server, ids[:k], ids[k])
        assert abs(again.choices[0].logprobs.token_logprobs[k] - want) < LP_TOL


# --- smaller API points -----------------------------------------------------------------------

def test_models_created_is_the_start_time(server):
    m = server.client().models.list().data[0]
    assert server.started - 5 <= m.created <= time.time()


def test_model_may_be_left_out(server):
    r = requests.post(server.url + "/v1/completions",
                      json={"prompt": "hi", "max_tokens": 2}, timeout=300)
    assert r.status_code == 200 and r.json()["model"] == MODEL
    r = requests.post(server.url + "/v1/chat/completions",
                      json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
                      timeout=300)
    assert r.status_code == 200 and r.json()["model"] == MODEL


@pytest.mark.parametrize("kind", ["chat", "completions"])
def test_continuous_usage_stats(server, kind):
    c = server.client()
    kw = dict(model=MODEL, max_tokens=6, stream=True, temperature=0,
              stream_options={"include_usage": True, "continuous_usage_stats": True},
              extra_body={"ignore_eos": True})
    if kind == "chat":
        stream = c.chat.completions.create(messages=[{"role": "user", "content": "hi"}], **kw)
    else:
        stream = c.completions.create(prompt="Hello", **kw)
    usages = [(chunk.usage, bool(chunk.choices)) for chunk in stream]
    assert all(u is not None for u, _ in usages), "usage in every chunk"
    done = [u.completion_tokens for u, _ in usages]
    assert done == sorted(done) and done[-1] == 6
    assert len({u.prompt_tokens for u, _ in usages}) == 1
    assert not usages[-1][1], "the last chunk is the usage alone"
    # Without continuous_usage_stats: null in the chunks, the total at the end.
    kw["stream_options"] = {"include_usage": True}
    stream = (c.chat.completions.create(messages=[{"role": "user", "content": "hi"}], **kw)
              if kind == "chat" else c.completions.create(prompt="Hello", **kw))
    usages = [chunk.usage for chunk in stream]
    assert all(u is None for u in usages[:-1]) and usages[-1].completion_tokens == 6


def test_tokenizer_info(server):
    info = requests.get(server.url + "/tokenizer_info", timeout=60).json()
    with open(os.path.join(REPO, "models", "myriad-tiny", "tokenizer_config.json")) as f:
        config = json.load(f)
    for name in ("bos_token", "eos_token"):
        want = config.get(name)
        want = want.get("content") if isinstance(want, dict) else want
        assert info[name] == want, name
        assert len(server.tokenize(info[name])) == 1, f"{name} is one token"
    with open(os.path.join(REPO, "models", "myriad-tiny", "chat_template.jinja")) as f:
        assert info["chat_template"] == f.read()
    assert info["model_max_length"] == server.client().models.list().data[0].max_model_len


# --- lm-eval ----------------------------------------------------------------------------------

def run_lm_eval(server, tasks):
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    import lm_eval
    from lm_eval.tasks import TaskManager

    return lm_eval.simple_evaluate(
        model="local-completions",
        model_args={"base_url": server.url + "/v1/completions", "tokenizer_backend": "remote",
                    "model": MODEL, "max_length": 2048, "timeout": 300},
        tasks=tasks, task_manager=TaskManager(include_path=TASKS), log_samples=True)


@pytest.fixture(scope="module")
def lm_eval_result(server, tmp_path_factory):
    # The task files name their data relative to the repository; datasets' cache in a temporary
    # home, so nothing outside the test is read or written.
    os.environ["HF_HOME"] = str(tmp_path_factory.mktemp("hf_home"))
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        yield run_lm_eval(server, ["myriad_arith_choice", "myriad_arith_gen"])
    finally:
        os.chdir(cwd)


def test_lm_eval_loglikelihoods_are_the_servers(server, lm_eval_result):
    samples = lm_eval_result["samples"]["myriad_arith_choice"]
    assert len(samples) == 6
    checked_by_decode = False
    for s in samples:
        for (context, continuation), resp in zip(s["arguments"], s["resps"]):
            ll, _ = resp[0]
            # lm-eval's split (api/model.py, _encode_pair): trailing spaces move to the
            # continuation, the whole is encoded, the context's tokens come off its front.
            n = len(context) - len(context.rstrip())
            if n:
                context, continuation = context[:-n], context[-n:] + continuation
            whole = server.tokenize(context + continuation)
            ctx = len(server.tokenize(context))
            lp = echo(server, whole).choices[0].logprobs.token_logprobs
            assert abs(ll - sum(lp[ctx:])) < 1e-4, (continuation, ll, sum(lp[ctx:]))
            if not checked_by_decode:  # and once by the sampler's path, token by token
                want = sum(decode_logprob(server, whole[:k], whole[k])
                           for k in range(ctx, len(whole)))
                assert abs(ll - want) < LP_TOL * (len(whole) - ctx), (ll, want)
                checked_by_decode = True
        # The true sum is clearly the most likely continuation.
        lls = [resp[0][0] for resp in s["resps"]]
        assert max(range(len(lls)), key=lls.__getitem__) == s["doc"]["answer"], lls
        assert sorted(lls)[-1] - sorted(lls)[-2] > 1.0, lls
    assert lm_eval_result["results"]["myriad_arith_choice"]["acc,none"] == 1.0


def test_lm_eval_generations_are_the_servers(server, lm_eval_result):
    samples = lm_eval_result["samples"]["myriad_arith_gen"]
    assert len(samples) == 6
    for s in samples:
        context, gen = s["arguments"][0]
        r = server.client().completions.create(model=MODEL, prompt=server.tokenize(context),
                                               max_tokens=gen["max_gen_toks"], temperature=0,
                                               stop=gen["until"])
        assert s["resps"][0][0] == r.choices[0].text
        assert s["filtered_resps"][0] == str(s["doc"]["sum"]), s["resps"]
    assert lm_eval_result["results"]["myriad_arith_gen"]["exact_match,last-sum"] == 1.0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
