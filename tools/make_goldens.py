#!/usr/bin/env python3
"""Make tiny DeepSeek-V3-family golden checkpoints and their reference logits.

What it writes (one folder per model under --out, default tests/goldens/):

  config.json               written by hand, in the form published checkpoints use
  generation_config.json    {"bos_token_id": ..., "eos_token_id": ...}
  model.safetensors         BF16 weights with published tensor names (the router's
                            e_score_correction_bias in F32), or
  model-0000{1,2}-of-00002.safetensors + model.safetensors.index.json (one model)
  reference.safetensors     F32/I64 reference data computed by Hugging Face transformers:
      p{0,1}.prompt_ids      I64 [T]      (T = 80 for p0, 67 for p1; random ids in [0, vocab))
      p{0,1}.prefill_logits  F32 [T, V]   one forward over the whole prompt, every position
      p{0,1}.generated_ids   I64 [9]      g0 = argmax(prefill_logits[T-1]); g_{i+1} = argmax(decode_logits[i])
      p{0,1}.decode_logits   F32 [8, V]   step i feeds g_i at position T+i with the KV cache
    __metadata__ records the torch / transformers versions, the seed and the prompt attempt.
  README.md (in --out)      what each model covers, versions, command line, date.

How: weights are drawn with numpy from fixed seeds (linear std 1/sqrt(fan_in), norm weights
1 + 0.1*N(0,1), embeddings std 1, router bias uniform(0, 0.1) > 0), rounded to BF16, written as
safetensors by this script, then loaded by transformers' DeepseekV3ForCausalLM.from_pretrained
(dtype=torch.float32, attn_implementation="eager") from the written folder, so that the model
sees exactly the BF16 values the engine will read. Logits are computed on the CPU in float32.
The Kimi-K2.5 model is computed from a temporary folder holding the bare text model and then
written in the K2.5 layout (outer config with text_config, `language_model.` prefix, extra
vision_tower.* / mm_projector.* tensors).

Checks (the script exits non-zero, loudly, when one fails):
  * no missing / unexpected / mismatched keys when loading; every loaded parameter (including
    fused 3-D expert tensors, un-fused here) equals the BF16 value written;
  * the loaded config has YaRN where intended; model.model.rotary_emb.inv_freq / attention_scaling
    and every attention module's `scaling` equal this script's numpy version of reference.md 1.5;
  * router: bias path exercised; for n_group > 1 models the group mask changes at least one
    token's expert set compared with no grouping; HF's expert choice equals ours;
  * an independent float64 numpy forward (reference.md 1.1-1.7) agrees with the HF logits;
  * cached decode logits agree with one forward over prompt + g0..g7 without cache;
  * prompts are re-drawn (deterministically, attempt 0, 1, ...) until every greedy pick and every
    router decision has a safe margin, so an engine within tolerance reproduces the same tokens;
  * all of --out together is under 5 MB.

Usage (needs torch and transformers; CUDA not needed):
    python3 tools/make_goldens.py --out tests/goldens
    python3 tools/make_goldens.py --out tests/goldens --tp8-only   # only tp8_bf16 (8 heads)
    python3 tools/make_goldens.py --out /tmp/g --no-hf    # numpy-only dry run (no references)
Rerunnable: everything is drawn from SEED below; the HF computation is single-threaded and uses
deterministic algorithms.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import struct
import sys
import tempfile

import numpy as np

SEED = 20261130
PROMPT_LENS = (80, 67)
N_DECODE = 8
SIZE_LIMIT = 5_000_000          # bytes, all of --out together
ROUTER_MARGIN_MIN = 1e-5        # biased-score gap at every expert / group selection boundary
ARGMAX_MARGIN_MIN = 1e-3        # (top1 - top2) / max|row| for every greedy pick
MAX_ATTEMPTS = 64
DECODE_RTOL = 1e-4              # cached decode vs one uncached forward, relative to max|row|
NUMPY_RTOL = 1e-4               # independent numpy forward vs HF, relative to max|row|

FAILURES = []


def fail(msg):
    print("FAIL: " + msg, flush=True)
    FAILURES.append(msg)


def fatal(msg):
    print("FATAL: " + msg, flush=True)
    sys.exit(1)


# ---------------------------------------------------------------------------------------------
# Model specifications
# ---------------------------------------------------------------------------------------------

def text_config(model_type="deepseek_v3", vocab=256, hidden=64, inter=128, moe_inter=32, layers=3,
                heads=4, n_shared=1, n_experts=8, rsf=2.5, kv_lora=32, q_lora=48, rope=16, v=16,
                nope=16, n_group=1, topk_group=1, topk=2, first_dense=1, norm_topk=True,
                max_pos=4096, eps=1e-6, bos=0, eos=1, rope_theta=10000.0, rope_scaling="absent",
                rope_parameters=None):
    c = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": model_type,
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": inter,
        "moe_intermediate_size": moe_inter,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "n_shared_experts": n_shared,
        "n_routed_experts": n_experts,
        "routed_scaling_factor": rsf,
        "kv_lora_rank": kv_lora,
        "q_lora_rank": q_lora,
        "qk_rope_head_dim": rope,
        "v_head_dim": v,
        "qk_nope_head_dim": nope,
        "topk_method": "noaux_tc",
        "n_group": n_group,
        "topk_group": topk_group,
        "num_experts_per_tok": topk,
        "moe_layer_freq": 1,
        "first_k_dense_replace": first_dense,
        "norm_topk_prob": norm_topk,
        "scoring_func": "sigmoid",
        "hidden_act": "silu",
        "max_position_embeddings": max_pos,
        "initializer_range": 0.02,
        "rms_norm_eps": eps,
        "use_cache": True,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "tie_word_embeddings": False,
    }
    if rope_parameters is not None:
        c["rope_parameters"] = dict(rope_parameters)      # transformers >= 5 form, theta inside
    else:
        c["rope_theta"] = rope_theta
        if rope_scaling != "absent":
            c["rope_scaling"] = rope_scaling               # dict, or None -> "rope_scaling": null
    c.update({
        "attention_bias": False,
        "attention_dropout": 0.0,
        "num_nextn_predict_layers": 0,
        "ep_size": 1,
        "torch_dtype": "bfloat16",
    })
    return c


MODELS = [
    dict(
        name="v3_grouped_yarn",
        covers="DeepSeek-V3 shape: q_lora_rank 48; n_group 4 / topk_group 2 (8 experts, top-3); "
               "published `rope_scaling` form {type: yarn, factor 40, orig 4096, beta 32/1, "
               "mscale = mscale_all_dim = 1} with top-level rope_theta 10000, max_pos 163840; "
               "norm_topk_prob true; first_k_dense_replace 1; 1 shared expert; rms_norm_eps 1e-6",
        config=text_config(
            q_lora=48, n_group=4, topk_group=2, topk=3, n_shared=1, first_dense=1, norm_topk=True,
            eps=1e-6, rsf=2.5, max_pos=163840, rope_theta=10000.0,
            rope_scaling={"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                          "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                          "type": "yarn"}),
    ),
    dict(
        name="moonlight_plain",
        covers="Moonlight shape: q_lora_rank null (q_proj); no rope scaling (\"rope_scaling\": null, "
               "rope_theta 50000, max_pos 8192); n_group 1; 2 shared experts; first_k_dense_replace 2 "
               "(3 layers: 2 dense + 1 MoE); rms_norm_eps 1e-5; norm_topk_prob true; "
               "routed_scaling_factor 2.446",
        config=text_config(
            q_lora=None, layers=3, n_group=1, topk_group=1, topk=2, n_shared=2, first_dense=2,
            norm_topk=True, eps=1e-5, rsf=2.446, max_pos=8192, rope_theta=50000.0, rope_scaling=None,
            bos=1, eos=2),
    ),
    dict(
        name="yarn_params_mscale",
        covers="transformers-5 `rope_parameters` form {rope_type: yarn, rope_theta 10000, factor 40, "
               "orig 4096, beta 32/1, mscale 0.707, mscale_all_dim 1.0} (attention factor on cos/sin "
               "= 0.92, not 1); q_lora_rank 32; n_group 2 / topk_group 1 (8 experts, top-2); "
               "norm_topk_prob false; 2 shared experts; rms_norm_eps 1e-6",
        config=text_config(
            q_lora=32, n_group=2, topk_group=1, topk=2, n_shared=2, first_dense=1, norm_topk=False,
            eps=1e-6, rsf=2.5, max_pos=163840,
            rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                             "original_max_position_embeddings": 4096, "beta_fast": 32.0,
                             "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 1.0}),
    ),
    dict(
        name="v2lite_yarn_noqlora",
        covers="q_lora_rank null with YaRN: `rope_scaling` spelled with \"rope_type\" (not \"type\"), "
               "factor 16, orig 2048, max_pos 32768, mscale 1.0 / mscale_all_dim 0.707 (attention "
               "factor 1.068); n_group 4 / topk_group 2 (8 experts, top-2); norm_topk_prob false; "
               "1 shared expert; rms_norm_eps 1e-5; routed_scaling_factor 1.5; qk_nope 24 != v_head 16",
        config=text_config(
            q_lora=None, n_group=4, topk_group=2, topk=2, n_shared=1, first_dense=1, norm_topk=False,
            eps=1e-5, rsf=1.5, nope=24, v=16, max_pos=32768, rope_theta=10000.0,
            rope_scaling={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 2048,
                          "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 0.707},
            bos=2, eos=3),
    ),
    dict(
        name="kimi_k2",
        covers="Kimi-K2 shape (largest; also the CPU benchmark model): model_type kimi_k2; hidden 128, "
               "4 layers, 16 experts top-4, n_group 1; q_lora_rank 64; rope_theta 50000 with YaRN "
               "factor 32, beta_fast 1 / beta_slow 1, max_pos 131072; routed_scaling_factor 2.827; "
               "bos/eos 256/257 at the top of the vocab (320); qk_rope 32; sharded into 2 files + "
               "model.safetensors.index.json",
        sharded=True,
        config=text_config(
            model_type="kimi_k2", vocab=320, hidden=128, inter=128, moe_inter=16, layers=4, heads=4,
            q_lora=64, kv_lora=32, nope=16, rope=32, v=16, n_experts=16, topk=4, n_group=1,
            topk_group=1, n_shared=1, first_dense=1, norm_topk=True, eps=1e-6, rsf=2.827,
            max_pos=131072, rope_theta=50000.0, bos=256, eos=257,
            rope_scaling={"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0,
                          "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                          "type": "yarn"}),
    ),
    dict(
        name="kimi_k25",
        covers="Kimi-K2.5 layout: outer config KimiK25ForConditionalGeneration / kimi_k25 with "
               "text_config (kimi_k2, rms_norm_eps 1e-5, YaRN factor 64, orig 4096, max_pos 262144, "
               "beta 1/1), vision_config, media_placeholder_token_id; text tensors under "
               "`language_model.`, extra vision_tower.* / mm_projector.* tensors to skip; 16 experts "
               "top-4, n_group 1; reference logits from DeepseekV3ForCausalLM on the bare text weights",
        k25=True,
        config=text_config(
            model_type="kimi_k2", vocab=320, hidden=64, inter=128, moe_inter=16, layers=3, heads=4,
            q_lora=48, kv_lora=32, nope=16, rope=16, v=16, n_experts=16, topk=4, n_group=1,
            topk_group=1, n_shared=1, first_dense=1, norm_topk=True, eps=1e-5, rsf=2.827,
            max_pos=262144, rope_theta=50000.0, bos=256, eos=257,
            rope_scaling={"beta_fast": 1.0, "beta_slow": 1.0, "factor": 64.0, "mscale": 1.0,
                          "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                          "type": "yarn"}),
    ),
]

# Goldens that shard at TP 8 (--tp8-only): 8 heads, intermediate and moe_intermediate 256, so
# every width each of 8 ranks cuts stays whole. Not part of MODELS (their folders and README stay
# as they are); the tests at TP 2, 4 and 8 read them (tests/gpu/tensor_parallel_test.cpp).
TP8_MODELS = [
    dict(
        name="tp8_bf16",
        covers="TP 8 shapes: 8 heads, intermediate 256, moe_intermediate 256 (each of 8 ranks "
               "holds 1 head and 32 of every width); 8 experts top-2, n_group 2 / topk_group 1, "
               "q_lora_rank 48, 1 shared expert; no rope scaling",
        config=text_config(
            heads=8, inter=256, moe_inter=256, layers=2, n_experts=8, topk=2, n_group=2,
            topk_group=1, n_shared=1, first_dense=1, q_lora=48, rope_theta=10000.0),
    ),
]

K25_MEDIA_PLACEHOLDER = 300


def k25_outer_config(text_cfg):
    return {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": text_cfg,
        "vision_config": {
            "model_type": "moonvit3d",
            "patch_size": 4,
            "init_pos_emb_height": 4,
            "init_pos_emb_width": 4,
            "num_attention_heads": 2,
            "num_hidden_layers": 1,
            "hidden_size": 16,
            "intermediate_size": 32,
            "merge_kernel_size": [2, 2],
            "mm_hidden_size": 16,
            "text_hidden_size": text_cfg["hidden_size"],
        },
        "media_placeholder_token_id": K25_MEDIA_PLACEHOLDER,
        "bos_token_id": text_cfg["bos_token_id"],
        "eos_token_id": text_cfg["eos_token_id"],
        "pad_token_id": 259,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


# ---------------------------------------------------------------------------------------------
# BF16 and safetensors (written by hand: numpy has no bfloat16)
# ---------------------------------------------------------------------------------------------

def bf16_bits(x):
    """float32 -> bfloat16 bit patterns, round to nearest even (no NaN/Inf in our data)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)


def bf16_round(x):
    """float32 values exactly representable in bfloat16."""
    return (bf16_bits(x).astype(np.uint32) << 16).view(np.float32)


def encode(dtype, arr):
    if dtype == "BF16":
        return bf16_bits(arr).astype("<u2").tobytes()
    if dtype == "F32":
        return np.ascontiguousarray(arr, dtype="<f4").tobytes()
    if dtype == "I64":
        return np.ascontiguousarray(arr, dtype="<i8").tobytes()
    if dtype == "BOOL":  # one byte each (an EAGLE3 draft's t2d)
        return np.ascontiguousarray(arr, dtype=np.uint8).tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype, array). Returns the number of tensor-data bytes."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, dt, arr in tensors:
        b = encode(dt, arr)
        header[name] = {"dtype": dt, "shape": [int(s) for s in arr.shape], "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)
    return off


def read_safetensors(path):
    """-> (dict name -> (dtype, float32/int64 array), metadata)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        raw = data[base + b: base + e]
        if h["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif h["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif h["dtype"] == "I64":
            a = np.frombuffer(raw, dtype="<i8").astype(np.int64)
        else:
            raise ValueError(h["dtype"])
        out[name] = (h["dtype"], a.reshape(h["shape"]))
    return out, meta


# ---------------------------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------------------------

def make_weights(cfg, seed):
    """Ordered list of (name, dtype, float32 array); BF16 arrays already hold BF16 values."""
    rng = np.random.default_rng(seed)
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    nh = cfg["num_attention_heads"]
    dn, dr, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    rq, rkv = cfg["q_lora_rank"], cfg["kv_lora_rank"]
    E, I, Im = cfg["n_routed_experts"], cfg["intermediate_size"], cfg["moe_intermediate_size"]
    out = []

    def lin(name, o, i):
        out.append((name, "BF16", bf16_round(rng.standard_normal((o, i)) / math.sqrt(i))))

    def norm(name, n):
        out.append((name, "BF16", bf16_round(1.0 + 0.1 * rng.standard_normal(n))))

    out.append(("model.embed_tokens.weight", "BF16", bf16_round(rng.standard_normal((V, H)))))
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        norm(p + "input_layernorm.weight", H)
        if rq is None:
            lin(p + "self_attn.q_proj.weight", nh * (dn + dr), H)
        else:
            lin(p + "self_attn.q_a_proj.weight", rq, H)
            norm(p + "self_attn.q_a_layernorm.weight", rq)
            lin(p + "self_attn.q_b_proj.weight", nh * (dn + dr), rq)
        lin(p + "self_attn.kv_a_proj_with_mqa.weight", rkv + dr, H)
        norm(p + "self_attn.kv_a_layernorm.weight", rkv)
        lin(p + "self_attn.kv_b_proj.weight", nh * (dn + dv), rkv)
        lin(p + "self_attn.o_proj.weight", H, nh * dv)
        norm(p + "post_attention_layernorm.weight", H)
        if l < cfg["first_k_dense_replace"]:
            lin(p + "mlp.gate_proj.weight", I, H)
            lin(p + "mlp.up_proj.weight", I, H)
            lin(p + "mlp.down_proj.weight", H, I)
        else:
            lin(p + "mlp.gate.weight", E, H)
            out.append((p + "mlp.gate.e_score_correction_bias", "F32",
                        rng.uniform(0.0, 0.1, E).astype(np.float32)))
            for e in range(E):
                lin(p + f"mlp.experts.{e}.gate_proj.weight", Im, H)
                lin(p + f"mlp.experts.{e}.up_proj.weight", Im, H)
                lin(p + f"mlp.experts.{e}.down_proj.weight", H, Im)
            Is = Im * cfg["n_shared_experts"]
            lin(p + "mlp.shared_experts.gate_proj.weight", Is, H)
            lin(p + "mlp.shared_experts.up_proj.weight", Is, H)
            lin(p + "mlp.shared_experts.down_proj.weight", H, Is)
    norm("model.norm.weight", H)
    lin("lm_head.weight", V, H)
    return out


def make_k25_extras(seed, text_hidden):
    rng = np.random.default_rng(seed)
    t = []

    def r(name, shape, std, dtype="BF16"):
        a = (rng.standard_normal(shape) * std).astype(np.float32)
        t.append((name, dtype, bf16_round(a) if dtype == "BF16" else a))

    r("vision_tower.patch_embed.proj.weight", (16, 3, 4, 4), 0.1)
    r("vision_tower.patch_embed.proj.bias", (16,), 0.1)
    r("vision_tower.patch_embed.pos_emb.weight", (4, 4, 16), 0.1, "F32")
    r("vision_tower.encoder.blocks.0.norm0.weight", (16,), 0.1)
    r("vision_tower.encoder.blocks.0.wqkv.weight", (48, 16), 0.25)
    r("vision_tower.encoder.blocks.0.wo.weight", (16, 16), 0.25)
    r("vision_tower.encoder.blocks.0.mlp.fc0.weight", (32, 16), 0.25)
    r("vision_tower.encoder.blocks.0.mlp.fc1.weight", (16, 32), 0.18)
    r("vision_tower.encoder.final_layernorm.weight", (16,), 0.1)
    r("mm_projector.pre_norm.weight", (64,), 0.1)
    r("mm_projector.proj.0.weight", (64, 64), 0.125)
    r("mm_projector.proj.2.weight", (text_hidden, 64), 0.125)
    return t


def param_count(tensors):
    return int(sum(a.size for _, _, a in tensors))


# ---------------------------------------------------------------------------------------------
# Our own numpy version of reference.md 1.1-1.7 (float64)
# ---------------------------------------------------------------------------------------------

def rope_params(cfg):
    """Normalised YaRN parameters from either config form, or None when there is no scaling."""
    rp = cfg.get("rope_parameters")
    if rp is None:
        rp = cfg.get("rope_scaling")
        if rp is None:
            return None
        rp = dict(rp)
        rp.setdefault("rope_theta", cfg.get("rope_theta", 10000.0))
    rp = dict(rp)
    t = rp.get("rope_type", rp.get("type", "default"))
    if t == "default":
        return None
    assert t == "yarn", t
    return rp


def rope_theta(cfg):
    rp = cfg.get("rope_parameters")
    if rp is not None and "rope_theta" in rp:
        return float(rp["rope_theta"])
    return float(cfg.get("rope_theta", 10000.0))


def get_mscale(s, m=1.0):
    return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0


def expected_rope(cfg):
    """-> inv_freq [d/2] float64, attention_factor, softmax_scale, (low, high) or None."""
    d = cfg["qk_rope_head_dim"]
    dq = cfg["qk_nope_head_dim"] + d
    base = rope_theta(cfg)
    i = np.arange(d // 2, dtype=np.float64)
    f = base ** (-2.0 * i / d)
    rp = rope_params(cfg)
    if rp is None:
        return f, 1.0, dq ** -0.5, None
    s = float(rp["factor"])
    L0 = float(rp["original_max_position_embeddings"])
    bf = rp.get("beta_fast") or 32
    bs = rp.get("beta_slow") or 1

    def corr(r):
        return d * math.log(L0 / (2 * math.pi * r)) / (2 * math.log(base))

    low = max(math.floor(corr(bf)), 0)
    high = min(math.ceil(corr(bs)), d - 1)
    hi = high + 0.001 if high == low else high
    ramp = np.clip((i - low) / (hi - low), 0.0, 1.0)
    inv = f * (1 - ramp) + (f / s) * ramp
    m, msad = rp.get("mscale"), rp.get("mscale_all_dim")
    if rp.get("attention_factor") is not None:
        att = float(rp["attention_factor"])
    elif m and msad:
        att = get_mscale(s, m) / get_mscale(s, msad)
    else:
        att = get_mscale(s)
    scale = dq ** -0.5
    if msad:
        scale *= get_mscale(s, msad) ** 2
    return inv, att, scale, (low, high)


def np_rms(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def np_silu(x):
    return x / (1.0 + np.exp(-x))


def np_swiglu(x, g, u, d):
    return (np_silu(x @ g.T) * (x @ u.T)) @ d.T


def route(cfg, logits, bias, grouped=True):
    """HF noaux_tc routing on router logits [N, E] (float64).

    -> (idx [N, k] sorted by expert id, weights [N, k] (unbiased, normalised, scaled),
        min expert-boundary margin, min group-boundary margin)."""
    E, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    G, TG = cfg["n_group"], cfg["topk_group"]
    s = 1.0 / (1.0 + np.exp(-logits))
    sc = s + bias[None, :]
    gmargin = np.inf
    if grouped and G > 1:
        gs = np.sort(sc.reshape(-1, G, E // G), axis=-1)[..., -2:].sum(-1)      # [N, G]
        order = np.argsort(-gs, axis=-1, kind="stable")
        keep = np.zeros_like(gs, dtype=bool)
        np.put_along_axis(keep, order[:, :TG], True, axis=-1)
        if TG < G:
            gsorted = -np.sort(-gs, axis=-1)
            gmargin = float(np.min(gsorted[:, TG - 1] - gsorted[:, TG]))
        sc = np.where(np.repeat(keep, E // G, axis=-1), sc, 0.0)             # HF fills with 0.0
    order = np.argsort(-sc, axis=-1, kind="stable")
    idx = np.sort(order[:, :k], axis=-1)
    ssorted = -np.sort(-sc, axis=-1)
    emargin = float(np.min(ssorted[:, k - 1] - ssorted[:, k])) if k < E else np.inf
    w = np.take_along_axis(s, idx, axis=-1)
    if cfg["norm_topk_prob"]:
        w = w / (w.sum(-1, keepdims=True) + 1e-20)
    return idx, w * cfg["routed_scaling_factor"], emargin, gmargin


def np_forward(cfg, W, ids):
    """Independent float64 forward over a whole sequence (positions 0..T-1) -> logits [T, V]."""
    g = lambda n: W[n].astype(np.float64)
    T = len(ids)
    nh = cfg["num_attention_heads"]
    dn, dr, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    rkv, eps = cfg["kv_lora_rank"], cfg["rms_norm_eps"]
    inv, att, scale, _ = expected_rope(cfg)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang) * att, np.sin(ang) * att                       # [T, dr/2]

    def rope(x):        # x [..., T, dr]: rotate adjacent pairs (x[2i], x[2i+1])
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out

    mask = np.triu(np.full((T, T), -np.inf), 1)
    h = g("model.embed_tokens.weight")[np.asarray(ids)]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        x = np_rms(h, g(p + "input_layernorm.weight"), eps)
        if cfg["q_lora_rank"] is None:
            q = x @ g(p + "self_attn.q_proj.weight").T
        else:
            qa = np_rms(x @ g(p + "self_attn.q_a_proj.weight").T, g(p + "self_attn.q_a_layernorm.weight"), 1e-6)
            q = qa @ g(p + "self_attn.q_b_proj.weight").T
        q = q.reshape(T, nh, dn + dr).transpose(1, 0, 2)                   # [nh, T, dq]
        ckv = x @ g(p + "self_attn.kv_a_proj_with_mqa.weight").T
        c, kr = ckv[:, :rkv], ckv[:, rkv:]
        kv = np_rms(c, g(p + "self_attn.kv_a_layernorm.weight"), 1e-6) @ g(p + "self_attn.kv_b_proj.weight").T
        kv = kv.reshape(T, nh, dn + dv).transpose(1, 0, 2)
        kn, v = kv[..., :dn], kv[..., dn:]
        qr, kr = rope(q[..., dn:]), rope(kr)
        s = (q[..., :dn] @ kn.transpose(0, 2, 1) + qr @ kr.T[None]) * scale + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        o = (s / s.sum(-1, keepdims=True)) @ v                              # [nh, T, dv]
        h = h + o.transpose(1, 0, 2).reshape(T, nh * dv) @ g(p + "self_attn.o_proj.weight").T
        x = np_rms(h, g(p + "post_attention_layernorm.weight"), eps)
        if l < cfg["first_k_dense_replace"]:
            y = np_swiglu(x, g(p + "mlp.gate_proj.weight"), g(p + "mlp.up_proj.weight"), g(p + "mlp.down_proj.weight"))
        else:
            idx, w, _, _ = route(cfg, x @ g(p + "mlp.gate.weight").T, g(p + "mlp.gate.e_score_correction_bias"))
            y = np_swiglu(x, g(p + "mlp.shared_experts.gate_proj.weight"), g(p + "mlp.shared_experts.up_proj.weight"),
                          g(p + "mlp.shared_experts.down_proj.weight"))
            for t in range(T):
                for j, e in enumerate(idx[t]):
                    q_ = p + f"mlp.experts.{e}."
                    y[t] += w[t, j] * np_swiglu(x[t:t + 1], g(q_ + "gate_proj.weight"), g(q_ + "up_proj.weight"),
                                                g(q_ + "down_proj.weight"))[0]
        h = h + y
    return np_rms(h, g("model.norm.weight"), eps) @ g("lm_head.weight").T


def argmax_margin(row):
    s = np.sort(row)
    return float((s[-1] - s[-2]) / np.max(np.abs(row)))


def max_rel_diff(a, b):
    """max over rows of max|a - b| / max|b| (rows = positions)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.max(np.abs(a - b), axis=-1) / np.max(np.abs(b), axis=-1)))


def prompt_ids(seed, p, attempt, T, V):
    return np.random.default_rng([seed, 1000 + p, attempt]).integers(0, V, size=T).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def write_hf_folder(folder, cfg, tensors, sharded=False, prefix="", extras=(), outer_cfg=None):
    """config.json, generation_config.json and the weights (single file or 2 shards)."""
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "config.json"), outer_cfg if outer_cfg is not None else cfg)
    write_json(os.path.join(folder, "generation_config.json"),
               {"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"]})
    named = [(prefix + n, d, a) for n, d, a in tensors] + list(extras)
    meta = {"format": "pt"}
    if not sharded:
        write_safetensors(os.path.join(folder, "model.safetensors"), named, meta)
        return
    # shard 1: embeddings + first half of the layers; shard 2: the rest
    half = cfg["num_hidden_layers"] // 2
    def shard_of(n):
        if n.startswith("model.embed_tokens"):
            return 0
        if n.startswith("model.layers."):
            return 0 if int(n.split(".")[2]) < half else 1
        return 1
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map, total = {}, 0
    for s in range(2):
        part = [t for t in named if shard_of(t[0]) == s]
        total += write_safetensors(os.path.join(folder, files[s]), part, meta)
        for n, _, _ in part:
            weight_map[n] = files[s]
    write_json(os.path.join(folder, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))})


def read_folder_weights(folder):
    idx = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    out = {}
    for f in files:
        t, _ = read_safetensors(os.path.join(folder, f))
        out.update(t)
    return out


def dir_size(folder):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(folder) for f in fs)


# ---------------------------------------------------------------------------------------------
# Hugging Face part
# ---------------------------------------------------------------------------------------------

def hf_load(folder, tmp_root):
    """DeepseekV3ForCausalLM.from_pretrained on the written folder (float32, eager).

    transformers 5.x fuses the per-expert checkpoint tensors into 3-D `experts.gate_up_proj` /
    `experts.down_proj` through a conversion table keyed by config.model_type, and has no entry for
    "kimi_k2": loading a kimi_k2 folder as-is leaves every routed expert randomly initialised
    (the per-expert tensors are reported unexpected, the fused ones missing). So for model types
    other than deepseek_v3 the config is read first and its model_type set to "deepseek_v3" before
    the weights are loaded from the same folder; if that still does not load cleanly, a copy of the
    folder whose config.json says deepseek_v3 is loaded instead. The checks below verify the result.
    """
    import torch
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    kw = dict(dtype=torch.float32, attn_implementation="eager", output_loading_info=True,
              experts_implementation="eager")

    def load(path, config=None):
        extra = {} if config is None else {"config": config}
        try:
            return DeepseekV3ForCausalLM.from_pretrained(path, **extra, **kw)
        except (TypeError, ValueError) as e:
            print(f"  note: experts_implementation='eager' refused ({e}); loading with the default")
            k2 = dict(kw)
            k2.pop("experts_implementation")
            return DeepseekV3ForCausalLM.from_pretrained(path, **extra, **k2)

    cfg_json = json.load(open(os.path.join(folder, "config.json")))
    if cfg_json.get("model_type") == "deepseek_v3":
        model, info = load(folder)
    else:
        config = DeepseekV3Config.from_pretrained(folder)
        print(f"  loading model_type {config.model_type!r} with config.model_type set to 'deepseek_v3' "
              f"(transformers' expert-fusing conversion is keyed on it)")
        config.model_type = "deepseek_v3"
        model, info = load(folder, config)
        if any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
            print(f"  that still left keys unloaded ({ {k: len(v) for k, v in info.items()} }); loading a copy "
                  f"whose config.json says deepseek_v3")
            alt = os.path.join(tmp_root, os.path.basename(folder.rstrip("/")) + "_as_deepseek_v3")
            shutil.copytree(folder, alt)
            cfg_json["model_type"] = "deepseek_v3"
            write_json(os.path.join(alt, "config.json"), cfg_json)
            model, info = load(alt)
    model.eval()
    return model, info


def check_loading_info(info):
    print("  loading info: " + ", ".join(f"{k}={len(v) if hasattr(v, '__len__') else v}" for k, v in info.items()))
    for k, v in info.items():
        if v:   # missing_keys, unexpected_keys, mismatched_keys, error_msgs, ...: all must be empty
            fail(f"loading reported {k}: {sorted(map(str, v))[:20]}")


def check_state_dict(model, W):
    """Every loaded tensor equals the written BF16 value; fused expert tensors are un-fused here."""
    sd = {k: v.detach().cpu().float().numpy() for k, v in model.state_dict().items()}
    used, checked = set(), 0
    for name, arr in W.items():
        if name in sd:
            if sd[name].shape != arr.shape or not np.array_equal(sd[name], arr):
                fail(f"loaded {name} differs from the written value")
            used.add(name)
            checked += 1
    # fused experts
    layers = sorted({int(n.split(".")[2]) for n in W if ".mlp.experts." in n})
    n_fused = 0
    for l in layers:
        p = f"model.layers.{l}.mlp.experts."
        E = len({n.split(".")[5] for n in W if n.startswith(p)})
        stk = {k: np.stack([W[f"{p}{e}.{k}.weight"] for e in range(E)]) for k in ("gate_proj", "up_proj", "down_proj")}
        cands = {
            "gate_up_proj": [np.concatenate([stk["gate_proj"], stk["up_proj"]], axis=1),
                             np.concatenate([stk["gate_proj"], stk["up_proj"]], axis=1).transpose(0, 2, 1)],
            "gate_proj": [stk["gate_proj"], stk["gate_proj"].transpose(0, 2, 1)],
            "up_proj": [stk["up_proj"], stk["up_proj"].transpose(0, 2, 1)],
            "down_proj": [stk["down_proj"], stk["down_proj"].transpose(0, 2, 1)],
        }
        covered, n_layer = set(), 0
        for key in [k for k in sd if k.startswith(p) and k not in used]:
            suffix = key[len(p):]
            base = suffix[:-len(".weight")] if suffix.endswith(".weight") else suffix
            if base not in cands:
                continue
            if not any(c.shape == sd[key].shape and np.array_equal(c, sd[key]) for c in cands[base]):
                fail(f"fused {key} {sd[key].shape} does not equal the written per-expert weights")
            used.add(key)
            n_fused += 1
            n_layer += 1
            covered |= {"gate_proj", "up_proj"} if base == "gate_up_proj" else {base}
        if n_layer and covered != {"gate_proj", "up_proj", "down_proj"}:
            fail(f"layer {l}: fused expert tensors cover only {sorted(covered)}")
        if covered:
            for e in range(E):
                for k in ("gate_proj", "up_proj", "down_proj"):
                    used.add(f"{p}{e}.{k}.weight")
    left_w = sorted(set(W) - used)
    left_sd = sorted(set(sd) - used)
    if left_w:
        fail(f"written tensors not found in the loaded model: {left_w[:10]}")
    if left_sd:
        fail(f"loaded model tensors with no written value: {left_sd[:10]}")
    print(f"  state_dict: {checked} tensors compared by name, {n_fused} fused expert tensors compared after "
          f"un-fusing; {len(W) - len(left_w)} of {len(W)} written tensors accounted for, "
          f"{len(left_sd)} loaded tensors unaccounted for")
    return sorted(k for k in sd if ".mlp.experts." in k)[:4]


def check_rope(model, cfg):
    rp_hf = getattr(model.config, "rope_parameters", None)
    rs_hf = getattr(model.config, "rope_scaling", None)
    print(f"  loaded config.rope_parameters = {rp_hf}")
    if rs_hf is not None and rs_hf is not rp_hf:
        print(f"  loaded config.rope_scaling   = {rs_hf}")
    rp = rope_params(cfg)
    hf = rp_hf if isinstance(rp_hf, dict) else (rs_hf if isinstance(rs_hf, dict) else {})
    hf_type = hf.get("rope_type", hf.get("type", "default")) if hf else "default"
    if rp is not None:
        if hf_type != "yarn" or float(hf.get("factor", -1)) != float(rp["factor"]):
            fail(f"YaRN dropped by the loader: rope_type={hf_type}, factor={hf.get('factor')}")
    elif hf_type not in ("default", None):
        fail(f"unexpected rope_type {hf_type} for a config without rope scaling")
    inv, att, scale, lh = expected_rope(cfg)
    re = model.model.rotary_emb
    hinv = re.inv_freq.detach().cpu().double().numpy()
    ok_inv = hinv.shape == inv.shape and np.allclose(hinv, inv, rtol=2e-6, atol=0)
    ok_att = abs(float(re.attention_scaling) - att) <= 1e-6 * abs(att)
    scalings = [float(layer.self_attn.scaling) for layer in model.model.layers]
    ok_sc = all(abs(s - scale) <= 1e-6 * scale for s in scalings)
    print(f"  rope: type={hf_type} low/high={lh} inv_freq max rel err "
          f"{np.max(np.abs(hinv - inv) / inv) if hinv.shape == inv.shape else 'shape!'}; "
          f"attention_scaling HF {float(re.attention_scaling):.9f} ours {att:.9f}; "
          f"softmax scale HF {scalings[0]:.9f} ours {scale:.9f}")
    for okv, what in ((ok_inv, "inv_freq"), (ok_att, "attention_scaling"), (ok_sc, "softmax scaling")):
        if not okv:
            fail(f"{cfg.get('_name')}: rope {what} differs from reference.md 1.5")
    return dict(inv_freq=inv.tolist(), attention_factor=att, softmax_scale=scale, low_high=lh)


def print_config_diff(model, cfg):
    """How transformers rewrote the hand-written config.json (keys dropped, added or changed)."""
    d = model.config.to_dict()
    dropped = sorted(k for k in cfg if not k.startswith("_") and k not in d)
    changed = sorted(f"{k}: {cfg[k]!r} -> {d[k]!r}" for k in cfg if k in d and d[k] != cfg[k])
    added = sorted(k for k in d if k not in cfg)
    print(f"  config as loaded: dropped {dropped}; changed {changed}; added {added}")


def check_norm_eps(model, cfg):
    eps = {}
    layer = model.model.layers[0]
    for path in ("input_layernorm", "post_attention_layernorm", "self_attn.q_a_layernorm", "self_attn.kv_a_layernorm"):
        mod = layer
        try:
            for part in path.split("."):
                mod = getattr(mod, part)
        except AttributeError:
            continue
        eps[path] = getattr(mod, "variance_epsilon", getattr(mod, "eps", None))
    eps["model.norm"] = getattr(model.model.norm, "variance_epsilon", None)
    print(f"  RMSNorm eps in HF: {eps} (config rms_norm_eps {cfg['rms_norm_eps']})")
    return eps


class RouterProbe:
    """Captures the input of every MoE block and HF's routing choice (when visible)."""

    def __init__(self, model, cfg):
        self.inputs, self.hf_idx, self.handles, self.enabled = {}, {}, [], True
        for l, layer in enumerate(model.model.layers):
            if l < cfg["first_k_dense_replace"]:
                continue
            mlp = layer.mlp
            self.handles.append(mlp.register_forward_pre_hook(self._pre(l)))
            if hasattr(mlp, "experts") and not hasattr(mlp.experts, "__getitem__"):
                self.handles.append(mlp.experts.register_forward_hook(self._exp(l), with_kwargs=True))

    def reset(self):
        self.inputs = {}
        self.hf_idx = {}

    def _pre(self, l):
        def f(mod, args):
            if not self.enabled:
                return
            x = args[0]
            self.inputs.setdefault(l, []).append(x.detach().reshape(-1, x.shape[-1]).double().cpu().numpy())
        return f

    def _exp(self, l):
        import torch

        def f(mod, args, kwargs, out):
            if not self.enabled:
                return
            vals = list(args) + list(kwargs.values())
            ints = [v for v in vals if isinstance(v, torch.Tensor) and not v.is_floating_point()]
            if ints:
                self.hf_idx.setdefault(l, []).append(ints[0].detach().reshape(-1, ints[0].shape[-1]).cpu().numpy())
        return f


def router_stats(probe, cfg, W):
    """-> (min expert margin, min group margin, #token-layers whose set changes with grouping,
           #token-layers compared with HF, #mismatches)."""
    em, gm, changed, total, cmp_n, cmp_bad = np.inf, np.inf, 0, 0, 0, 0
    for l, xs in probe.inputs.items():
        p = f"model.layers.{l}.mlp.gate."
        x = np.concatenate(xs)
        logits = x @ W[p + "weight"].astype(np.float64).T
        bias = W[p + "e_score_correction_bias"].astype(np.float64)
        idx, _, e1, g1 = route(cfg, logits, bias, grouped=True)
        idx0, _, _, _ = route(cfg, logits, bias, grouped=False)
        em, gm = min(em, e1), min(gm, g1)
        changed += int(np.sum(np.any(idx != idx0, axis=-1)))
        total += idx.shape[0]
        if l in probe.hf_idx:
            hidx = np.sort(np.concatenate(probe.hf_idx[l]), axis=-1)
            if hidx.shape == idx.shape:
                cmp_n += idx.shape[0]
                cmp_bad += int(np.sum(np.any(hidx != idx, axis=-1)))
    return em, gm, changed, total, cmp_n, cmp_bad


def hf_generate(model, ids, probe):
    """prefill logits [T,V], generated ids [9], decode logits [8,V], full no-cache logits [T+8,V]."""
    import torch
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids)[None], use_cache=True)
        prefill = out.logits[0].float().numpy().copy()
        pkv = out.past_key_values
        gen = [int(np.argmax(prefill[-1]))]
        dec = []
        for _ in range(N_DECODE):
            o = model(input_ids=torch.tensor([[gen[-1]]]), past_key_values=pkv, use_cache=True)
            pkv = o.past_key_values
            row = o.logits[0, -1].float().numpy().copy()
            dec.append(row)
            gen.append(int(np.argmax(row)))
        full_ids = np.concatenate([ids, np.array(gen[:N_DECODE], dtype=np.int64)])
        probe.enabled = False          # the router probe sees prefill + decode only
        full = model(input_ids=torch.tensor(full_ids)[None], use_cache=False).logits[0].float().numpy().copy()
    probe.enabled = True
    return prefill, np.array(gen, dtype=np.int64), np.stack(dec), full


# ---------------------------------------------------------------------------------------------
# Per model
# ---------------------------------------------------------------------------------------------

def build_model(spec, index, out_root, tmp_root, use_hf, versions):
    name, cfg = spec["name"], dict(spec["config"])
    print(f"\n=== {name} ===", flush=True)
    seed = SEED + 101 * index
    tensors = make_weights(cfg, seed)
    W = {n: a for n, _, a in tensors}
    n_params = param_count(tensors)
    gold = os.path.join(out_root, name)
    if os.path.exists(gold):
        shutil.rmtree(gold)
    extras = []
    if spec.get("k25"):
        hf_folder = os.path.join(tmp_root, name + "_text")
        write_hf_folder(hf_folder, cfg, tensors)
        extras = make_k25_extras(seed + 7, cfg["hidden_size"])
        write_hf_folder(gold, cfg, tensors, prefix="language_model.", extras=extras,
                        outer_cfg=k25_outer_config(cfg))
        back = read_folder_weights(gold)
        for n, a in W.items():
            if not np.array_equal(back["language_model." + n][1], a):
                fatal(f"K2.5 tensor language_model.{n} differs from the text-model tensor")
    else:
        hf_folder = gold
        write_hf_folder(gold, cfg, tensors, sharded=spec.get("sharded", False))
    # the files read back == the values drawn
    back = read_folder_weights(hf_folder)
    if set(back) != set(W) or any(not np.array_equal(back[n][1], a) for n, a in W.items()):
        fatal("safetensors round trip failed")
    for n, (dt, _) in back.items():
        want = "F32" if n.endswith("e_score_correction_bias") else "BF16"
        if dt != want:
            fatal(f"{n} stored as {dt}, want {want}")
    bias_layers = [n for n in W if n.endswith("e_score_correction_bias")]
    if not bias_layers or any(not (np.all(W[n] > 0) and np.all(W[n] < 0.1)) for n in bias_layers):
        fatal("router bias must be present, positive and small")
    n_extra = param_count(extras)
    print(f"  parameters: {n_params:,} text" + (f" + {n_extra:,} vision/projector (skipped by the engine)" if extras else ""))

    info = dict(name=name, covers=spec["covers"], params=n_params, extra_params=n_extra, cfg=cfg,
                sharded=spec.get("sharded", False), k25=spec.get("k25", False))
    cfg["_name"] = name
    inv, att, scale, lh = expected_rope(cfg)
    print(f"  expected rope (numpy, reference.md 1.5): low/high={lh}, attention factor {att:.9f}, "
          f"softmax scale {scale:.9f}")

    ref = []
    meta = {"script": "tools/make_goldens.py", "seed": str(SEED), "model_seed": str(seed), "model": name,
            "torch": versions.get("torch", "none"), "transformers": versions.get("transformers", "none")}
    if not use_hf:
        # numpy-only dry run: exercise the numpy path and the writers
        for p, T in enumerate(PROMPT_LENS):
            ids = prompt_ids(SEED, p, 0, T, cfg["vocab_size"])
            lg = np_forward(cfg, W, ids)
            print(f"  [dry] p{p}: numpy logits {lg.shape}, max|l| {np.max(np.abs(lg)):.3f}, "
                  f"argmax margin {argmax_margin(lg[-1]):.2e}")
        info["files"] = {f: os.path.getsize(os.path.join(gold, f)) for f in sorted(os.listdir(gold))}
        return info

    import time
    t0 = time.time()
    model, linfo = hf_load(hf_folder, tmp_root)
    check_loading_info(linfo)
    fused_names = check_state_dict(model, W)
    info["fused_names"] = fused_names
    info["rope"] = check_rope(model, cfg)
    info["eps"] = check_norm_eps(model, cfg)
    print_config_diff(model, cfg)
    print(f"  model.config.model_type={model.config.model_type}, experts impl="
          f"{getattr(model.config, '_experts_implementation', None)}, attn impl="
          f"{getattr(model.config, '_attn_implementation', None)}, n_group={model.config.n_group}, "
          f"topk_group={model.config.topk_group}, norm_topk_prob={model.config.norm_topk_prob}, "
          f"routed_scaling_factor={model.config.routed_scaling_factor}, q_lora_rank={model.config.q_lora_rank}")
    probe = RouterProbe(model, cfg)
    grouped = cfg["n_group"] > 1 and cfg["topk_group"] < cfg["n_group"]
    info["prompts"] = []
    for p, T in enumerate(PROMPT_LENS):
        for attempt in range(MAX_ATTEMPTS):
            ids = prompt_ids(SEED, p, attempt, T, cfg["vocab_size"])
            probe.reset()
            prefill, gen, dec, full = hf_generate(model, ids, probe)
            em, gm, changed, total, cmp_n, cmp_bad = router_stats(probe, cfg, W)
            am = min(argmax_margin(prefill[-1]), min(argmax_margin(r) for r in dec))
            if am >= ARGMAX_MARGIN_MIN and em >= ROUTER_MARGIN_MIN and gm >= ROUTER_MARGIN_MIN:
                break
            print(f"  p{p} attempt {attempt}: margins too small (argmax {am:.2e}, expert {em:.2e}, "
                  f"group {gm:.2e}); redrawing the prompt")
        else:
            fatal(f"p{p}: no prompt with safe margins in {MAX_ATTEMPTS} attempts")
        # cached decode vs one forward without cache
        d_dec = max_rel_diff(dec, full[T:T + N_DECODE])
        d_pre = max_rel_diff(prefill, full[:T])
        # independent numpy forward over prompt + g0..g7
        npl = np_forward(cfg, W, np.concatenate([ids, gen[:N_DECODE]]))
        d_np_pre = max_rel_diff(prefill, npl[:T])
        d_np_dec = max_rel_diff(dec, npl[T:T + N_DECODE])
        print(f"  p{p}: T={T} attempt={attempt} generated={gen.tolist()}")
        print(f"      margins: argmax {am:.2e}, router expert {em:.2e}, router group "
              f"{gm if gm != np.inf else 'n/a'}; token-layers routed {total}, changed by group mask {changed}; "
              f"HF routing compared on {cmp_n} token-layers, {cmp_bad} differ")
        print(f"      cached decode vs no-cache forward: {d_dec:.2e}; prefill vs no-cache forward: {d_pre:.2e} "
              f"(relative to max|row|)")
        print(f"      numpy float64 forward vs HF: prefill {d_np_pre:.2e}, decode {d_np_dec:.2e}; "
              f"max|logit| {np.max(np.abs(prefill)):.3f}")
        if d_dec > DECODE_RTOL or d_pre > DECODE_RTOL:
            fail(f"{name} p{p}: cached decode disagrees with the uncached forward ({d_dec:.2e}, {d_pre:.2e})")
        if d_np_pre > NUMPY_RTOL or d_np_dec > NUMPY_RTOL:
            fail(f"{name} p{p}: numpy forward disagrees with HF ({d_np_pre:.2e}, {d_np_dec:.2e})")
        if cmp_bad:
            fail(f"{name} p{p}: HF expert choice differs from ours on {cmp_bad} token-layers")
        if cmp_n == 0:
            print("      note: HF's expert indices were not visible to the probe; routing checked via the "
                  "numpy forward only")
        info["prompts"].append(dict(T=T, attempt=attempt, generated=gen.tolist(), argmax_margin=am,
                                    expert_margin=em, group_margin=gm, changed=changed, total=total,
                                    cmp_n=cmp_n, cmp_bad=cmp_bad, d_dec=d_dec, d_np=max(d_np_pre, d_np_dec)))
        meta[f"p{p}.prompt_attempt"] = str(attempt)
        ref += [(f"p{p}.prompt_ids", "I64", ids), (f"p{p}.prefill_logits", "F32", prefill),
                (f"p{p}.generated_ids", "I64", gen), (f"p{p}.decode_logits", "F32", dec)]
    if grouped:
        ch = sum(pr["changed"] for pr in info["prompts"])
        print(f"  group mask changed the expert set of {ch} token-layers (of "
              f"{sum(pr['total'] for pr in info['prompts'])})")
        if ch == 0:
            fail(f"{name}: n_group>1 but the group mask never changed an expert set")
    write_safetensors(os.path.join(gold, "reference.safetensors"), ref, meta)
    back, bmeta = read_safetensors(os.path.join(gold, "reference.safetensors"))
    for n, dt, a in ref:
        if back[n][0] != dt or not np.array_equal(back[n][1], a):
            fatal(f"reference round trip failed for {n}")
    del model
    print(f"  HF part took {time.time() - t0:.1f} s")
    info["files"] = {f: os.path.getsize(os.path.join(gold, f)) for f in sorted(os.listdir(gold))}
    for f, s in info["files"].items():
        print(f"  {f}: {s:,} bytes")
    print(f"  folder total: {dir_size(gold):,} bytes")
    return info


def dims_line(c):
    return (f"V {c['vocab_size']}, hidden {c['hidden_size']}, {c['num_hidden_layers']} layers "
            f"({c['first_k_dense_replace']} dense), heads {c['num_attention_heads']}, q_lora {c['q_lora_rank']}, "
            f"kv_lora {c['kv_lora_rank']}, nope/rope/v {c['qk_nope_head_dim']}/{c['qk_rope_head_dim']}/"
            f"{c['v_head_dim']}, inter {c['intermediate_size']}, experts {c['n_routed_experts']} top-"
            f"{c['num_experts_per_tok']} (moe_inter {c['moe_intermediate_size']}, groups {c['n_group']}/"
            f"{c['topk_group']}), shared {c['n_shared_experts']}")


def write_readme(out_root, infos, versions, argv):
    L = []
    L.append("# Golden checkpoints\n")
    L.append("Tiny DeepSeek-V3-family checkpoints with random BF16 weights and reference logits computed by "
             "Hugging Face transformers (`DeepseekV3ForCausalLM`, float32 on the CPU, eager attention) from "
             "exactly the BF16 values stored here. Made by `tools/make_goldens.py`; do not edit by hand.\n")
    L.append(f"- Command: `{' '.join(argv)}`, run from the repository root; the output folder's contents "
             f"are tests/goldens/ (torch is needed only for the references; the run is CPU-only)")
    L.append(f"- torch {versions.get('torch')}, transformers {versions.get('transformers')}, "
             f"numpy {versions.get('numpy')}, Python {versions.get('python')}")
    L.append(f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
    L.append(f"- Seed: {SEED} (model i draws its weights from SEED + 101*i; prompt p, attempt a from "
             f"numpy default_rng([SEED, 1000 + p, a]))\n")
    L.append("## Files in each folder\n")
    L.append("- `config.json`, `generation_config.json`: written by hand in the published form (not by "
             "`save_pretrained`, which would rewrite `rope_scaling` as `rope_parameters`).")
    L.append("- `model.safetensors` (BF16; `mlp.gate.e_score_correction_bias` F32), or for `kimi_k2` "
             "`model-00001-of-00002.safetensors`, `model-00002-of-00002.safetensors` + "
             "`model.safetensors.index.json`. Weights: linear std 1/sqrt(fan_in), norms 1 + 0.1 N(0,1) "
             "(q_a/kv_a layernorms too), embeddings std 1, router bias uniform(0, 0.1).")
    L.append("- `reference.safetensors`: for p in {0, 1}: `p{p}.prompt_ids` I64 [T] (T = 80, 67), "
             "`p{p}.prefill_logits` F32 [T, V] (one forward over the prompt), `p{p}.generated_ids` I64 [9] "
             "(g0 = argmax of the last prefill row; g_{i+1} = argmax(decode_logits[i])), "
             "`p{p}.decode_logits` F32 [8, V] (step i feeds g_i at position T+i through the KV cache). "
             "`__metadata__` holds the versions, seed and prompt attempt.\n")
    L.append("## Models\n")
    L.append("| model | covers | dims | parameters | bytes on disk |")
    L.append("|---|---|---|---|---|")
    for i in infos:
        par = f"{i['params']:,}" + (f" (+{i['extra_params']:,} vision/projector)" if i["extra_params"] else "")
        L.append(f"| `{i['name']}` | {i['covers']} | {dims_line(i['cfg'])} | {par} | "
                 f"{sum(i['files'].values()):,} |")
    L.append("")
    L.append("## Checks made by the script (it fails otherwise)\n")
    L.append("- Loading reports no missing, unexpected or mismatched keys; every loaded tensor (fused 3-D "
             "expert tensors un-fused) equals the written BF16 value.")
    L.append("- The loaded config has YaRN where intended; `rotary_emb.inv_freq`, `attention_scaling` and "
             "each attention's softmax `scaling` equal a numpy implementation of reference.md §1.5.")
    L.append("- Router: biases positive and nonzero; for n_group > 1 models the group mask changes at least "
             "one token's expert set; HF's expert choice equals ours where visible.")
    L.append("- An independent float64 numpy forward (reference.md §1.1–1.7) agrees with HF to "
             f"{NUMPY_RTOL:g}·max|row|; cached decode agrees with one uncached forward over prompt + g0..g7 "
             f"to {DECODE_RTOL:g}·max|row|.")
    L.append(f"- Prompts are redrawn until every greedy pick has (top1 − top2) ≥ {ARGMAX_MARGIN_MIN:g}·max|row| "
             f"and every router expert/group boundary a biased-score gap ≥ {ROUTER_MARGIN_MIN:g}.")
    L.append("- All of tests/goldens is under 5 MB.\n")
    L.append("## Notes on transformers (seen with 5.17)\n")
    L.append("- A config.json with model_type `kimi_k2` loaded as-is by `DeepseekV3ForCausalLM.from_pretrained` "
             "leaves every routed expert randomly initialised: the per-expert tensors are reported UNEXPECTED "
             "and the fused `mlp.experts.gate_up_proj` / `down_proj` MISSING, because the conversion that fuses "
             "them is keyed on model_type. The script reads the config, sets its model_type to `deepseek_v3` and "
             "loads the same folder (the math is the same); the state_dict check confirms every expert arrived.")
    L.append("- The loaded config keeps only `rope_parameters` (`rope_scaling` and top-level `rope_theta` are "
             "folded into it, `type` kept beside the added `rope_type`); `torch_dtype` becomes `dtype`.")
    L.append("- `q_a_layernorm` / `kv_a_layernorm` use eps 1e-6 whatever `rms_norm_eps` says (reference.md §1.2).\n")
    L.append("## Per-model results of the last run\n")
    for i in infos:
        r = i.get("rope", {})
        L.append(f"- `{i['name']}`: rope low/high {r.get('low_high')}, attention factor "
                 f"{r.get('attention_factor', float('nan')):.6f}, softmax scale {r.get('softmax_scale', float('nan')):.7f}; " +
                 "; ".join(f"p{k}: attempt {pr['attempt']}, generated {pr['generated']}, argmax margin "
                           f"{pr['argmax_margin']:.1e}, expert margin {pr['expert_margin']:.1e}, group-mask "
                           f"changes {pr['changed']}/{pr['total']}, numpy-vs-HF {pr['d_np']:.1e}, "
                           f"decode-vs-uncached {pr['d_dec']:.1e}" for k, pr in enumerate(i.get("prompts", []))))
    L.append("")
    with open(os.path.join(out_root, "README.md"), "w") as f:
        f.write("\n".join(L))


def write_tp8_readme(out_root, infos, versions, argv):
    """Each TP 8 golden's own README.md (the folder README lists MODELS only)."""
    for i in infos:
        L = [f"# {i['name']}\n",
             f"{i['covers']}.\n",
             f"- Made by `{' '.join(argv)}` (see tools/make_goldens.py: files and checks as for the "
             f"other goldens of this folder); dims {dims_line(i['cfg'])}",
             f"- torch {versions.get('torch')}, transformers {versions.get('transformers')}, "
             f"numpy {versions.get('numpy')}, Python {versions.get('python')}",
             f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             ""]
        with open(os.path.join(out_root, i["name"], "README.md"), "w") as f:
            f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/goldens")
    ap.add_argument("--no-hf", action="store_true", help="numpy-only dry run (no reference logits)")
    ap.add_argument("--only", default=None, help="comma-separated model names (debugging)")
    ap.add_argument("--tp8-only", action="store_true",
                    help="make only the goldens that shard at TP 8 (TP8_MODELS) into --out, "
                         "leaving the others and README.md as they are")
    args = ap.parse_args()
    models = TP8_MODELS if args.tp8_only else MODELS

    versions = {"numpy": np.__version__, "python": sys.version.split()[0]}
    if not args.no_hf:
        import torch
        import transformers
        torch.manual_seed(SEED)
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)
        versions["torch"] = torch.__version__
        versions["transformers"] = transformers.__version__
        print(f"torch {torch.__version__}, transformers {transformers.__version__}, numpy {np.__version__}")

    for m in models:
        c = m["config"]
        for k in ("num_attention_heads", "moe_intermediate_size", "intermediate_size", "vocab_size"):
            assert c[k] % (8 if args.tp8_only else 4) == 0, (m["name"], k)
        assert c["n_routed_experts"] % c["n_group"] == 0
        assert c["topk_group"] * c["n_routed_experts"] // c["n_group"] >= c["num_experts_per_tok"]
        rp = rope_params(c)
        if rp is not None:
            assert c["max_position_embeddings"] == rp["factor"] * rp["original_max_position_embeddings"], m["name"]

    os.makedirs(args.out, exist_ok=True)
    tmp_root = tempfile.mkdtemp(prefix="goldens_")
    infos = []
    try:
        for i, spec in enumerate(models):
            if args.only and spec["name"] not in args.only.split(","):
                continue
            # The TP 8 models draw from seeds after MODELS' own.
            index = i + (len(MODELS) if args.tp8_only else 0)
            infos.append(build_model(spec, index, args.out, tmp_root, not args.no_hf, versions))
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    argv = ["python3", "tools/make_goldens.py"] + sys.argv[1:]
    if not args.no_hf and not args.tp8_only:
        write_readme(args.out, infos, versions, argv)
    elif not args.no_hf:
        write_tp8_readme(args.out, infos, versions, argv)

    print("\n=== summary ===")
    for i in infos:
        print(f"  {i['name']:22s} params {i['params']:>9,}  files {sum(i['files'].values()):>10,} bytes")
    total = dir_size(args.out) if not args.tp8_only else sum(
        dir_size(os.path.join(args.out, i["name"])) for i in infos)
    print(f"  total under {args.out}{' (TP 8 models)' if args.tp8_only else ''}: {total:,} bytes "
          f"(limit {SIZE_LIMIT:,})")
    if total >= SIZE_LIMIT:
        fail(f"goldens total {total:,} bytes >= {SIZE_LIMIT:,}")
    if FAILURES:
        print("\nFAILED CHECKS:\n  " + "\n  ".join(FAILURES))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
