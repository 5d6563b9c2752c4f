#!/usr/bin/env python3
"""`myriad pull` and `myriad plan ORG/NAME` against a local mock hub (mock_hub.py) serving the
golden kimi_k2 checkpoint (two safetensors shards and an index) on the hub's API paths.

Every run must end with the files complete and verified (their sha256 against hashlib, the HF
cache layout: blobs/, snapshots/COMMIT links, refs/main), or fail with a clear error and leave no
corrupted file in the cache. Faults: a connection dropped mid-file, 500s, a slow answer, a
corrupted byte (once: fetched again; always: fails), a file that changes size, a kill mid-way.

Run: build/venv/bin/python tests/python/test_pull.py   (MYRIAD_BINARY = the myriad executable)
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_hub import COMMIT, MockHub  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
# A golden checkpoint as the build unpacks it (tests/CMakeLists.txt), beside the executable.
GOLDEN = os.path.join(os.path.dirname(BINARY), "goldens", "kimi_k2")
REPO_ID = "acme/kimi-tiny"


def golden_files():
    out = {}
    for name in sorted(os.listdir(GOLDEN)):
        if name == "reference.safetensors":
            continue
        with open(os.path.join(GOLDEN, name), "rb") as f:
            out[name] = f.read()
    return out


@pytest.fixture
def hub():
    h = MockHub(REPO_ID, golden_files())
    yield h
    h.close()


@pytest.fixture
def home():
    with tempfile.TemporaryDirectory() as d:
        yield d


def env_for(hub, home, **extra):
    env = dict(os.environ)
    env.update({"HF_ENDPOINT": hub.url, "HF_HOME": home, "MYRIAD_HUB_TIMEOUT": "1",
                "MYRIAD_HUB_RETRIES": "4", "MYRIAD_HUB_BACKOFF": "0.05",
                "MYRIAD_HUB_CHUNK": "65536", "MYRIAD_NVML_LIBRARY": "/nonexistent/libnvml.so"})
    env.pop("HF_TOKEN", None)
    env.pop("HF_HUB_CACHE", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(args, env, timeout=120):
    return subprocess.run([BINARY, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def cache_dir(home):
    return os.path.join(home, "hub", "models--acme--kimi-tiny")


def assert_complete(hub, home):
    """The HF cache layout with every file present and equal to the hub's bytes."""
    repo = cache_dir(home)
    with open(os.path.join(repo, "refs", "main")) as f:
        assert f.read().strip() == COMMIT
    snap = os.path.join(repo, "snapshots", COMMIT)
    for path, data in hub.files.items():
        link = os.path.join(snap, path)
        assert os.path.islink(link), path
        target = os.readlink(link)
        etag = hub.sha256(path) if path in hub.lfs else hashlib.sha1(
            b"blob %d\0" % len(data) + data).hexdigest()
        assert target == "../../blobs/" + etag, target
        with open(link, "rb") as f:
            got = f.read()
        assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest(), path
    leftovers = [n for n in os.listdir(os.path.join(repo, "blobs")) if "incomplete" in n]
    assert leftovers == []


def assert_no_corrupt_blob(hub, home):
    """Whatever is in blobs/ (not .incomplete) has the checksum of its name."""
    blobs = os.path.join(cache_dir(home), "blobs")
    if not os.path.isdir(blobs):
        return
    for name in os.listdir(blobs):
        if "incomplete" in name:
            continue
        with open(os.path.join(blobs, name), "rb") as f:
            data = f.read()
        assert name in (hashlib.sha256(data).hexdigest(),
                        hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()), name


def test_pull_complete_layout_and_plan(hub, home):
    r = run(["pull", REPO_ID, "--gpus", "1x80GB", "--jobs", "4"], env_for(hub, home))
    assert r.returncode == 0, r.stderr + r.stdout
    assert_complete(hub, home)
    assert "chosen       TP=1" in r.stdout, r.stdout  # the plan ran first
    assert "verified" in r.stdout
    # Shards were fetched in several ranges (the chunk is 64 KiB; the shards are ~700 kB).
    ranges = [q for q in hub.requests if q[2] and "/cdn/" in q[1]]
    assert len(ranges) > 10
    # A second pull finds everything complete and fetches no file bytes.
    hub.served.clear()
    r = run(["pull", REPO_ID, "--no-plan"], env_for(hub, home))
    assert r.returncode == 0, r.stderr
    assert sum(hub.served.values()) == 0
    assert f"{len(hub.files)} already complete" in r.stdout


def test_model_argument_resolves_through_the_cache(hub, home):
    assert run(["pull", REPO_ID, "--no-plan"], env_for(hub, home)).returncode == 0
    hub.close()  # from here on nothing is fetched: the cache answers
    env = env_for(hub, home)
    for name in (REPO_ID, f"{REPO_ID}@main", f"{REPO_ID}@{COMMIT}"):
        r = run(["inspect", name], env)
        assert r.returncode == 0, r.stderr
        assert os.path.join(cache_dir(home), "snapshots", COMMIT) in r.stdout
    r = run(["plan", REPO_ID, "--gpus", "1x80GB", "--json"], env)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["weights"]["source"] == "safetensors headers"
    r = run(["inspect", f"{REPO_ID}@nope"], env)
    assert r.returncode == 2


def test_plan_from_the_hub_fetches_only_headers(hub, home):
    r = run(["plan", REPO_ID, "--gpus", "1x80GB", "--json"], env_for(hub, home))
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    # The sum of the shards' tensors, computed here from the headers with the safetensors layout.
    total = 0
    for path, data in hub.files.items():
        if path.endswith(".safetensors"):
            n = int.from_bytes(data[:8], "little")
            header = json.loads(data[8:8 + n])
            total += sum(v["data_offsets"][1] - v["data_offsets"][0]
                         for k, v in header.items() if k != "__metadata__")
    assert plan["weights"]["total_bytes"] == total
    assert plan["weights"]["config_total_bytes"] == total
    assert plan["chosen"]["tp"] == 1
    # Only headers: every content request was a range well short of the shard.
    for method, path, rng in hub.requests:
        if "/cdn/" in path:
            assert rng is not None
    served = sum(hub.served.values())
    shards = sum(len(d) for p, d in hub.files.items() if p.endswith(".safetensors"))
    assert served < shards


def test_pull_stops_when_nothing_fits(hub, home):
    r = run(["pull", REPO_ID, "--gpus", "1x1MB"], env_for(hub, home))
    assert r.returncode == 2
    assert "no layout fits" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(cache_dir(home), "snapshots"))


def test_pull_without_gpus_warns(hub, home):
    r = run(["pull", REPO_ID], env_for(hub, home))
    assert r.returncode == 0, r.stderr
    assert "downloading without checking" in r.stderr
    assert_complete(hub, home)


@pytest.mark.parametrize("fault", ["drop", "errors", "slow"])
def test_transient_faults_are_retried(hub, home, fault):
    for path in hub.files:
        hub.faults[fault][path] = 2
    r = run(["pull", REPO_ID, "--no-plan", "--jobs", "3"], env_for(hub, home))
    assert r.returncode == 0, r.stderr
    assert_complete(hub, home)
    assert all(n == 0 for n in hub.faults[fault].values()), "every fault was met"


def test_corrupted_byte_is_fetched_again(hub, home):
    shard = "model-00001-of-00002.safetensors"
    hub.faults["corrupt"][shard] = 1
    r = run(["pull", REPO_ID, "--no-plan"], env_for(hub, home))
    assert r.returncode == 0, r.stderr
    assert "sha256 mismatch" in r.stderr
    assert_complete(hub, home)


def test_corruption_every_time_fails_and_keeps_nothing(hub, home):
    shard = "model-00002-of-00002.safetensors"
    hub.faults["corrupt"][shard] = -1
    r = run(["pull", REPO_ID, "--no-plan"], env_for(hub, home))
    assert r.returncode == 1
    assert "sha256 mismatch twice" in r.stderr and shard in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(cache_dir(home), "blobs", hub.sha256(shard)))
    assert not os.path.exists(os.path.join(cache_dir(home), "snapshots", COMMIT, shard))
    assert_no_corrupt_blob(hub, home)


def test_file_that_changes_size_fails_clearly(hub, home):
    shard = "model-00001-of-00002.safetensors"
    hub.faults["resize"][shard] = 10
    r = run(["pull", REPO_ID, "--no-plan"], env_for(hub, home))
    assert r.returncode == 1
    assert "changed on the hub" in r.stderr, r.stderr
    blobs = os.path.join(cache_dir(home), "blobs")
    assert not any(n.startswith(hub.sha256(shard)) for n in os.listdir(blobs)), "nothing kept"
    assert not os.path.exists(os.path.join(cache_dir(home), "snapshots", COMMIT, shard))
    assert_no_corrupt_blob(hub, home)


def test_unreachable_after_retries_fails_clearly(hub, home):
    for path in hub.files:
        hub.faults["errors"][path] = -1
    r = run(["pull", REPO_ID, "--no-plan"], env_for(hub, home))
    assert r.returncode == 1
    assert "failed after 4 retries: HTTP 500" in r.stderr, r.stderr
    assert_no_corrupt_blob(hub, home)


def test_a_hub_that_does_not_answer_is_named_at_once(home):
    """A hub that accepts the connection and never answers: pull says what it waits for after
    a second, not only when its timeout ends (here 60 s, so the notice cannot be the error)."""
    import socket
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        env = dict(os.environ, HF_ENDPOINT=url, HF_HOME=home, MYRIAD_HUB_TIMEOUT="60",
                   MYRIAD_HUB_RETRIES="1")
        env.pop("HF_TOKEN", None)
        start = time.time()
        p = subprocess.Popen([BINARY, "pull", REPO_ID, "--no-plan"], env=env,
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        try:
            line = p.stderr.readline()
            waited = time.time() - start
        finally:
            p.kill()
            p.wait()
    assert f"waiting for {url} to answer (the file list of {REPO_ID}" in line, line
    assert "MYRIAD_HUB_TIMEOUT" in line, line
    # About a second; far less than the timeout even on a loaded machine.
    assert 0.9 < waited < 30, waited


def test_unknown_repo_and_revision(hub, home):
    r = run(["pull", "acme/nothing", "--no-plan"], env_for(hub, home))
    assert r.returncode == 2 and "HF_TOKEN" in r.stderr, r.stderr
    r = run(["pull", REPO_ID + "@v9", "--no-plan"], env_for(hub, home))
    assert r.returncode == 2 and "revision not found" in r.stderr, r.stderr


def test_token_goes_to_the_hub_only(hub, home):
    r = run(["pull", REPO_ID, "--no-plan", "--include", "*.json"],
            env_for(hub, home, HF_TOKEN="hf_secret"))
    assert r.returncode == 0, r.stderr
    api = [a for p, a in hub.auth if p.startswith("/api/")]
    assert api and all(a == "Bearer hf_secret" for a in api)
    # Only json files were selected.
    snap = os.path.join(cache_dir(home), "snapshots", COMMIT)
    assert sorted(os.listdir(snap)) == sorted(p for p in hub.files if p.endswith(".json"))


def test_free_space_check(hub, home):
    # A hub whose file claims more bytes than any disk has: refused before anything is written.
    big = MockHub("acme/huge", {"config.json": b"{}"})
    try:
        big.files["weights.safetensors"] = b""
        big.lfs.add("weights.safetensors")
        orig = big.siblings

        def siblings():
            s = orig()
            for x in s:
                if x["rfilename"] == "weights.safetensors":
                    x["size"] = x["lfs"]["size"] = 1 << 60
            return s
        big.siblings = siblings
        r = run(["pull", "acme/huge", "--no-plan"], env_for(big, home))
        assert r.returncode == 2
        assert "free in" in r.stderr, r.stderr
    finally:
        big.close()


def test_resume_after_kill(hub, home):
    env = env_for(hub, home)
    hub.faults["delay"] = 0.05
    p = subprocess.Popen([BINARY, "pull", REPO_ID, "--no-plan", "--jobs", "2"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    blobs = os.path.join(cache_dir(home), "blobs")
    deadline = time.time() + 60
    marked = 0
    while time.time() < deadline and marked < 4:
        time.sleep(0.05)
        for name in os.listdir(blobs) if os.path.isdir(blobs) else []:
            if name.endswith(".parts"):
                with open(os.path.join(blobs, name)) as f:
                    parts = f.read().split()
                if len(parts) == 4:
                    marked = max(marked, parts[3].count("1"))
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert marked >= 4, "the pull was not killed mid-way"
    before = sum(hub.served.values())
    hub.faults["delay"] = 0
    r = run(["pull", REPO_ID, "--no-plan"], env)
    assert r.returncode == 0, r.stderr
    assert_complete(hub, home)
    total = sum(len(d) for d in hub.files.values())
    fetched_again = sum(hub.served.values()) - before
    assert fetched_again <= total - marked * 65536, (fetched_again, total)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
