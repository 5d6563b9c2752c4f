#!/usr/bin/env python3
"""Chat templates rendered by `myriad chat-template` against two real oracles:

1. Python jinja2 in Hugging Face's environment, built here (reference.md §4.5): a sandbox with
   trim_blocks, lstrip_blocks, loop controls, HF's tojson, raise_exception and strftime_now —
   a SandboxedEnvironment rather than HF's ImmutableSandboxedEnvironment, because myriad allows
   in-place list methods (Kimi-K2-Thinking's template appends and pops). Every request must
   render byte-identically, or fail in both (myriad: exit status 2 naming line and column).
2. transformers' apply_chat_template(tokenize=False) wherever it can render: it cannot render
   Kimi-K2-Thinking's tool-call turns (immutable sandbox; the test checks that refusal) and
   refuses an empty conversation; those are skipped for transformers only, with the reason
   printed. transformers drops None-valued message fields before rendering (myriad passes
   them on, as jinja2 receives them), so for requests holding nulls myriad renders the request
   with those fields dropped too, and that is compared.

Templates: the four of tests/data/chat_templates/*.jinja (through --template), the
tokenizer_config.json templates of deepseek_v3, qwen3 and llama3, and the shipped
models/myriad-tiny (chat_template.jinja). Requests: every tests/data/chat_requests/*.json.

Kimi-K2.5's template reads `tools_ts_str`, which its tokenizer's Python computes before rendering
(../shared/docs/kimi-k25-tools.md §1.3): the oracles get what that Python passes (tools sorted by
key at every depth, thinking=True, tools_ts_str) and chat_template_kwargs on top. The
TypeScript-style text is taken from myriad's own prompt, after checking that it is there, in its
frame, for every request with tools; its content is checked against the document's examples by
tests/tool_declarations_ts_test.cpp.

A plain script: one line per template, then `N passed, N failed`; exit status 1 on failure.
Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_chat_template_oracle.py
"""

import datetime
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import SandboxedEnvironment

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
DATA = os.path.join(REPO, "tests", "data")
TEMPLATES_DIR = os.path.join(DATA, "chat_templates")
TINY = os.path.join(REPO, "models", "myriad-tiny")

# (name, model folder, template file that replaces the folder's template, or None)
TEMPLATES = [
    ("kimi-k2-instruct", TINY, os.path.join(TEMPLATES_DIR, "kimi-k2-instruct.jinja")),
    ("kimi-k2-thinking", TINY, os.path.join(TEMPLATES_DIR, "kimi-k2-thinking.jinja")),
    ("kimi-k2.5", TINY, os.path.join(TEMPLATES_DIR, "kimi-k2.5.jinja")),
    ("deepseek-v3.1", os.path.join(TEMPLATES_DIR, "deepseek_v3"),
     os.path.join(TEMPLATES_DIR, "deepseek-v3.1.jinja")),
    ("deepseek_v3", os.path.join(TEMPLATES_DIR, "deepseek_v3"), None),
    ("qwen3", os.path.join(TEMPLATES_DIR, "qwen3"), None),
    ("llama3", os.path.join(TEMPLATES_DIR, "llama3"), None),
    ("myriad-tiny", TINY, None),
]
# Templates that call list.append / pop on tool-call turns (transformers refuses those).
IN_PLACE_LIST_TEMPLATES = {"kimi-k2-thinking", "myriad-tiny"}
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                  "mask_token")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_model(folder, template_file):
    """Template source and special tokens, found the way transformers finds them."""
    config_path = os.path.join(folder, "tokenizer_config.json")
    config = json.loads(read(config_path)) if os.path.exists(config_path) else {}
    special = {}
    for name in SPECIAL_TOKENS:
        v = config.get(name)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            special[name] = v
    if template_file:
        return read(template_file), special
    jinja_file = os.path.join(folder, "chat_template.jinja")
    if os.path.exists(jinja_file):
        return read(jinja_file), special
    return config["chat_template"], special


def make_environment():
    # HF's environment, except that in-place list methods are allowed (myriad's choice).
    env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    env.globals["dict"] = dict
    return env


def reads_tools_ts(source):
    return re.search(r"\btools_ts_str\b", source) is not None


def sort_keys_deep(v):
    if isinstance(v, dict):
        return {k: sort_keys_deep(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [sort_keys_deep(x) for x in v]
    return v


TOOL_BLOCK = "<|im_system|>tool_declare<|im_middle|>"
TS_FRAME = "# Tools\n\n## functions\nnamespace functions {\n"


def tokenizer_variables(request, myriad_out):
    """What Kimi-K2.5's tokenizer passes its template besides the request (see the docstring),
    and whether myriad's prompt holds the TypeScript-style block it should hold."""
    tools = request.get("tools")
    extra = {"thinking": True}
    if tools is None:
        return extra, True
    extra["tools"] = sort_keys_deep(tools)
    if not tools or "tools_ts_str" in (request.get("chat_template_kwargs") or {}):
        return extra, True
    if not myriad_out.startswith(TOOL_BLOCK + TS_FRAME) or "<|im_end|>" not in myriad_out:
        return extra, False
    ts = myriad_out[len(TOOL_BLOCK):myriad_out.index("<|im_end|>")]
    extra["tools_ts_str"] = ts
    return extra, ts.endswith("}\n")


def render_jinja2(env, source, special, request, extra=None):
    variables = {
        "messages": request["messages"],
        "tools": request.get("tools"),
        "add_generation_prompt": request.get("add_generation_prompt", True),
        **special,
        **(extra or {}),
        **(request.get("chat_template_kwargs") or {}),
    }
    try:
        return env.from_string(source).render(**variables), None
    except Exception as e:  # noqa: BLE001 - any template error is an outcome to compare
        return None, f"{type(e).__name__}: {e}"


def render_myriad(model, template_file, request_path):
    cmd = [BINARY, "chat-template", model, "--request", request_path]
    if template_file:
        cmd += ["--template", template_file]
    r = subprocess.run(cmd, capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


_TRANSFORMERS = None


def transformers_tokenizer(source, special):
    global _TRANSFORMERS
    if _TRANSFORMERS is None:
        from tokenizers import Tokenizer, models  # noqa: PLC0415 - imported only when needed
        from transformers import PreTrainedTokenizerFast  # noqa: PLC0415
        _TRANSFORMERS = (Tokenizer, models, PreTrainedTokenizerFast)
    Tokenizer, models, PreTrainedTokenizerFast = _TRANSFORMERS
    # The template path does not depend on the vocabulary: a one-word tokenizer will do.
    backend = Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, chat_template=source, **special)


def render_transformers(tokenizer, request, extra=None):
    extra = dict(extra or {})
    tools = extra.pop("tools", request.get("tools"))
    try:
        out = tokenizer.apply_chat_template(
            request["messages"], tools=tools,
            add_generation_prompt=request.get("add_generation_prompt", True), tokenize=False,
            **{**extra, **(request.get("chat_template_kwargs") or {})})
        return out, None
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


def has_null_field(request):
    return any(v is None for m in request["messages"] for v in m.values())


def without_null_fields(request):
    out = dict(request)
    out["messages"] = [{k: v for k, v in m.items() if v is not None} for m in request["messages"]]
    return out


def has_tool_calls(request):
    return any(m.get("tool_calls") for m in request["messages"])


def show(s, limit=300):
    return repr(s if len(s) <= limit else s[:limit] + "...")


def main():
    if not os.path.exists(BINARY):
        print(f"myriad binary not found: {BINARY} (set MYRIAD_BINARY)")
        return 1
    requests = sorted(glob.glob(os.path.join(DATA, "chat_requests", "*.json")))
    env = make_environment()
    passed = failed = 0
    totals = {"jinja2": 0, "transformers": 0, "errors": 0, "skipped": 0}

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL " + what)

    for name, model, template_file in TEMPLATES:
        source, special = load_model(model, template_file)
        tokenizer = transformers_tokenizer(source, special)
        same_jinja = same_tf = both_err = nulls_dropped = 0
        skips = {}
        for path in requests:
            req_name = os.path.basename(path)[:-5]
            request = json.loads(read(path))
            rc, out, err = render_myriad(model, template_file, path)
            label = f"{name} / {req_name}"
            extra = None
            if reads_tools_ts(source):
                extra, has_ts = tokenizer_variables(request, out)
                check(has_ts, f"{label}: no TypeScript-style tool block: {show(out)}")
            expected, oracle_err = render_jinja2(env, source, special, request, extra)
            if oracle_err is None:
                ok = rc == 0 and out == expected
                check(ok, f"{label}: differs from jinja2\n  myriad: "
                          f"{show(out) if rc == 0 else 'exit ' + str(rc) + ': ' + err.strip()}"
                          f"\n  jinja2: {show(expected)}")
                same_jinja += ok
            else:
                ok = rc == 2 and "line " in err and "column " in err
                check(ok, f"{label}: jinja2 fails ({oracle_err}) but myriad gave exit {rc}: "
                          f"{err.strip() or show(out)}")
                both_err += ok

            # transformers, where it can render this request.
            reason = None
            if not request["messages"]:
                reason = "empty conversation"
            elif name in IN_PLACE_LIST_TEMPLATES and has_tool_calls(request):
                reason = "immutable sandbox refuses list.append/pop on tool-call turns"
            tf_out, tf_err = render_transformers(tokenizer, request, extra)
            if reason is None and has_null_field(request):
                # transformers dropped the nulls: render what it rendered.
                stripped = without_null_fields(request)
                with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
                    json.dump(stripped, f, ensure_ascii=False)
                    f.flush()
                    rc, out, err = render_myriad(model, template_file, f.name)
                if extra is not None:
                    extra, _ = tokenizer_variables(stripped, out)
                _, oracle_err = render_jinja2(env, source, special, stripped, extra)
                nulls_dropped += 1
            if reason is None:
                if oracle_err is None:
                    ok = tf_err is None and tf_out == out
                    check(ok, f"{label}: differs from transformers\n  myriad: {show(out)}\n"
                              f"  transformers: {show(tf_out) if tf_err is None else tf_err}")
                    same_tf += ok
                else:
                    check(tf_err is not None and rc == 2,
                          f"{label}: transformers renders what jinja2 refuses, or myriad differs")
            else:
                if "immutable" in reason:
                    # The documented failure, and no other.
                    check(tf_err is not None and "unsafe" in tf_err,
                          f"{label}: expected transformers' sandbox refusal, got "
                          f"{tf_err or 'a rendering'}")
                skips[reason] = skips.get(reason, 0) + 1
        totals["jinja2"] += same_jinja
        totals["transformers"] += same_tf
        totals["errors"] += both_err
        totals["skipped"] += sum(skips.values())
        skip_text = "; ".join(f"{n} skipped for transformers: {r}" for r, n in skips.items())
        print(f"{name}: {len(requests)} requests, {same_jinja} identical to jinja2, {both_err} "
              f"failing in both, {same_tf} identical to transformers ({nulls_dropped} of them "
              f"with null fields dropped)" + (f"; {skip_text}" if skip_text else ""))
    print(f"totals: {totals['jinja2']} renders identical to jinja2, {totals['errors']} errors in "
          f"both, {totals['transformers']} identical to transformers, {totals['skipped']} "
          f"transformers skips")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
