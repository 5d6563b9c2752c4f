#!/usr/bin/env python3
"""`myriad chat` against `myriad serve`: the terminal chat must reply exactly what the server
returns for the same conversation (same engine, template and output parser), keep the history
across turns, and obey /reset, /system and /exit. Greedy decoding on the shipped model.

Run: build/venv/bin/python tests/python/test_chat.py   (MYRIAD_BINARY = the myriad executable)
"""

import os
import subprocess
import sys

import pytest

from test_serve import BINARY, MODEL, Server

MAX_TOKENS = 12


def run_chat(lines, *flags):
    p = subprocess.run([BINARY, "chat", "--threads", "2", "--temperature", "0", "--max-tokens",
                        str(MAX_TOKENS), *flags], input="".join(l + "\n" for l in lines),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def server_reply(server, messages):
    r = server.client().chat.completions.create(model=MODEL, messages=messages, temperature=0,
                                                max_tokens=MAX_TOKENS)
    msg = r.choices[0].message
    reasoning = (msg.model_extra or {}).get("reasoning_content") or ""
    # chat prints the reasoning, a line break when an answer follows, the answer; then a line
    # break. (The shipped model reasons first: in MAX_TOKENS the answer may not have begun.)
    content = msg.content or ""
    return reasoning + ("\n" if reasoning and content else "") + content + "\n", content


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def test_two_turns_equal_the_server(server):
    out, _ = run_chat(["hello there", "and what about tomorrow?"])
    first, content = server_reply(server, [{"role": "user", "content": "hello there"}])
    second, _ = server_reply(server, [{"role": "user", "content": "hello there"},
                                      {"role": "assistant", "content": content},
                                      {"role": "user", "content": "and what about tomorrow?"}])
    assert out == first + second


def test_reset_forgets_and_system_prompt_is_sent(server):
    out, _ = run_chat(["hello there", "/reset", "hello there", "/system you are terse",
                       "/system", "hello there"])
    first, _ = server_reply(server, [{"role": "user", "content": "hello there"}])
    sys_reply, _ = server_reply(server, [{"role": "system", "content": "you are terse"},
                                         {"role": "user", "content": "hello there"}])
    assert out == (first + "[conversation reset]\n" + first +
                   "[system prompt set; conversation reset]\n[system: you are terse]\n" + sys_reply)


def test_system_flag_and_exit(server):
    out, _ = run_chat(["hi", "/exit", "never sent"], "--system", "be kind")
    expected, _ = server_reply(server, [{"role": "system", "content": "be kind"},
                                        {"role": "user", "content": "hi"}])
    assert out == expected


def test_a_turn_too_long_for_the_context_loses_only_itself():
    out, err = run_chat(["word " * 400, "/bogus", "hi"], "--max-model-len", "128")
    assert "maximum context is 128 tokens" in err and "try /reset" in err
    assert "[unknown command /bogus]" in out
    # The chat went on: the last line was answered (something after the unknown-command help).
    assert out.split("Ctrl-D ends the chat\n", 1)[1].strip() != ""


def test_unknown_device_is_bad_input():
    p = subprocess.run([BINARY, "chat", "--device", "tpu"], input="", capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "--device tpu" in p.stderr


def test_line_editing_and_history_on_a_terminal(tmp_path):
    """On a terminal, chat reads lines through libedit: Backspace edits the line, Up brings the
    last one back, and the history is kept in ~/.myriad_chat_history for the next session."""
    import pty
    import select
    import time
    master, slave = pty.openpty()
    env = dict(os.environ, HOME=str(tmp_path), TERM="xterm")
    p = subprocess.Popen([BINARY, "chat", "--threads", "2", "--temperature", "0",
                          "--max-tokens", "4"], stdin=slave, stdout=slave, stderr=slave, env=env,
                         close_fds=True)
    os.close(slave)
    seen = b""

    def read_until(count_prompts, deadline_s=300):
        nonlocal seen
        deadline = time.time() + deadline_s
        while seen.count(b"> ") < count_prompts and time.time() < deadline:
            if select.select([master], [], [], 1)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        assert seen.count(b"> ") >= count_prompts, seen[-2000:]

    try:
        read_until(1)
        os.write(master, b"hx\x7fi\r")       # "hx", Backspace, "i": the line is "hi"
        read_until(2)
        os.write(master, b"\x1b[A\r")         # Up: "hi" again
        read_until(3)
        # A line, not Ctrl-D: typed while a reply is still being written (the prompt count can
        # run ahead when libedit redraws), a line waits in the terminal; an EOF mark may not.
        os.write(master, b"/exit\r")
        assert p.wait(300) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    with open(tmp_path / ".myriad_chat_history", encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f]
    assert lines[-3:] == ["hi", "hi", "/exit"], lines


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
