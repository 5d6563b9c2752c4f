"""Loading at the speed of the disk, as the user sees it: serve's progress while it reads the
weights (plain lines when stderr is a file; one bar redrawn with \\r on a terminal, here a pty;
nothing under --quiet; STATUS= datagrams to $NOTIFY_SOCKET for systemd), the load-rate line
against the disk's rate, the start-up breakdown (log line, --json line, /metrics), and
`myriad inspect --read-speed`. The bytes the shard reader reads are checked against the
safetensors header computed here: every tensor's bytes, page-aligned, nothing more.

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python -m pytest -q tests/python/test_load_progress.py
"""

import json
import os
import pty
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest
import requests

import serve_process
from test_serve import BINARY, REPO, free_port

MODEL_DIR = os.path.join(REPO, "models", "myriad-tiny")
SHARDED = os.path.join(os.path.dirname(BINARY), "goldens", "kimi_k2")  # index + 2 shards
PAGE = os.sysconf("SC_PAGE_SIZE")
PROGRESS = re.compile(r"reading weights: (\[[# ]+\] )?([\d.]+ [kMG]?B) / ([\d.]+ [kMG]?B) "
                      r"\(([\d.]+)%\), [\d.]+ [kMG]?B/s, ETA \S+")
UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}
PHASES = ("planning", "reading", "copying", "warm_up", "graph_capture", "other", "total")


def size(text):
    v, u = text.split()
    return float(v) * UNITS[u]


def tensor_bytes_page_aligned(folder):
    """The page-aligned union of every tensor's bytes in model.safetensors, from its header."""
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    start = 8 + n
    pages = set()
    for t in h.values():
        b, e = t["data_offsets"]
        if e > b:
            pages.update(range((start + b) // PAGE, (start + e - 1) // PAGE + 1))
    return len(pages) * PAGE, os.path.getsize(path)


def run_serve(extra, stderr, env=None, json_out=False):
    """Starts serve, waits for READY; returns (proc, url, stdout lines so far)."""
    port = free_port()
    args = [BINARY, *extra.get("global", []), "serve", MODEL_DIR, "--port", str(port),
            *extra.get("flags", [])]
    if json_out:
        args.append("--json")
    proc = serve_process.spawn(args, stdout=subprocess.PIPE if json_out else subprocess.DEVNULL,
                               stderr=stderr, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    serve_process.wait_healthy(proc, url)
    return proc, url


def read_file(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def test_plain_lines_load_rate_and_breakdown():
    with tempfile.TemporaryDirectory() as d:
        err = os.path.join(d, "stderr")
        with open(err, "wb") as f:
            proc, url = run_serve({"flags": ["--disk-read-rate", "0.5"]}, f, json_out=True,
                                  env={"MYRIAD_PROGRESS_INTERVAL": "0.01"})
        try:
            metrics = requests.get(url + "/metrics", timeout=60).text
            plan_line = proc.stdout.readline()
            startup_line = proc.stdout.readline()
        finally:
            serve_process.stop(proc)
        log = read_file(err)
    assert "\r" not in log and "\x1b[" not in log, "a terminal's redraw in a file"
    lines = [l for l in log.splitlines() if PROGRESS.search(l)]
    assert lines, log
    last = PROGRESS.search(lines[-1])
    assert last.group(1) is None  # no bar off a terminal
    assert last.group(4) == "100.0" and last.group(2) == last.group(3), lines[-1]
    # What was read: every tensor's bytes, page-aligned, once; not more than the file.
    want, file_size = tensor_bytes_page_aligned(MODEL_DIR)
    assert abs(size(last.group(3)) - want) <= 0.051 * want, (lines[-1], want)
    rate = re.search(r"load rate: ([\d.]+) GB of the files read once in ([\d.]+) s: ([\d.]+) "
                     r"GB/s, (\d+)% of the disk's 0\.50 GB/s \(--disk-read-rate\)", log)
    assert rate, log
    assert abs(float(rate.group(1)) * 1e9 - want) <= 0.006e9 + 0.01 * want
    assert float(rate.group(3)) > 0
    startup = re.search(r"startup: (.*)", log)
    assert startup, log
    for p in PHASES:
        assert re.search(rf"\b{p} [\d.]+ s", startup.group(1)), startup.group(1)
    assert "the disk reads 0.50 GB/s" in startup.group(1)
    # The same breakdown as JSON after the plan line, and in /metrics.
    assert json.loads(plan_line)
    j = json.loads(startup_line)["startup"]
    assert j["bytes_read"] == want
    parts = sum(j[p + "_s"] for p in PHASES if p != "total")
    assert abs(parts - j["total_s"]) < 1e-3 + 1e-6 * j["total_s"], j
    assert j["disk_read_gb_per_s"] == 0.5
    seen = dict(re.findall(r'myriad_startup_seconds\{phase="(\w+)"\} ([\d.]+)', metrics))
    assert set(PHASES) <= set(seen), metrics
    assert abs(float(seen["total"]) - j["total_s"]) < 2e-3


def test_terminal_bar_redrawn_in_place():
    master, slave = pty.openpty()
    out = []

    def drain():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            out.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc, url = run_serve({"flags": ["--disk-read-rate", "0"]}, slave)
    os.close(slave)
    try:
        requests.get(url + "/health", timeout=60)
    finally:
        serve_process.stop(proc)
    reader.join(30)
    os.close(master)
    text = b"".join(out).decode("utf-8", "replace")
    # Each redraw: carriage return, clear the line, the bar.
    draws = re.findall(r"\r\x1b\[K(reading weights: [^\r\n]*)", text)
    assert draws, text
    final = PROGRESS.search(draws[-1])
    assert final and final.group(1) and final.group(4) == "100.0", draws[-1]
    assert final.group(1) == "[" + "#" * 30 + "] "
    # --disk-read-rate 0: no comparison, said so.
    assert re.search(r"load rate: .* GB/s, the disk's rate unknown", text), text


def test_quiet_prints_no_progress_and_systemd_gets_status():
    with tempfile.TemporaryDirectory() as d:
        sock_path = os.path.join(d, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        sock.settimeout(0.5)
        err = os.path.join(d, "stderr")
        with open(err, "wb") as f:
            proc, _ = run_serve({"global": ["--quiet"], "flags": ["--disk-read-rate", "0"]}, f,
                                env={"NOTIFY_SOCKET": sock_path})
        messages = []
        deadline = time.time() + 120
        try:
            while not any("READY=1" in m for m in messages) and time.time() < deadline:
                try:
                    messages.append(sock.recv(65536).decode())
                except socket.timeout:
                    pass
        finally:
            serve_process.stop(proc)
            sock.close()
        log = read_file(err)
    assert "reading weights" not in log, log
    status = [m for m in messages if m.startswith("STATUS=reading weights: ")]
    assert status, messages
    assert PROGRESS.search(status[-1]) and "(100.0%)" in status[-1], status
    assert messages.index(status[-1]) < [i for i, m in enumerate(messages) if "READY=1" in m][0]


def test_inspect_read_speed():
    r = subprocess.run([BINARY, "inspect", MODEL_DIR, "--read-speed"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"read speed +1 file\(s\), ([\d.]+) GB in ([\d.]+) s: ([\d.]+) GB/s sequential; "
                  r"(.+)", r.stdout)
    assert m, r.stdout
    _, file_size = tensor_bytes_page_aligned(MODEL_DIR)
    assert abs(float(m.group(1)) - file_size / 1e9) <= 0.0006, (m.group(1), file_size)
    assert float(m.group(3)) > 0
    assert ("page cache" in m.group(4)) or ("cold read" in m.group(4)), m.group(4)


def test_inspect_read_speed_names_a_missing_file():
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "model")
        shutil.copytree(SHARDED, copy)
        gone = "model-00002-of-00002.safetensors"
        os.remove(os.path.join(copy, gone))
        r = subprocess.run([BINARY, "inspect", copy, "--read-speed"], capture_output=True,
                           text=True, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert gone in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
