#!/usr/bin/env python3
"""`myriad generate --speculative mtp` from the command line, on the MTP golden checkpoint
(tests/goldens_mtp/v3_mtp, unpacked into the build folder): greedy ids equal those without
speculation at --tp 1 and 2, batched and with K 1 and 3, and the speculative summary line counts
drafts; a checkpoint without MTP layers exits 2 naming num_nextn_predict_layers and the flag.

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_generate_mtp.py
"""

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
MTP = os.path.join(os.path.dirname(BINARY), "goldens_mtp", "v3_mtp")
NO_MTP = os.path.join(os.path.dirname(BINARY), "goldens", "kimi_k2")
PROMPT = "5,9,33,120,7,7,8,200,31"


def generate(model, *extra):
    cmd = [BINARY, "generate", model, "--prompt-ids", PROMPT, "--max-tokens", "20",
           "--temperature", "0", "--ids", "--threads", "2", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("tp", ["1", "2"])
@pytest.mark.parametrize("k", ["1", "3"])
def test_greedy_ids_unchanged(tp, k):
    plain = generate(MTP, "--tp", tp, "-n", "2")
    assert plain.returncode == 0, plain.stderr
    spec = generate(MTP, "--tp", tp, "-n", "2", "--speculative", "mtp",
                    "--num-speculative-tokens", k)
    assert spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    m = re.search(r"speculative \(mtp\): (\d+) drafts, (\d+) draft tokens", spec.stderr)
    assert m, spec.stderr
    assert int(m.group(1)) > 0 and int(m.group(2)) > 0


def test_checkpoint_without_mtp_layers_refused():
    r = generate(NO_MTP, "--speculative", "mtp")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "num_nextn_predict_layers" in r.stderr and "--speculative mtp" in r.stderr, r.stderr
    assert r.stdout == ""


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
