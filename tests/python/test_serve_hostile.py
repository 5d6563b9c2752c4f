#!/usr/bin/env python3
"""`myriad serve` against hostile or sloppy HTTP clients (loopback only, bounded in time).

A chunked body cannot pass --max-request-bytes (it used to be buffered whole); ambiguous framing
(two Content-Length headers, Content-Length beside Transfer-Encoding: request smuggling behind a
proxy) is refused with 400; a URL over 8 KB is a 414 of type invalid_request_error; the
Authorization scheme is case-insensitive (RFC 7235); pipelined requests are answered in order;
SIGTERM exits within the drain timeout although connections trickle header bytes, sit idle or
stop halfway through a body.

Each attack also runs against a server of its own (`hold_under_attack`): the attack goes on in
the background (repeated, or lasting) while a normal client asks /health and a small
/v1/completions, which must answer while the attack still runs (their latency is printed, not
asserted); then SIGTERM must end the server within the drain timeout, the attack still running.

Run: build/venv/bin/python tests/python/test_serve_hostile.py   (MYRIAD_BINARY = myriad)
"""

import json
import os
import select
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
DRAIN = 5  # --drain-timeout of the attacked servers
TRICKLERS = 400


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


# --- every attack against a server of its own, with a normal client beside it ----------------


def hold_under_attack(attack, flags=(), headers=None, still_running=None):
    """Runs attack(server, stop) in a loop on a thread (each call one round, or a lasting attack
    that returns when `stop` is set; it raises on a wrong answer) against a fresh server. Once a
    round has started, /health and a small /v1/completions must answer while the attack is still
    running (`still_running(server)`, default: the attack thread is alive); then SIGTERM must end
    the server within the drain timeout, the attack still on. Returns the server's output."""
    s = Server("--drain-timeout", str(DRAIN), *flags)
    stop = threading.Event()
    terminating = threading.Event()
    errors, rounds = [], [0]

    def loop():
        while not stop.is_set():
            try:
                attack(s, stop)
            except Exception as e:  # noqa: BLE001 - reported below
                if not terminating.is_set() and not stop.is_set():
                    errors.append(repr(e))
                    return
            rounds[0] += 1

    t = threading.Thread(target=loop, daemon=True)
    try:
        t.start()
        started = getattr(attack, "started", None)  # a lasting attack says when it is on
        if started:
            assert started.wait(120), "the attack did not start"
        else:
            deadline = time.time() + 120
            while rounds[0] == 0 and t.is_alive() and time.time() < deadline:
                time.sleep(0.05)
        time.sleep(0.5)
        assert not errors, errors
        t0 = time.time()
        r = requests.get(s.url + "/health", timeout=120)
        t_health = time.time() - t0
        assert r.status_code == 200, r.text
        t0 = time.time()
        r = requests.post(s.url + "/v1/completions", timeout=120, headers=headers or {},
                          json={"model": MODEL, "prompt": "hi", "max_tokens": 3})
        t_completion = time.time() - t0
        assert r.status_code == 200, r.text
        print(f"during the attack ({rounds[0]} rounds so far): /health {t_health:.2f} s, "
              f"/v1/completions {t_completion:.2f} s")
        assert not errors, errors
        assert t.is_alive(), "the attack outlasted the normal requests"
        if still_running:
            assert still_running(s), "the attack outlasted the normal requests"
        terminating.set()
        t0 = time.time()
        s.proc.send_signal(signal.SIGTERM)
        try:
            rc = s.proc.wait(DRAIN + 10)
        except subprocess.TimeoutExpired:
            raise AssertionError("SIGTERM did not end the server during the attack")
        print(f"exited {time.time() - t0:.2f} s after SIGTERM (drain timeout {DRAIN} s)")
        assert rc == 0, s.output()[-2000:]
        assert t.is_alive() or rounds[0] > 0
        return s.output()
    finally:
        stop.set()
        t.join(30)
        s.stop()


class Tricklers:
    """`count` connections sending a request header one byte a second each (one thread for all);
    a connection the server closes is opened again, so the attack lasts until stopped."""

    def __init__(self, count):
        self.count = count
        self.started = threading.Event()
        self.socks = []
        self.reopened = 0

    def open(self, server):
        c = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        c.setblocking(False)
        return [c, 0]

    def __call__(self, server, stop):
        head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
        self.socks = [self.open(server) for _ in range(self.count)]
        self.started.set()
        try:
            while not stop.is_set():
                for i, entry in enumerate(self.socks):
                    c, sent = entry
                    try:
                        if c.recv(4096, socket.MSG_PEEK) == b"":
                            raise ConnectionError("closed by the server")
                    except BlockingIOError:
                        pass
                    except OSError:
                        c.close()
                        self.reopened += 1
                        if stop.is_set():
                            return
                        self.socks[i] = self.open(server)
                        continue
                    try:
                        c.send(head[sent % len(head):sent % len(head) + 1])
                        entry[1] = sent + 1
                    except (BlockingIOError, OSError):
                        pass
                stop.wait(1)
        finally:
            for c, _ in self.socks:
                c.close()

    def open_now(self):
        n = 0
        for c, _ in list(self.socks):
            try:
                if c.recv(1, socket.MSG_PEEK) != b"":
                    n += 1
            except BlockingIOError:
                n += 1
            except OSError:
                pass
        return n


def test_400_trickling_connections_starve_nobody():
    attack = Tricklers(TRICKLERS)
    hold_under_attack(attack, still_running=lambda s: attack.open_now() >= TRICKLERS * 9 // 10)
    print(f"{attack.reopened} trickling connections were closed and opened again")


def test_connection_cap_drops_the_oldest_half_read():
    cap = 100
    attack = Tricklers(TRICKLERS)

    def dropped_and_still_running(_server):
        # The attack notices a closed connection on its next pass (once a second); the cap
        # itself acts as the connections arrive.
        deadline = time.time() + 60
        while attack.reopened < TRICKLERS - cap and time.time() < deadline:
            time.sleep(0.1)
        return attack.open_now() > 0

    out = hold_under_attack(attack, flags=("--max-connections", str(cap)),
                            still_running=dropped_and_still_running)
    print(f"{attack.reopened} trickling connections were closed and opened again")
    assert attack.reopened >= TRICKLERS - cap, "the cap held: old connections were closed"
    assert f"(--max-connections {cap})" in out


class ChunkedFlood:
    """Rounds of a 512 MB chunked body, 64 KiB chunks as fast as the server takes them; each
    must end in 413 (--max-request-bytes) long before its end. The server's RSS is sampled
    after every chunk."""

    TOTAL = 512 << 20

    def __init__(self):
        self.rss0_kb = None
        self.peak_kb = 0
        self.refused = 0

    def __call__(self, server, stop):
        if self.rss0_kb is None:
            self.rss0_kb = server.rss_kb()
        chunk = b"10000\r\n" + b"a" * 65536 + b"\r\n"
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
            s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\n" + auth() +
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            sent = 0
            answer = b""
            while sent < self.TOTAL and not stop.is_set():
                if select.select([s], [], [], 0)[0]:
                    answer = s.recv(65536)
                    break
                try:
                    s.sendall(chunk)
                except OSError:
                    break  # closed after its answer: read it below
                sent += 65536
                if sent % (1 << 20) == 0:
                    self.peak_kb = max(self.peak_kb, server.rss_kb())
            if stop.is_set() and not answer:
                return
            try:
                s.settimeout(30)
                while b"\r\n\r\n" not in answer:
                    more = s.recv(65536)
                    if not more:
                        break
                    answer += more
            except OSError:
                pass
        assert sent < self.TOTAL, "the whole 512 MB body was taken"
        if answer:  # (a reset may eat the answer; most rounds read it)
            assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
            self.refused += 1


def test_chunked_512mb_body_is_refused_without_buffering():
    limit = 8 << 20
    attack = ChunkedFlood()
    hold_under_attack(attack, flags=("--api-key", KEY, "--max-request-bytes", str(limit)),
                      headers={"Authorization": f"Bearer {KEY}"},
                      still_running=lambda s: attack.refused > 0)
    grown = (attack.peak_kb - attack.rss0_kb) >> 10
    print(f"{attack.refused} bodies of 512 MB refused with 413; RSS grew at most {grown} MiB")
    assert grown < 160, "a chunked body was buffered past the limit"


def pipelined(server, stop):
    """Three requests in one write; the three answers must come back in their order."""
    prompts = ["one", "two two", "three three three"]
    reqs = b""
    for p in prompts:
        body = json.dumps({"model": MODEL, "prompt": p}).encode()
        reqs += (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(reqs)
        f = s.makefile("rb")
        counts = []
        for _ in prompts:
            status = f.readline()
            assert status.startswith(b"HTTP/1.1 200"), status
            length = 0
            while (line := f.readline()) not in (b"\r\n", b""):
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            counts.append(json.loads(f.read(length))["count"])
    assert counts == sorted(counts) and len(set(counts)) == 3, counts


def test_pipelined_requests_are_answered_in_order():
    hold_under_attack(pipelined)


def conflicting_lengths(server, stop):
    good = json.dumps({"model": MODEL, "prompt": "hi"}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                  b"Content-Length: %d\r\n\r\n" % (len(good), len(good) + 30) + good)
        data = b""
        while b"\r\n\r\n" not in data:
            more = s.recv(65536)
            assert more, "closed without an answer"
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), head
        assert b"connection: close" in head.lower(), head
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += s.recv(65536)
        assert json.loads(body)["error"]["type"] == "invalid_request_error"
        assert s.recv(65536) == b"", "the connection was not closed"


def test_conflicting_content_lengths_are_refused():
    hold_under_attack(conflicting_lengths)


def long_url(server, stop):
    status, text = raw(server, b"GET /v1/models?x=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414, text
    assert json.loads(text)["error"]["type"] == "invalid_request_error"
    status, text = raw(server, b"GET /v1/models?x=" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n")
    assert status == 414, text
    status, text = raw(server, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 +
                       b"\r\n\r\n")
    assert status == 431, text
    assert json.loads(text)["error"]["type"] == "invalid_request_error"


def test_long_url_is_414_during_an_attack():
    hold_under_attack(long_url)


def lower_case_bearer(server, stop):
    r = requests.get(server.url + "/v1/models", headers={"authorization": f"bearer {KEY}"},
                     timeout=60)
    assert r.status_code == 200, r.text
    r = requests.get(server.url + "/v1/models", headers={"authorization": f"bearer {KEY}x"},
                     timeout=60)
    assert r.status_code == 401, r.text


def test_lower_case_bearer_is_accepted_during_an_attack():
    hold_under_attack(lower_case_bearer, flags=("--api-key", KEY),
                      headers={"authorization": f"bearer {KEY}"})


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s", "-p", "no:cacheprovider"]))
