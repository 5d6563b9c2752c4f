"""The run plan serve prints at start (`serve --json`: one JSON line on stdout) is the object
`myriad plan MODEL --json` prints under "run" for the same flags, field by field (the all-reduce
crossovers serve measures on GPUs aside); serve then runs it: /v1/models reports its
max_model_len and /metrics its KV blocks. CPU here; tests/gpu has the GPU variant.

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python -m pytest -q tests/python/test_run_plan.py
"""

import json
import os
import subprocess
import time

import pytest
import requests

import serve_process
from test_serve import BINARY, REPO, free_port

MODEL_DIR = os.path.join(REPO, "models", "myriad-tiny")
MEASURED = ("measured_two_shot_from", "measured")


def plan_run(flags):
    r = subprocess.run([BINARY, "plan", MODEL_DIR, "--json", *flags], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["run"]


def serve_plan(flags):
    """Starts serve with `flags`, reads the plan line, waits for ready, returns (plan, metrics,
    /v1/models entry); the server is stopped."""
    port = free_port()
    proc = serve_process.spawn([BINARY, "serve", MODEL_DIR, "--port", str(port), "--json",
                                *flags], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline()
        assert line, "serve printed no plan"
        plan = json.loads(line)
        url = f"http://127.0.0.1:{port}"
        serve_process.wait_healthy(proc, url)
        models = requests.get(url + "/v1/models", timeout=60).json()["data"][0]
        metrics = {}
        for m in requests.get(url + "/metrics", timeout=60).text.splitlines():
            if m and not m.startswith("#"):
                name, value = m.rsplit(" ", 1)
                metrics[name] = float(value)
        return plan, metrics, models
    finally:
        serve_process.stop(proc)


def without_measured(plan):
    p = json.loads(json.dumps(plan))
    for k in MEASURED:
        p["all_reduce"].pop(k)
    return p


@pytest.mark.parametrize("flags", [
    ["--device", "cpu", "--threads", "2"],
    ["--device", "cpu", "--threads", "2", "--tp", "2", "--max-num-seqs", "8",
     "--max-num-batched-tokens", "512", "--max-model-len", "4096", "--kv-cache-memory", "64MiB",
     "--kv-cache-dtype", "bf16"],
])
def test_serve_runs_the_plan_that_plan_prints(flags):
    served, metrics, models = serve_plan(flags)
    planned = plan_run(flags)
    assert served.keys() == planned.keys()
    for key in served:
        if key != "all_reduce":
            assert served[key] == planned[key], key
    assert without_measured(served) == without_measured(planned)
    # What runs is what was planned.
    assert models["max_model_len"] == served["max_model_len"]
    assert metrics["myriad_kv_blocks_total"] == served["kv_blocks"]
    if "--max-model-len" in flags:
        assert served["max_model_len"] == 4096 and served["kv_cache_dtype"] == "bf16"
        assert served["tp"] == 2 and served["layout"] == "TP=2"
        assert served["kv_blocks"] == (64 << 20) // 2 // (16 * served["per_rank"]["kv_bytes_per_token"])


def test_impossible_combinations_stop_before_loading():
    """Each exits 2 with the reason and the nearest configuration; plan's run says the same."""
    cases = [
        (["--max-model-len", "99999999"], "Nearest that works: --max-model-len"),
        (["--kv-cache-memory", "1MiB"], "Nearest that works: --max-model-len"),
        (["--tp", "64"], "--tp"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    ]
    for flags, want in cases:
        start = time.time()
        r = subprocess.run([BINARY, "serve", MODEL_DIR, "--port", "0", "--device", "cpu", *flags],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2, (flags, r.stderr)
        assert want in r.stderr, (flags, r.stderr)
        assert "serving" not in r.stderr and "warm-up" not in r.stderr
        p = subprocess.run([BINARY, "plan", MODEL_DIR, "--json", "--device", "cpu", *flags],
                           capture_output=True, text=True, timeout=300)
        if p.returncode == 0:
            run = json.loads(p.stdout)["run"]
            assert "error" in run and run["error"] in r.stderr, (flags, run, r.stderr)
        else:
            assert p.returncode == 2 and want in p.stderr, (flags, p.stderr)
        print(flags, f"{time.time() - start:.1f} s")
