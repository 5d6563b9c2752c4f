#!/usr/bin/env python3
"""`myriad quantize` and `myriad eval` on the shipped model, checked against the reference packer
tools/quant_pack.py (a numpy implementation of the published NVFP4 and FP8-block formulas): every
quantised tensor's bytes equal the reference's, every other tensor is copied unchanged, the
configuration files say what the published checkpoints say, and the result loads and generates.
Then eval: a model against itself is exact (KL 0, top-1 100 %, equal perplexities), and the
quantised copies against the original report a finite, non-zero divergence.

Run: build/venv/bin/python tests/python/test_quantize_eval.py   (MYRIAD_BINARY = the executable)
"""

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from test_serve import BINARY, REPO

sys.path.insert(0, os.path.join(REPO, "tools"))
import quant_pack  # noqa: E402

MODEL = os.path.join(REPO, "models", "myriad-tiny")
TEXT = os.path.join(REPO, "README.md")
DTYPES = {"BF16": "<u2", "F32": "<f4", "U8": "u1", "F8_E4M3": "u1", "F16": "<f2", "I32": "<i4"}


def read_safetensors(folder):
    """name -> (dtype, shape, numpy array of raw values) over every .safetensors file."""
    out = {}
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".safetensors"):
            continue
        with open(os.path.join(folder, f), "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(n))
            data = fh.read()
        for name, info in header.items():
            if name == "__metadata__":
                continue
            b, e = info["data_offsets"]
            arr = np.frombuffer(data[b:e], DTYPES[info["dtype"]]).reshape(info["shape"])
            out[name] = (info["dtype"], info["shape"], arr)
    return out


def to_f32(dtype, arr):
    if dtype == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return arr.astype(np.float32)


def myriad(*args, check=True):
    p = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def work():
    d = tempfile.mkdtemp(prefix="myriad-quant-")
    myriad("quantize", MODEL, "--to", "nvfp4", os.path.join(d, "nvfp4"), "--threads", "2")
    myriad("quantize", MODEL, "--to", "fp8", os.path.join(d, "fp8"), "--threads", "2")
    myriad("quantize", MODEL, "--to", "nvfp4", os.path.join(d, "nvfp4_all"), "--scope",
           "all-linear", "--threads", "2")
    yield d
    shutil.rmtree(d)


def modules(tensors, suffix):
    return sorted(n[: -len(suffix)] for n in tensors if n.endswith(suffix))


@pytest.mark.parametrize("variant", ["nvfp4", "nvfp4_all"])
def test_nvfp4_bytes_equal_the_reference_packer(work, variant):
    src, out = read_safetensors(MODEL), read_safetensors(os.path.join(work, variant))
    quantised = modules(out, ".weight_scale_2")
    if variant == "nvfp4":
        assert quantised and all(".mlp.experts." in m for m in quantised)
        assert len(quantised) == len([n for n in src if ".mlp.experts." in n])
    else:
        assert any(".self_attn." in m for m in quantised)
        assert any(".shared_experts." in m for m in quantised)
    for m in quantised:
        dtype, _, w = src[m + ".weight"]
        packed, sf, ws2 = quant_pack.nvfp4_quantize(to_f32(dtype, w))
        assert np.array_equal(out[m + ".weight"][2], packed), m
        assert out[m + ".weight"][0] == "U8" and out[m + ".weight_scale"][0] == "F8_E4M3"
        assert np.array_equal(out[m + ".weight_scale"][2], sf), m
        assert out[m + ".weight_scale_2"][2].item() == ws2, m
        assert out[m + ".input_scale"][1] == [] and out[m + ".input_scale"][2].item() > 0, m
    for name, (dtype, shape, arr) in src.items():
        if name[: -len(".weight")] not in quantised:
            assert out[name][0] == dtype and out[name][1] == shape
            assert np.array_equal(out[name][2], arr), name


def test_fp8_bytes_equal_the_reference_packer(work):
    src, out = read_safetensors(MODEL), read_safetensors(os.path.join(work, "fp8"))
    quantised = modules(out, ".weight_scale_inv")
    assert len(quantised) == len([n for n in src if n.startswith("model.layers.") and
                                  n.endswith("_proj.weight") or n.endswith("_mqa.weight")])
    for m in quantised:
        dtype, _, w = src[m + ".weight"]
        q, s = quant_pack.fp8_block_quantize(to_f32(dtype, w))
        assert np.array_equal(out[m + ".weight"][2], q), m
        assert np.array_equal(out[m + ".weight_scale_inv"][2].astype(np.float32), s), m
    assert out["lm_head.weight"][0] == src["lm_head.weight"][0]


def test_configs_follow_the_published_checkpoints(work):
    cfg = json.load(open(os.path.join(work, "nvfp4", "config.json")))
    q = cfg["quantization_config"]
    assert (q["quant_method"], q["quant_algo"]) == ("modelopt", "NVFP4")
    assert q["config_groups"]["group_0"]["weights"] == {"num_bits": 4, "type": "float",
                                                       "group_size": 16, "dynamic": False}
    assert "lm_head" in q["ignore"] and "*.self_attn*" in q["ignore"]
    hf = json.load(open(os.path.join(work, "nvfp4", "hf_quant_config.json")))
    assert hf["quantization"]["quant_algo"] == "NVFP4"
    assert hf["quantization"]["exclude_modules"] == q["ignore"]
    assert hf["quantization"]["group_size"] == 16 and "kv_cache_quant_algo" in hf["quantization"]
    fp8 = json.load(open(os.path.join(work, "fp8", "config.json")))["quantization_config"]
    assert fp8 == {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                   "weight_block_size": [128, 128]}
    for variant in ("nvfp4", "fp8"):
        for f in os.listdir(MODEL):
            if not f.endswith(".safetensors") and f != "config.json":
                assert os.path.exists(os.path.join(work, variant, f)), f


def test_quantised_models_load_and_generate(work):
    for variant in ("nvfp4", "fp8", "nvfp4_all"):
        p = myriad("generate", os.path.join(work, variant), "--prompt-ids", "1,2,3",
                   "--max-tokens", "4", "--ids", "--threads", "2")
        assert len(p.stdout.strip().split(",")) == 4


def test_calibration_text_sets_input_scale(work):
    other = os.path.join(work, "nvfp4_calib")
    calib = os.path.join(work, "calib.txt")
    with open(calib, "w") as f:
        f.write("1 2 3 4 5 6 7 8 9 0 " * 50)
    myriad("quantize", MODEL, "--to", "nvfp4", other, "--calib", calib, "--threads", "2")
    a = read_safetensors(os.path.join(work, "nvfp4"))
    b = read_safetensors(other)
    scales = [n for n in a if n.endswith(".input_scale")]
    assert any(a[n][2].item() != b[n][2].item() for n in scales)
    for n in a:  # the weights do not depend on the calibration
        if not n.endswith(".input_scale"):
            assert np.array_equal(a[n][2], b[n][2]), n


def evaluate(model, ref):
    p = myriad("eval", model, "--reference", ref, "--text", TEXT, "--json", "--context", "128",
               "--max-tokens", "400", "--threads", "2")
    return json.loads(p.stdout)


def test_eval_of_a_model_against_itself_is_exact():
    r = evaluate(MODEL, MODEL)
    assert set(r) >= {"ppl", "ppl_reference", "kl_mean", "kl_p99", "top1_agreement", "verdict"}
    assert r["kl_mean"] == 0 and r["kl_p99"] == 0 and r["top1_agreement"] == 1
    assert r["ppl"] == r["ppl_reference"] and r["verdict"] == "excellent"
    assert r["positions"] == 400 - math.ceil(400 / 128)


def test_eval_of_quantised_copies(work):
    base = evaluate(MODEL, MODEL)
    for variant in ("nvfp4", "fp8"):
        r = evaluate(os.path.join(work, variant), MODEL)
        assert math.isfinite(r["ppl"]) and r["ppl_reference"] == base["ppl"]
        assert 0 < r["kl_mean"] <= r["kl_p99"]
        assert 0 < r["top1_agreement"] <= 1
        assert r["verdict"] in ("excellent", "good", "usable", "unusable")
    text = myriad("eval", os.path.join(work, "fp8"), "--reference", MODEL, "--text", TEXT,
                  "--context", "64", "--max-tokens", "130", "--threads", "2").stdout
    assert "perplexity" in text and text.strip().splitlines()[-1].startswith("verdict: ")


def test_bad_inputs_exit_2(work):
    p = myriad("quantize", MODEL, "--to", "int3", os.path.join(work, "x"), check=False)
    assert p.returncode == 2 and "--to int3" in p.stderr
    p = myriad("quantize", os.path.join(work, "fp8"), "--to", "nvfp4", os.path.join(work, "y"),
               check=False)
    assert p.returncode == 2 and "already quantised" in p.stderr
    p = myriad("quantize", MODEL, "--to", "fp8", os.path.join(work, "fp8"), check=False)
    assert p.returncode == 2 and "not empty" in p.stderr
    p = myriad("eval", MODEL, "--reference", MODEL, "--text", "/nonexistent", check=False)
    assert p.returncode == 2 and "--text /nonexistent" in p.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
