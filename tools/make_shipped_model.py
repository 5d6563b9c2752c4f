#!/usr/bin/env python3
"""Writes the weights and configs of models/myriad-tiny: a DeepSeek-V3-architecture model
(model_type kimi_k2) with RANDOM weights, small enough to ship in the repository.

Output (in --out, default models/myriad-tiny):
  config.json             Kimi-K2-style config (reference.md §1.10) with the dims in DIMS below.
  generation_config.json  bos, stop ids ([EOS], <|im_end|>) and default sampling values.
  model.safetensors       BF16 weights (e_score_correction_bias F32), DeepSeek-V3 tensor names
                          (reference.md §1.8), one tensor per routed expert; written here with the
                          layout of reference.md §3.1 (u64 header size, JSON header, data).

Weights: each tensor from its own numpy PCG64 stream seeded by (SEED, sha256 of its name), so a
tensor does not change when others are added. Linear weights N(0, 1/fan_in); embeddings N(0, 1);
RMSNorm weights uniform in [0.9, 1.1]; router bias uniform in [0.005, 0.015]. BF16 by
round-to-nearest-even. Deterministic: same numpy -> same bytes. Needs numpy only.

The tokenizer (tiktoken.model, tokenizer_config.json, chat_template.jinja) is made by
tools/make_tokenizer.py; the ids below must agree with it (tests/python/test_shipped_tokenizer.py).

Usage: python3 tools/make_shipped_model.py [--out models/myriad-tiny]
"""

import argparse
import hashlib
import json
import os
import struct

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 1234

# Token ids of tools/make_tokenizer.py: 3840 base tokens, then the specials.
BOS, EOS, IM_END, PAD = 3840, 3841, 3842, 4095

DIMS = {
    "vocab_size": 4096,
    "hidden_size": 256,
    "intermediate_size": 384,
    "moe_intermediate_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "q_lora_rank": 96,
    "kv_lora_rank": 64,
    "qk_nope_head_dim": 32,
    "qk_rope_head_dim": 16,
    "v_head_dim": 32,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
}


def model_config():
    d = DIMS
    return {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "kimi_k2",
        "hidden_act": "silu",
        "attention_bias": False,
        "tie_word_embeddings": False,
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
        "moe_layer_freq": 1,
        "torch_dtype": "bfloat16",
        "qk_nope_head_dim": d["qk_nope_head_dim"],
        "qk_rope_head_dim": d["qk_rope_head_dim"],
        "v_head_dim": d["v_head_dim"],
        "kv_lora_rank": d["kv_lora_rank"],
        "vocab_size": d["vocab_size"],
        "hidden_size": d["hidden_size"],
        "intermediate_size": d["intermediate_size"],
        "moe_intermediate_size": d["moe_intermediate_size"],
        "num_hidden_layers": d["num_hidden_layers"],
        "num_attention_heads": d["num_attention_heads"],
        "num_key_value_heads": d["num_key_value_heads"],
        "q_lora_rank": d["q_lora_rank"],
        "n_routed_experts": d["n_routed_experts"],
        "num_experts_per_tok": d["num_experts_per_tok"],
        "n_shared_experts": d["n_shared_experts"],
        "first_k_dense_replace": d["first_k_dense_replace"],
        "n_group": 1,
        "topk_group": 1,
        "norm_topk_prob": True,
        "routed_scaling_factor": 2.827,
        "rms_norm_eps": 1e-05,
        "rope_theta": 50000.0,
        "rope_scaling": {
            "type": "yarn",
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 1.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        "max_position_embeddings": 131072,
        "num_nextn_predict_layers": 0,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
    }


def generation_config():
    # Stop on [EOS] and <|im_end|> as Kimi does; sampling defaults of Kimi-K2-Instruct's model
    # card (temperature 0.6) with a top_p of 0.95.
    return {
        "bos_token_id": BOS,
        "eos_token_id": [EOS, IM_END],
        "pad_token_id": PAD,
        "do_sample": True,
        "temperature": 0.6,
        "top_p": 0.95,
    }


def tensor_specs():
    """(name, shape, init, dtype) in file order; init is ('linear', fan_in) | ('embed',) |
    ('norm',) | ('bias',)."""
    d = DIMS
    h, H = d["hidden_size"], d["num_attention_heads"]
    qk = d["qk_nope_head_dim"] + d["qk_rope_head_dim"]
    specs = []

    def lin(name, out_dim, in_dim):
        specs.append((name, (out_dim, in_dim), ("linear", in_dim), "BF16"))

    def norm(name, dim):
        specs.append((name, (dim,), ("norm",), "BF16"))

    def mlp(prefix, inter):
        lin(f"{prefix}.gate_proj.weight", inter, h)
        lin(f"{prefix}.up_proj.weight", inter, h)
        lin(f"{prefix}.down_proj.weight", h, inter)

    specs.append(("model.embed_tokens.weight", (d["vocab_size"], h), ("embed",), "BF16"))
    for L in range(d["num_hidden_layers"]):
        p = f"model.layers.{L}"
        norm(f"{p}.input_layernorm.weight", h)
        lin(f"{p}.self_attn.q_a_proj.weight", d["q_lora_rank"], h)
        norm(f"{p}.self_attn.q_a_layernorm.weight", d["q_lora_rank"])
        lin(f"{p}.self_attn.q_b_proj.weight", H * qk, d["q_lora_rank"])
        lin(f"{p}.self_attn.kv_a_proj_with_mqa.weight", d["kv_lora_rank"] + d["qk_rope_head_dim"], h)
        norm(f"{p}.self_attn.kv_a_layernorm.weight", d["kv_lora_rank"])
        lin(f"{p}.self_attn.kv_b_proj.weight",
            H * (d["qk_nope_head_dim"] + d["v_head_dim"]), d["kv_lora_rank"])
        lin(f"{p}.self_attn.o_proj.weight", h, H * d["v_head_dim"])
        norm(f"{p}.post_attention_layernorm.weight", h)
        if L < d["first_k_dense_replace"]:
            mlp(f"{p}.mlp", d["intermediate_size"])
        else:
            lin(f"{p}.mlp.gate.weight", d["n_routed_experts"], h)
            specs.append((f"{p}.mlp.gate.e_score_correction_bias", (d["n_routed_experts"],),
                          ("bias",), "F32"))
            for e in range(d["n_routed_experts"]):
                mlp(f"{p}.mlp.experts.{e}", d["moe_intermediate_size"])
            mlp(f"{p}.mlp.shared_experts", d["moe_intermediate_size"] * d["n_shared_experts"])
    norm("model.norm.weight", h)
    lin("lm_head.weight", d["vocab_size"], h)
    return specs


def make_tensor(name, shape, init):
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    rng = np.random.default_rng([SEED, seed])
    if init[0] == "linear":
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(1.0 / np.sqrt(init[1]))
    if init[0] == "embed":
        return rng.standard_normal(shape, dtype=np.float32)
    if init[0] == "norm":
        return rng.uniform(0.9, 1.1, shape).astype(np.float32)
    if init[0] == "bias":
        return rng.uniform(0.005, 0.015, shape).astype(np.float32)
    raise ValueError(init)


def to_bf16_bytes(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even (no NaN/Inf here)
    return u.astype("<u2").tobytes()


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, shape, bytes)."""
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape, data in tensors:
        size = {"BF16": 2, "F32": 4}[dtype]
        assert len(data) == size * int(np.prod(shape)) and offset % size == 0, name
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    hdr = json.dumps(header, separators=(",", ":")).encode()
    hdr += b" " * (-(8 + len(hdr)) % 8)  # data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for _, _, _, data in tensors:
            f.write(data)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "models", "myriad-tiny"))
    args = ap.parse_args()

    d = DIMS
    for field in ("num_attention_heads", "intermediate_size", "moe_intermediate_size",
                  "vocab_size", "n_routed_experts"):
        assert d[field] % 4 == 0, f"{field} must divide by 4 (tensor parallel 1, 2, 4)"

    tensors = []
    total = active = 0
    for name, shape, init, dtype in tensor_specs():
        x = make_tensor(name, shape, init)
        data = to_bf16_bytes(x) if dtype == "BF16" else x.astype("<f4").tobytes()
        tensors.append((name, dtype, shape, data))
        n = int(np.prod(shape))
        total += n
        if ".experts." in name:
            n = n * d["num_experts_per_tok"] // d["n_routed_experts"]
        if name != "model.embed_tokens.weight":
            active += n

    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), model_config())
    write_json(os.path.join(args.out, "generation_config.json"), generation_config())
    path = os.path.join(args.out, "model.safetensors")
    write_safetensors(path, tensors)
    print(f"{len(tensors)} tensors, {total:,} parameters ({active:,} used per token, "
          f"not counting the embedding), {os.path.getsize(path):,} bytes in {path}")


if __name__ == "__main__":
    main()
