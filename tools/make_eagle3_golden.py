#!/usr/bin/env python3
"""Make the EAGLE3 goldens: two tiny EAGLE3 draft checkpoints with random weights for the committed
golden target tests/goldens/moonlight_plain (3 layers, hidden 64, vocabulary 256), and each
draft's reference logits, for tests/eagle3_test.cpp.

What it writes (into --out, default tests/goldens_eagle3/):

  moonlight_a/   LlamaForCausalLMEagle3 config.json: heads 4, kv heads 2, head_dim 24 (given,
                 not hidden / heads), intermediate 96, YaRN rope (factor 4, original 64),
                 draft_vocab_size 128 with d2t (I64) and t2d (BOOL), its own embed_tokens,
                 eagle_config.eagle_aux_hidden_state_layer_ids [0, 1, 2]
  moonlight_b/   heads 4 = kv heads, head_dim absent (16), intermediate 128, llama3 rope (factor 8,
                 original 32), the whole vocabulary (no d2t), no embed_tokens (the target's is
                 shared), norm_before_residual true, no aux layer ids (vLLM's default 2, L/2, L-3
                 = 2, 1, 0 for L = 3)
  each with model.safetensors (BF16) and reference.safetensors (F32/I64):
      prompt_ids    I64 [T]         random ids
      g0            I64 [1]         the target's greedy token after the prompt (transformers)
      aux_hidden    F32 [T, 3H]     the target's aux hidden states, in the draft's order: for id j
                                    the residual stream entering layer j (transformers'
                                    hidden_states[j]: 0 is the embedding)
      logits        F32 [T, Vd]     draft row p = (aux_hidden[p], token p + 1; g0 after the last),
                                    causal over rows 0..p: logits of the token at p + 2 (draft ids)
      chain_ids     I64 [3]         target ids: d0 from logits[T-1] through d2t; d_j from
                                    chain_logits[j-1]
      chain_logits  F32 [2, Vd]     chained rows at positions T, T+1: the token drafted last with
                                    the previous row's output hidden state (before the final norm)

The target's hidden states come from transformers' DeepseekV3ForCausalLM (float32, eager;
output_hidden_states) on the committed moonlight_plain weights. The draft's forward is written here
from the EAGLE3 description (in float64):
  g = fc(concat(aux)) (a chained row: the previous row's output);  e = embed(token)
  a = concat(input_layernorm(e), hidden_norm(g));  r = g (hidden_norm(g) with norm_before_residual)
  r = r + o_proj(attention(rope(q_proj(a)), rope(k_proj(a)), v_proj(a)))  (causal, GQA, rotate-half)
  out = r + down(silu(gate(x)) * up(x)), x = post_attention_layernorm(r)
  logits = lm_head(norm(out));  target id = draft id + d2t[draft id]
The prompt is redrawn until every greedy pick has a margin, so an engine within tolerance picks the
same tokens.

Usage (needs torch, transformers, numpy; CPU only):
    python3 tools/make_eagle3_golden.py --out /tmp/goldens_eagle3
then copy the folders to tests/goldens_eagle3/ and `xz -9` their .safetensors files.
"""

import argparse
import datetime
import json
import lzma
import math
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402

SEED = 20261203
T = 24
N_CHAIN = 3
ARGMAX_MARGIN_MIN = 1e-3
MAX_ATTEMPTS = 64
TARGET = "moonlight_plain"

DRAFTS = {
    "moonlight_a": dict(
        heads=4, kv_heads=2, head_dim=24, inter=96, draft_vocab=128, own_embed=True,
        norm_before_residual=False, aux_ids=[0, 1, 2], rope_theta=10000.0,
        rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                      "beta_fast": 32.0, "beta_slow": 1.0}),
    "moonlight_b": dict(
        heads=4, kv_heads=4, head_dim=None, inter=128, draft_vocab=None, own_embed=False,
        norm_before_residual=True, aux_ids=None, rope_theta=50000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
}


def draft_config(spec, target_cfg):
    H, V = target_cfg["hidden_size"], target_cfg["vocab_size"]
    c = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": H,
        "num_attention_heads": spec["heads"],
        "num_key_value_heads": spec["kv_heads"],
        "intermediate_size": spec["inter"],
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "max_position_embeddings": 2048,
        "rope_theta": spec["rope_theta"],
        "rope_scaling": spec["rope_scaling"],
        "vocab_size": V,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    if spec["head_dim"] is not None:
        c["head_dim"] = spec["head_dim"]
    if spec["draft_vocab"] is not None:
        c["draft_vocab_size"] = spec["draft_vocab"]
    if spec["norm_before_residual"]:
        c["norm_before_residual"] = True
    if spec["aux_ids"] is not None:
        c["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": spec["aux_ids"],
                             "use_aux_hidden_state": True}
    return c


def draft_weights(cfg, seed, target_embed):
    """(name, dtype, array) list; BF16 arrays hold BF16 values. Also the d2t map (or None)."""
    rng = np.random.default_rng(seed)
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", H // nh)
    Vd, I = cfg.get("draft_vocab_size", V), cfg["intermediate_size"]
    out = []

    def lin(name, o, i):
        out.append((name, "BF16", mg.bf16_round(rng.standard_normal((o, i)) / math.sqrt(i))))

    def norm(name):
        out.append((name, "BF16", mg.bf16_round(1.0 + 0.1 * rng.standard_normal(H))))

    lin("fc.weight", H, 3 * H)
    norm("midlayer.input_layernorm.weight")
    norm("midlayer.hidden_norm.weight")
    lin("midlayer.self_attn.q_proj.weight", nh * hd, 2 * H)
    lin("midlayer.self_attn.k_proj.weight", nkv * hd, 2 * H)
    lin("midlayer.self_attn.v_proj.weight", nkv * hd, 2 * H)
    lin("midlayer.self_attn.o_proj.weight", H, nh * hd)
    norm("midlayer.post_attention_layernorm.weight")
    lin("midlayer.mlp.gate_proj.weight", I, H)
    lin("midlayer.mlp.up_proj.weight", I, H)
    lin("midlayer.mlp.down_proj.weight", H, I)
    norm("norm.weight")
    lin("lm_head.weight", Vd, H)
    if "embed_tokens" in cfg.get("_own", ""):
        out.append(("embed_tokens.weight", "BF16", mg.bf16_round(rng.standard_normal((V, H)))))
    d2t = None
    if Vd < V:
        ids = np.sort(rng.choice(V, size=Vd, replace=False)).astype(np.int64)
        d2t = ids - np.arange(Vd, dtype=np.int64)
        out.append(("d2t", "I64", d2t))
        t2d = np.zeros(V, dtype=bool)
        t2d[ids] = True
        out.append(("t2d", "BOOL", t2d))
    W = {n: a for n, _, a in out}
    W["_embed"] = W["embed_tokens.weight"] if "embed_tokens.weight" in W else target_embed
    return out, W, d2t


def write_draft(folder, cfg, tensors):
    os.makedirs(folder, exist_ok=True)
    mg.write_json(os.path.join(folder, "config.json"), cfg)
    mg.write_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"})


# ---------------------------------------------------------------------------------------------
# The draft's forward (float64)
# ---------------------------------------------------------------------------------------------

def rope_table(cfg):
    """inv_freq [head_dim / 2] and the factor on cos and sin (transformers' Llama rope types)."""
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    dim = cfg.get("head_dim", H // nh)
    base = cfg["rope_theta"]
    inv = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    factor = rs.get("factor", 1.0)
    if kind == "llama3":
        old = rs["original_max_position_embeddings"]
        lo, hi = rs["low_freq_factor"], rs["high_freq_factor"]
        wl = 2 * math.pi / inv
        scaled = np.where(wl > old / lo, inv / factor, inv)
        smooth = (old / wl - lo) / (hi - lo)
        mid = (wl >= old / hi) & (wl <= old / lo)
        return np.where(mid, (1 - smooth) * inv / factor + smooth * inv, scaled), 1.0
    if kind == "yarn":
        orig = rs["original_max_position_embeddings"]
        bf, bs = rs.get("beta_fast", 32.0), rs.get("beta_slow", 1.0)

        def corr(rot):
            return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
        low, high = max(math.floor(corr(bf)), 0), min(math.ceil(corr(bs)), dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        extra = 1 - ramp
        inv = inv / factor * (1 - extra) + inv * extra
        m, mad = rs.get("mscale"), rs.get("mscale_all_dim")
        af = rs.get("attention_factor")
        if af is None:
            af = (mg.get_mscale(factor, m) / mg.get_mscale(factor, mad)) if (m and mad) else mg.get_mscale(factor)
        return inv, af
    return inv, 1.0


def draft_forward(cfg, W, tokens, g):
    """Rows at positions 0..n-1: tokens [n] (target ids), g [n, H] (fc's output or an own output).
    Returns logits [n, Vd] and the output hidden states [n, H]."""
    import torch
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps = cfg.get("head_dim", H // nh), cfg["rms_norm_eps"]
    n = len(tokens)

    def rms(x, w):
        return t(w) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def lin(x, name):
        return x @ t(W[name]).T

    g = t(g)
    e = t(W["_embed"])[torch.tensor(tokens)]
    p = "midlayer."
    gn = rms(g, W[p + "hidden_norm.weight"])
    a = torch.cat([rms(e, W[p + "input_layernorm.weight"]), gn], dim=-1)
    residual = gn if cfg.get("norm_before_residual") else g
    q = lin(a, p + "self_attn.q_proj.weight").view(n, nh, hd).transpose(0, 1)
    k = lin(a, p + "self_attn.k_proj.weight").view(n, nkv, hd).transpose(0, 1)
    v = lin(a, p + "self_attn.v_proj.weight").view(n, nkv, hd).transpose(0, 1)
    inv, af = rope_table(cfg)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * t(inv)[None]
    cos = torch.cat([ang.cos(), ang.cos()], -1) * af
    sin = torch.cat([ang.sin(), ang.sin()], -1) * af

    def rot(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin
    q, k = rot(q), rot(k)
    k = k.repeat_interleave(nh // nkv, dim=0)
    v = v.repeat_interleave(nh // nkv, dim=0)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
    s = s + torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)
    o = (s.softmax(-1) @ v).transpose(0, 1).reshape(n, nh * hd)
    residual = residual + lin(o, p + "self_attn.o_proj.weight")
    x = rms(residual, W[p + "post_attention_layernorm.weight"])
    m = torch.nn.functional.silu(lin(x, p + "mlp.gate_proj.weight")) * lin(x, p + "mlp.up_proj.weight")
    out = residual + lin(m, p + "mlp.down_proj.weight")
    logits = rms(out, W["norm.weight"]) @ t(W["lm_head.weight"]).T
    return logits, out


def unpack_target(tmp):
    """The committed golden target, unpacked into tmp (its safetensors ship xz-compressed)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "goldens", TARGET)
    dst = os.path.join(tmp, TARGET)
    os.makedirs(dst)
    for f in os.listdir(src):
        if f.endswith(".xz"):
            with lzma.open(os.path.join(src, f)) as i, open(os.path.join(dst, f[:-3]), "wb") as o:
                shutil.copyfileobj(i, o)
        elif f != "reference.safetensors.xz":
            shutil.copy(os.path.join(src, f), dst)
    return dst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/goldens_eagle3")
    args = ap.parse_args()
    import torch
    import transformers
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    tmp = tempfile.mkdtemp(prefix="eagle3_golden_")
    folder = unpack_target(tmp)
    tcfg = json.load(open(os.path.join(folder, "config.json")))
    model, info = mg.hf_load(folder, tmp)
    mg.check_loading_info(info)
    TW = mg.read_folder_weights(folder)
    target_embed = TW["model.embed_tokens.weight"][1]
    H, V, L = tcfg["hidden_size"], tcfg["vocab_size"], tcfg["num_hidden_layers"]

    for index, (name, spec) in enumerate(DRAFTS.items()):
        cfg = draft_config(spec, tcfg)
        wcfg = dict(cfg, _own="embed_tokens" if spec["own_embed"] else "")
        tensors, W, d2t = draft_weights(wcfg, SEED + 17 * index, target_embed)
        to_target = (lambda d: int(d + d2t[d])) if d2t is not None else (lambda d: int(d))
        aux_ids = spec["aux_ids"] if spec["aux_ids"] is not None else [2, L // 2, L - 3]
        for attempt in range(MAX_ATTEMPTS):
            ids = mg.prompt_ids(SEED + index, 0, attempt, T, V)
            with torch.no_grad():
                out = model(input_ids=torch.tensor(ids)[None], use_cache=False, output_hidden_states=True)
                tlog = out.logits[0].double().numpy()
                aux = np.concatenate([out.hidden_states[j][0].double().numpy() for j in aux_ids], -1)
                g0 = int(np.argmax(tlog[-1]))
                nxt = [int(x) for x in ids[1:]] + [g0]
                g = torch.tensor(aux) @ torch.tensor(W["fc.weight"], dtype=torch.float64).T
                logits, hout = draft_forward(cfg, W, nxt, g.numpy())
                margins = [mg.argmax_margin(tlog[-1])]
                chain = [to_target(int(torch.argmax(logits[-1])))]
                margins.append(mg.argmax_margin(logits[-1].numpy()))
                chain_logits, rows_g, toks = [], g, list(nxt)
                for j in range(1, N_CHAIN):
                    rows_g = torch.cat([rows_g, hout[-1:]], 0)
                    toks.append(chain[-1])
                    clog, cout = draft_forward(cfg, W, toks, rows_g.numpy())
                    if float((clog[:-j] - logits).abs().max()) > 1e-9 * float(logits.abs().max()):
                        mg.fatal("a chained pass changed the earlier rows' logits")
                    row = clog[-1].numpy()
                    chain_logits.append(row)
                    chain.append(to_target(int(np.argmax(row))))
                    margins.append(mg.argmax_margin(row))
                    hout = cout
            print(f"{name} attempt {attempt}: argmax margins {min(margins):.4g}, chain {chain}")
            if min(margins) >= ARGMAX_MARGIN_MIN:
                break
        else:
            mg.fatal(f"{name}: no prompt with safe margins in {MAX_ATTEMPTS} attempts")
        dst = os.path.join(args.out, name)
        write_draft(dst, cfg, tensors)
        meta = {"torch": torch.__version__, "transformers": transformers.__version__,
                "numpy": np.__version__, "seed": SEED, "attempt": attempt, "target": TARGET,
                "aux_layer_ids": aux_ids,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
        mg.write_safetensors(os.path.join(dst, "reference.safetensors"), [
            ("prompt_ids", "I64", ids),
            ("g0", "I64", np.array([g0], dtype=np.int64)),
            ("aux_hidden", "F32", aux.astype(np.float32)),
            ("logits", "F32", logits.numpy().astype(np.float32)),
            ("chain_ids", "I64", np.array(chain, dtype=np.int64)),
            ("chain_logits", "F32", np.stack(chain_logits).astype(np.float32)),
        ], meta)
        print(f"wrote {dst}: g0 {g0}, chain {chain}, {mg.dir_size(dst)} bytes")
    if mg.FAILURES:
        sys.exit(1)


if __name__ == "__main__":
    main()
