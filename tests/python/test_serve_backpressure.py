#!/usr/bin/env python3
"""Back-pressure: a client that stops reading its stream stops its sequence.

A raw socket with a small receive buffer sends a streaming chat request and reads nothing. Once
the stream's unsent output passes --max-unsent-bytes the sequence is no longer scheduled (the
engine takes no steps while it is the only request); after --stream-write-timeout of silence the
server cancels it, says so in its log, and its KV blocks are freed. A client that pauses and then
reads again gets the whole stream. Loopback only, bounded in time.

Run: build/venv/bin/python tests/python/test_serve_backpressure.py   (MYRIAD_BINARY = myriad)
"""

import json
import re
import socket
import sys
import time

import pytest
import requests

from test_serve import MODEL, Server

MAX_TOKENS = 4000  # far more than fits in the buffers: the stream must stop long before
# The stream that is read again after its pause: the pause comes after ~100 tokens (16 KiB unsent),
# so 1000 still pauses long before its end, and the resumed read is not 4000 tokens of decoding.
RESUME_MAX_TOKENS = 1000
WRITE_TIMEOUT = 4


@pytest.fixture(scope="module")
def server():
    s = Server("--max-unsent-bytes", "16384", "--stream-write-timeout", str(WRITE_TIMEOUT))
    yield s
    s.stop()


def open_stream(server, max_tokens=MAX_TOKENS):
    """A streaming request on a socket that reads nothing; returns (socket, its local port)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", server.port))
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                       "stream": True, "max_tokens": max_tokens, "ignore_eos": True,
                       "temperature": 0}).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return s, s.getsockname()[1]


def wait_for_log(server, pattern, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(pattern, server.output())
        if m:
            return m
        time.sleep(0.1)
    raise AssertionError(f"no log line /{pattern}/ within {timeout} s:\n{server.output()[-3000:]}")


def steps(server):
    return server.metrics()["myriad_engine_steps_total"]


def test_silent_client_is_paused_then_cancelled(server):
    before = server.metrics()
    sock, port = open_stream(server)
    try:
        wait_for_log(server, rf"client 127\.0\.0\.1:{port} is not reading its stream", 120)
        # Paused: the only request is not scheduled, so the engine takes no step. Steps already
        # under way when the pause was logged may still finish: wait until the count settles
        # (a sequence still scheduled would keep it rising until max_tokens, caught below).
        s0 = steps(server)
        for _ in range(40):
            time.sleep(0.25)
            s1 = steps(server)
            if s1 == s0:
                break
            s0 = s1
        time.sleep(1.5)
        assert steps(server) == s0, "a paused sequence was still scheduled"
        m = wait_for_log(server,
                         rf"client 127\.0\.0\.1:{port} read nothing .* for {WRITE_TIMEOUT} s.*"
                         r"cancelled", WRITE_TIMEOUT + 60)
        print(m.group(0))
        deadline = time.time() + 30
        while server.metrics()["myriad_num_requests_running"] != 0 and time.time() < deadline:
            time.sleep(0.1)
        after = server.metrics()
        assert after["myriad_num_requests_running"] == 0
        assert after["myriad_kv_blocks_used"] <= before["myriad_kv_blocks_used"], \
            "the cancelled sequence's blocks were freed"
        generated = after["myriad_generation_tokens_total"] - before["myriad_generation_tokens_total"]
        print(f"generated {generated:.0f} of max_tokens {MAX_TOKENS} before the pause")
        assert 0 < generated < MAX_TOKENS
    finally:
        sock.close()
    # The server serves on.
    r = requests.post(server.url + "/v1/chat/completions", timeout=120,
                      json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                            "max_tokens": 3})
    assert r.status_code == 200, r.text


def test_client_that_reads_again_gets_the_whole_stream(server):
    sock, port = open_stream(server, RESUME_MAX_TOKENS)
    try:
        wait_for_log(server, rf"client 127\.0\.0\.1:{port} is not reading its stream", 120)
        sock.settimeout(60)
        data = b""
        while b"data: [DONE]" not in data:
            chunk = sock.recv(65536)
            assert chunk, "the server closed the stream"
            data += chunk
        text = data.decode("utf-8", "replace")
        assert '"finish_reason":"length"' in text
        assert not re.search(rf"client 127\.0\.0\.1:{port} read nothing", server.output())
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s", "-p", "no:cacheprovider"]))
