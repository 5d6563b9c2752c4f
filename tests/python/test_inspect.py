#!/usr/bin/env python3
"""`myriad inspect`'s figures against the same figures computed here from the safetensors header:
the tensor count and total, the count and bytes per dtype, and the bytes one tensor-parallel rank
holds at --tp 1, 2 and 4 (sharded and replicated), for the shipped model and for the Kimi-K2.5
golden checkpoint (text model under `language_model.`, vision tensors beside it).

The sharding rule is issue 2's (design.md): attention heads (q_proj/q_b_proj, kv_b_proj, o_proj),
the MLP intermediate dimension (gate/up/down_proj of dense, shared and routed experts) and the
vocabulary (embed_tokens, lm_head) are split evenly over the ranks; everything else (norms,
q_a/kv_a projections, the router and its bias) is replicated on every rank. Tensors the text
model does not use (vision_tower.*, mm_projector.*) are on no rank.

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_inspect.py
"""

import json
import os
import re
import struct
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("MYRIAD_BINARY", os.path.join(REPO, "build", "myriad"))
SHIPPED = os.path.join(REPO, "models", "myriad-tiny")
KIMI_K25 = os.path.join(os.path.dirname(BINARY), "goldens", "kimi_k25")

SHARDED = re.compile(r"(self_attn\.(q_proj|q_b_proj|kv_b_proj|o_proj)"
                     r"|mlp\.(.*\.)?(gate|up|down)_proj)\.weight$"
                     r"|^(model\.embed_tokens|lm_head)\.weight$")
UNUSED = ("vision_tower.", "mm_projector.")


def header(folder):
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h


def nbytes(entry):
    begin, end = entry["data_offsets"]
    return end - begin


def human(b):
    """The unit ladder inspect prints: two decimals of B, KiB, MiB, GiB."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u = 0
    while b >= 1024 and u < 4:
        b /= 1024
        u += 1
    return f"{b:.2f} {units[u]}"


def inspect(folder, tp):
    p = subprocess.run([BINARY, "--quiet", "inspect", folder, "--tp", str(tp)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("folder", [SHIPPED, KIMI_K25], ids=["shipped", "kimi_k25"])
def test_tensor_count_and_bytes_by_dtype(folder):
    h = header(folder)
    out = inspect(folder, 1)
    total = sum(nbytes(e) for e in h.values())
    assert f"tensors      {len(h)} in 1 file(s), {human(total)}\n" in out, out
    by_dtype = {}
    for e in h.values():
        count, size = by_dtype.get(e["dtype"], (0, 0))
        by_dtype[e["dtype"]] = (count + 1, size + nbytes(e))
    for dtype, (count, size) in by_dtype.items():
        assert re.search(rf"^  {dtype} +{count} tensors  {re.escape(human(size))}$", out, re.M), \
            (dtype, count, human(size), out)


@pytest.mark.parametrize("tp", [1, 2, 4])
@pytest.mark.parametrize("folder", [SHIPPED, KIMI_K25], ids=["shipped", "kimi_k25"])
def test_bytes_per_rank(folder, tp):
    h = header(folder)
    prefix = "language_model." if any(k.startswith("language_model.") for k in h) else ""
    sharded = replicated = 0
    for name, e in h.items():
        if name.startswith(UNUSED):
            continue
        assert name.startswith(prefix), name
        if SHARDED.search(name[len(prefix):]):
            assert nbytes(e) % tp == 0, name
            sharded += nbytes(e) // tp
        else:
            replicated += nbytes(e)
    # The rule must have split something and kept something whole, or it tests nothing.
    assert sharded and replicated
    want = (f"per rank     tp {tp}: {human(sharded + replicated)} ({human(sharded)} sharded + "
            f"{human(replicated)} replicated), as stored\n")
    out = inspect(folder, tp)
    assert want in out, (want, out)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
