#!/usr/bin/env python3
"""`myriad generate --speculative eagle3 --draft-model DIR` from the command line, on the golden
target moonlight_plain with the EAGLE3 goldens' drafts (tests/goldens_eagle3, unpacked into the
build folder): greedy ids equal those without speculation at --tp 1 and 2, batched and with K 1
and 3, and the speculative summary line counts drafts; --speculative eagle3 without --draft-model,
--draft-model without eagle3 and a draft folder without config.json exit 2 naming the flag or file,
as does `serve` given the same flags.

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_generate_eagle3.py
"""

import os
import re
import subprocess
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
BUILD = os.path.dirname(BINARY)
TARGET = os.path.join(BUILD, "goldens", "moonlight_plain")
DRAFTS = [os.path.join(BUILD, "goldens_eagle3", n) for n in ("moonlight_a", "moonlight_b")]
PROMPT = "5,9,33,120,7,7,8,200,31"


def generate(*extra):
    cmd = [BINARY, "generate", TARGET, "--prompt-ids", PROMPT, "--max-tokens", "20",
           "--temperature", "0", "--ids", "--threads", "2", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.parametrize("tp", ["1", "2"])
@pytest.mark.parametrize("k", ["1", "3"])
def test_greedy_ids_unchanged(draft, tp, k):
    plain = generate("--tp", tp, "-n", "2")
    assert plain.returncode == 0, plain.stderr
    spec = generate("--tp", tp, "-n", "2", "--speculative", "eagle3", "--draft-model", draft,
                    "--num-speculative-tokens", k)
    assert spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    m = re.search(r"speculative \(eagle3\): (\d+) drafts, (\d+) draft tokens", spec.stderr)
    assert m, spec.stderr
    assert int(m.group(1)) > 0 and int(m.group(2)) > 0


def test_flags_refused_by_name():
    r = generate("--speculative", "eagle3")
    assert r.returncode == 2 and "--draft-model" in r.stderr, (r.returncode, r.stderr)
    r = generate("--speculative", "ngram", "--draft-model", DRAFTS[0])
    assert r.returncode == 2 and "--draft-model" in r.stderr, (r.returncode, r.stderr)
    with tempfile.TemporaryDirectory() as empty:
        r = generate("--speculative", "eagle3", "--draft-model", empty)
        assert r.returncode == 2 and "config.json" in r.stderr, (r.returncode, r.stderr)
        s = subprocess.run([BINARY, "serve", TARGET, "--port", "0", "--speculative", "eagle3",
                            "--draft-model", empty], capture_output=True, text=True, timeout=120)
        assert s.returncode == 2 and "config.json" in s.stderr, (s.returncode, s.stderr)
    assert r.stdout == ""


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
