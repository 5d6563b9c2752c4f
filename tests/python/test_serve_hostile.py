#!/usr/bin/env python3
"""`myriad serve` against hostile or sloppy HTTP clients (loopback only, bounded in time).

A chunked body cannot pass --max-request-bytes (it used to be buffered whole); ambiguous framing
(two Content-Length headers, Content-Length beside Transfer-Encoding: request smuggling behind a
proxy) is refused with 400; a URL over 8 KB is a 414 of type invalid_request_error; the
Authorization scheme is case-insensitive (RFC 7235); SIGTERM exits within the drain timeout
although connections trickle header bytes, sit idle or stop halfway through a body.

Run: build/venv/bin/python tests/python/test_serve_hostile.py   (MYRIAD_BINARY = myriad)
"""

import json
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests

from test_serve import MODEL, Server

KEY = "sekret"
LIMIT = 4096


@pytest.fixture(scope="module")
def server():
    s = Server("--api-key", KEY, "--max-request-bytes", str(LIMIT))
    yield s
    s.stop()


def raw(server, head, body=b""):
    """Sends raw request bytes; returns (status, response text)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head_end = data.find(b"\r\n\r\n")
        length = 0
        for line in data[:head_end].split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        while len(data) < head_end + 4 + length:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    text = data.decode("utf-8", "replace")
    return int(text.split(" ", 2)[1]), text[head_end + 4:]


def auth():
    return f"Authorization: Bearer {KEY}\r\n".encode()


def test_chunked_body_is_held_to_the_limit(server):
    rss0 = server.rss_kb()
    total = 8 << 20  # 2048 times the limit

    def body():
        yield b'{"model": "' + MODEL.encode() + b'", "prompt": "'
        sent = 0
        while sent < total:
            yield b"a" * 65536
            sent += 65536
        yield b'"}'

    try:
        r = requests.post(server.url + "/tokenize", data=body(), timeout=60,
                          headers={"Authorization": f"Bearer {KEY}",
                                   "Content-Type": "application/json"})
        assert r.status_code == 413, r.text[:300]
        assert r.json()["error"]["type"] == "invalid_request_error"
    except requests.ConnectionError:
        pass  # the server answered 413 and closed while the body was still coming
    grown = server.rss_kb() - rss0
    print(f"RSS grew {grown} kB for an {total >> 20} MiB chunked body")
    assert grown < (total >> 10) // 2, "the chunked body was buffered"
    assert requests.get(server.url + "/health", timeout=30).status_code == 200


def test_small_chunked_body_is_accepted(server):
    def body():
        yield b'{"model": "' + MODEL.encode() + b'",'
        yield b' "prompt": "hello"}'

    r = requests.post(server.url + "/tokenize", data=body(), timeout=60,
                      headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 200, r.text
    assert r.json()["count"] > 0


def test_ambiguous_framing_is_refused(server):
    # Each request is valid read either way, so only refusing the ambiguity gives 400.
    good = json.dumps({"model": MODEL, "prompt": "hi"}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(good), good)
    cases = [
        (b"Content-Length: %d\r\nContent-Length: %d\r\n" % (len(good), len(good) + 30), good),
        (b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % len(good), chunked),
        (b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % len(chunked), chunked),
    ]
    status, text = raw(server, b"POST /tokenize HTTP/1.1\r\nHost: x\r\n" + auth() +
                       b"Content-Length: %d\r\n\r\n" % len(good), good)
    assert status == 200, text
    for framing, body in cases:
        status, text = raw(server, b"POST /tokenize HTTP/1.1\r\nHost: x\r\n" + auth() +
                           framing + b"\r\n", body)
        assert status == 400, (framing, text)
        assert json.loads(text)["error"]["type"] == "invalid_request_error"


def test_long_url_is_414_invalid_request(server):
    status, text = raw(server, b"GET /v1/models?x=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n"
                       + auth() + b"\r\n")
    assert status == 414, text
    assert json.loads(text)["error"]["type"] == "invalid_request_error"


def test_bearer_scheme_is_case_insensitive(server):
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"]:
        r = requests.get(server.url + "/v1/models", headers={"authorization": f"{scheme} {KEY}"})
        assert r.status_code == 200, (scheme, r.text)
    for value in [f"Basic {KEY}", f"Bearer {KEY}x", f"Bearer{KEY}", "Bearer", ""]:
        r = requests.get(server.url + "/v1/models", headers={"Authorization": value})
        assert r.status_code == 401, (value, r.text)


def test_trickled_requests_are_closed_at_the_read_deadline():
    deadline = 3
    s = Server("--request-read-timeout", str(deadline))
    stop = threading.Event()
    socks = []
    try:
        body = json.dumps({"model": MODEL, "prompt": "hi"}).encode()
        heads = [b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100] * 2 + [
            b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (
                len(body) + 100) + body]
        for head in heads:
            c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
            socks.append(c)
            c.sendall(head[:-100])

        def trickle(c, rest):
            for i in range(len(rest)):  # one byte a second, at most 100 s: outlasts the test
                try:
                    c.send(rest[i:i + 1])
                except OSError:
                    return  # the server closed it
                if stop.wait(1):
                    return

        threads = [threading.Thread(target=trickle, args=(c, h[-100:]), daemon=True)
                   for c, h in zip(socks, heads)]
        t_attack = time.time()
        for t in threads:
            t.start()
        t0 = time.time()
        r = requests.post(s.url + "/v1/chat/completions", timeout=120,
                          json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                                "max_tokens": 3})
        print(f"a chat request during the attack took {time.time() - t0:.2f} s")
        assert r.status_code == 200, r.text
        assert all(t.is_alive() for t in threads), "the attack outlasted the request"
        for c in socks:
            c.settimeout(deadline + 20)
            try:
                data = c.recv(65536)
            except ConnectionResetError:
                data = b""
            except socket.timeout:
                raise AssertionError("a trickling connection outlived the read deadline")
            assert b"200 OK" not in data
        print(f"trickling connections closed {time.time() - t_attack:.1f} s into the attack")
        assert "did not send a whole request within" in s.output()
    finally:
        stop.set()
        for c in socks:
            c.close()
        s.stop()


def test_sigterm_exits_despite_trickling_and_idle_connections():
    drain = 3
    s = Server("--drain-timeout", str(drain))
    stop = threading.Event()
    socks = []
    try:
        def trickle():
            c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
            socks.append(c)
            head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
            for i in range(len(head)):  # one byte a second, at most 100 s: outlasts the test
                if stop.is_set():
                    return
                try:
                    c.send(head[i:i + 1])
                except OSError:
                    return  # the server closed it
                stop.wait(1)

        threads = [threading.Thread(target=trickle, daemon=True) for _ in range(3)]
        for t in threads:
            t.start()
        idle = socket.create_connection(("127.0.0.1", s.port), timeout=30)  # answered, then idle
        socks.append(idle)
        idle.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"200" in idle.recv(4096).split(b"\r\n")[0]
        half = socket.create_connection(("127.0.0.1", s.port), timeout=30)  # body stops halfway
        socks.append(half)
        half.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"a")
        time.sleep(2)
        t0 = time.time()
        r = requests.post(s.url + "/v1/chat/completions", timeout=120,
                          json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                                "max_tokens": 3})
        print(f"a chat request during the attack took {time.time() - t0:.2f} s")
        assert r.status_code == 200, r.text
        assert any(t.is_alive() for t in threads), "the attack outlasted the request"
        t0 = time.time()
        s.proc.send_signal(signal.SIGTERM)
        try:
            rc = s.proc.wait(drain + 10)
        except subprocess.TimeoutExpired:
            raise AssertionError("SIGTERM did not end the server: open connections held it")
        print(f"exited {time.time() - t0:.2f} s after SIGTERM")
        assert rc == 0, s.output()[-2000:]
    finally:
        stop.set()
        for c in socks:
            c.close()
        s.stop()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s", "-p", "no:cacheprovider"]))
