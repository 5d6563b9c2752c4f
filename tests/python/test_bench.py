#!/usr/bin/env python3
"""`myriad bench` against `myriad serve` on the shipped model, and `myriad serve`'s sd_notify
messages read from a unix datagram socket standing in for systemd's NOTIFY_SOCKET.

The bench figures are checked against what they are made of: the per-request timings of
--json recomputed with numpy (percentiles, throughput), the token counts against the requests'
max_tokens (ignore_eos makes them exact), and errors against a server that refuses.

Run: build/venv/bin/python tests/python/test_bench.py   (MYRIAD_BINARY = the myriad executable)
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
import requests

import serve_process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*flags, env=None):
    port = free_port()
    log = tempfile.TemporaryFile()  # not a pipe: nobody reads it while the server runs
    proc = serve_process.spawn([BINARY, "serve", "--port", str(port), "--threads", "2", *flags],
                               stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"

    def output():
        log.seek(0)
        return log.read().decode("utf-8", "replace")

    serve_process.wait_healthy(proc, url, output)
    return proc, url


@pytest.fixture(scope="module")
def server():
    proc, url = start_server()
    yield url
    serve_process.stop(proc)


def bench(*args):
    r = subprocess.run([BINARY, "bench", *args], capture_output=True, text=True, timeout=300)
    return r


def test_bench_figures_against_per_request_timings(server):
    r = bench(server, "--concurrency", "3", "--requests", "7", "--input-len", "12",
              "--output-len", "6", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["model"] == "myriad-tiny"  # the first of /v1/models
    assert j["completed"] == 7 and j["failed"] == 0 and j["errors"] == {}
    per = j["per_request"]
    assert len(per) == 7 and all(q["ok"] for q in per)
    assert all(q["completion_tokens"] == 6 for q in per)
    assert j["output_tokens"] == 42
    assert j["input_tokens"] == sum(q["prompt_tokens"] for q in per) > 0
    ttft = np.array([q["ttft_s"] for q in per])
    lat = np.array([q["latency_s"] for q in per])
    itl = np.concatenate([q["itl_s"] for q in per])
    tpot = (lat - ttft) / 5
    for name, values in (("ttft_s", ttft), ("e2e_latency_s", lat), ("itl_s", itl),
                         ("tpot_s", tpot)):
        for p in (50, 90, 99):
            assert j[name][f"p{p}"] == pytest.approx(np.percentile(values, p), rel=1e-9,
                                                     abs=1e-12), (name, p)
        assert j[name]["mean"] == pytest.approx(values.mean(), rel=1e-9)
    assert (ttft > 0).all() and (lat >= ttft).all()
    # One gap between successive chunks with text (a chunk may hold back an incomplete UTF-8
    # character, so there may be fewer chunks than tokens).
    assert len(itl) == sum(q["chunks"] - 1 for q in per)
    assert all(1 <= q["chunks"] <= 6 for q in per)
    assert j["request_throughput"] == pytest.approx(7 / j["duration_s"], rel=1e-9)
    assert j["output_throughput"] == pytest.approx(42 / j["duration_s"], rel=1e-9)
    assert j["duration_s"] >= lat.max()


def test_bench_table_dataset_chat_and_rate(server):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(json.dumps({"prompt": "hello there", "max_tokens": 3}) + "\n")
        f.write(json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
                + "\n")
        path = f.name
    try:
        r = bench(server, "--endpoint", "chat", "--dataset", path, "--requests", "4",
                  "--request-rate", "20", "--json")
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)
        assert [q["completion_tokens"] for q in j["per_request"]] == [3, 4, 3, 4]
        assert j["request_rate"] == 20
        r = bench(server, "--requests", "2", "--output-len", "3", "--input-len", "4")
        assert r.returncode == 0, r.stderr
        for word in ("TTFT", "TPOT", "ITL", "p50", "p90", "p99", "output tokens/s",
                     "2 completed, 0 failed"):
            assert word in r.stdout, r.stdout
    finally:
        os.unlink(path)


def test_bench_counts_errors(server):
    r = bench(server, "--model", "no-such-model", "--requests", "3", "--json")
    assert r.returncode == 1
    j = json.loads(r.stdout)
    assert j["failed"] == 3 and j["completed"] == 0
    (err, n), = j["errors"].items()
    assert n == 3 and "HTTP 404" in err
    r = bench(f"http://127.0.0.1:{free_port()}", "--model", "m", "--requests", "2")
    assert r.returncode == 1 and "2 failed" in r.stdout
    r = bench("not-a-url")
    assert r.returncode == 2 and "URL" in r.stderr


def test_serve_speaks_sd_notify():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(60)
        env = dict(os.environ, NOTIFY_SOCKET=path)
        proc, url = start_server(env=env)
        try:
            messages = []
            while not any("READY=1" in m for m in messages):
                messages.append(sock.recv(4096).decode())
            statuses = [m for m in messages if m.startswith("STATUS=")]
            # The load phases (the warm-up step, and its status, only on a GPU backend).
            assert statuses and any("loading weights" in m for m in statuses), messages
            ready = [m for m in messages if "READY=1" in m][0]
            assert "STATUS=serving myriad-tiny" in ready
            # READY=1 came after every loading status.
            assert messages.index(ready) == len(messages) - 1
            assert requests.get(url + "/health").status_code == 200
            proc.send_signal(signal.SIGTERM)
            stopping = sock.recv(4096).decode()
            assert stopping.startswith("STOPPING=1"), stopping
            assert proc.wait(120) == 0
        finally:
            serve_process.kill(proc)
            sock.close()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
