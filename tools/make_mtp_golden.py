#!/usr/bin/env python3
"""Make the MTP golden: a tiny DeepSeek-V3 checkpoint with one multi-token-prediction layer and the
MTP layer's reference logits (reference.md 1.9), for tests/mtp_test.cpp.

What it writes (into --out, default tests/goldens_mtp/v3_mtp/):

  config.json, generation_config.json   DeepSeek-V3 shape, num_hidden_layers 2 (1 dense, 1 MoE),
                                        num_nextn_predict_layers 1
  model.safetensors                     BF16 weights (router biases F32): the two decoder layers,
                                        then the MTP layer as model.layers.2.* (enorm, hnorm,
                                        eh_proj [hidden, 2*hidden], a MoE decoder layer,
                                        shared_head.norm, and copies of the embedding and lm_head
                                        as embed_tokens / shared_head.head, as DeepSeek ships them)
  reference.safetensors                 F32/I64:
      prompt_ids    I64 [T]      random ids
      g0            I64 [1]      the target's greedy token after the prompt
      hidden        F32 [T, H]   the target's hidden state before the final norm, every position
      mtp_logits    F32 [T, V]   MTP row p: (hidden[p], token p + 1), the token after the last prompt
                                 token being g0; logits of the token at p + 2
      chain_ids     I64 [3]      d0 = argmax(mtp_logits[T-1]); d_{j} = argmax(chain_logits[j-1])
      chain_logits  F32 [2, V]   chained MTP rows at positions T, T+1: the token the row before
                                 drafted, with the MTP layer's own output hidden state of that row

How: weights drawn with numpy (make_goldens.py's generator, same distributions), rounded to BF16.
The target's hidden states come from transformers' DeepseekV3ForCausalLM (float32, eager) on the
two decoder layers; the MTP layer is written here from reference.md 1.9 in torch:
  e = embed(next token), zero at position 0;  x = eh_proj(concat(enorm(e), hnorm(h_prev)));
  x = decoder_layer(x) (transformers' own DeepseekV3DecoderLayer with the MTP layer's weights,
  loaded by from_pretrained as layer 2 of a three-layer model, causal over the MTP rows);
  logits = shared_head.head(shared_head.norm(x)).
transformers' DeepseekV3 has no MTP module (it ignores model.layers.61.* on load). The prompt is
redrawn until every greedy pick (g0, d0..d2) has a margin and every MoE routing decision of both MoE
layers a gap, so an engine within tolerance picks the same tokens.

Usage (needs torch and transformers; CPU only):
    python3 tools/make_mtp_golden.py --out /tmp/v3_mtp
then copy the folder to tests/goldens_mtp/v3_mtp/ and `xz -9` its .safetensors files.
"""

import argparse
import datetime
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402

SEED = 20261202
T = 40
N_CHAIN = 3
ARGMAX_MARGIN_MIN = 1e-3
ROUTER_MARGIN_MIN = 1e-5
MAX_ATTEMPTS = 64


def config(layers):
    c = mg.text_config(
        q_lora=48, n_group=4, topk_group=2, topk=3, n_shared=1, first_dense=1, norm_topk=True,
        eps=1e-6, rsf=2.5, max_pos=163840, rope_theta=10000.0, layers=layers,
        rope_scaling={"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                      "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                      "type": "yarn"})
    return c


def mtp_extras(cfg, W, seed):
    """The MTP layer's own tensors beyond its decoder layer (layer index num_hidden_layers)."""
    rng = np.random.default_rng(seed)
    H = cfg["hidden_size"]
    p = f"model.layers.{cfg['num_hidden_layers']}."
    return [
        (p + "enorm.weight", "BF16", mg.bf16_round(1.0 + 0.1 * rng.standard_normal(H))),
        (p + "hnorm.weight", "BF16", mg.bf16_round(1.0 + 0.1 * rng.standard_normal(H))),
        (p + "eh_proj.weight", "BF16", mg.bf16_round(rng.standard_normal((H, 2 * H)) / math.sqrt(2 * H))),
        (p + "shared_head.norm.weight", "BF16", mg.bf16_round(1.0 + 0.1 * rng.standard_normal(H))),
        (p + "embed_tokens.weight", "BF16", W["model.embed_tokens.weight"]),
        (p + "shared_head.head.weight", "BF16", W["lm_head.weight"]),
    ]


def load(folder):
    import torch
    from transformers import DeepseekV3ForCausalLM
    model, info = DeepseekV3ForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    mg.check_loading_info(info)
    model.eval()
    return model


class MoeInputs:
    """The input of a MoE block, captured at each call (for the routing margins)."""

    def __init__(self, mlp):
        self.xs = []
        mlp.register_forward_pre_hook(lambda mod, args: self.xs.append(
            args[0].detach().reshape(-1, args[0].shape[-1]).double().numpy()))


def route_margins(cfg, W, layer, xs):
    p = f"model.layers.{layer}.mlp.gate."
    x = np.concatenate(xs)
    logits = x @ W[p + "weight"].astype(np.float64).T
    _, _, em, gm = mg.route(cfg, logits, W[p + "e_score_correction_bias"].astype(np.float64))
    return min(em, gm)


def rms(x, w, eps):
    import torch
    v = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(v + eps))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/goldens_mtp/v3_mtp")
    args = ap.parse_args()
    import torch
    import transformers
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    cfg = config(2)
    cfg["num_nextn_predict_layers"] = 1
    full = config(3)                      # the MTP layer's decoder layer drawn as layer 2
    W_list = mg.make_weights(full, SEED)
    W = {n: a for n, _, a in W_list}
    extras = mtp_extras(cfg, W, SEED + 1)
    Wx = dict(W)
    Wx.update({n: a for n, _, a in extras})
    H, V, eps = cfg["hidden_size"], cfg["vocab_size"], cfg["rms_norm_eps"]
    L = cfg["num_hidden_layers"]
    pm = f"model.layers.{L}."

    tmp = tempfile.mkdtemp(prefix="mtp_golden_")
    target_w = [t for t in W_list if not t[0].startswith(pm)]
    mg.write_hf_folder(os.path.join(tmp, "target"), dict(cfg, num_nextn_predict_layers=0), target_w)
    mg.write_hf_folder(os.path.join(tmp, "three"), full, W_list)
    target = load(os.path.join(tmp, "target"))
    three = load(os.path.join(tmp, "three"))
    mg.check_state_dict(target, {n: a for n, _, a in target_w})
    mg.check_state_dict(three, W)
    mtp_layer = three.model.layers[L]     # transformers' decoder layer holding the MTP layer's weights
    rotary = three.model.rotary_emb
    tw = lambda n: torch.tensor(Wx[n], dtype=torch.float32)  # noqa: E731
    embed, lm_head = tw("model.embed_tokens.weight"), tw("lm_head.weight")
    enorm, hnorm = tw(pm + "enorm.weight"), tw(pm + "hnorm.weight")
    eh_proj, head_norm = tw(pm + "eh_proj.weight"), tw(pm + "shared_head.norm.weight")
    target_moe = MoeInputs(target.model.layers[1].mlp)
    mtp_moe = MoeInputs(mtp_layer.mlp)

    pre_norm = []
    target.model.norm.register_forward_pre_hook(lambda mod, a: pre_norm.append(a[0].detach()[0].clone()))

    def mtp_forward(next_ids, h_prev):
        """reference.md 1.9 over rows at positions 0..n-1: logits [n, V], output hidden [n, H]."""
        n = len(next_ids)
        pos = torch.arange(n)
        e = embed[torch.tensor(next_ids)]
        e = torch.where((pos == 0)[:, None], torch.zeros_like(e), e)
        x = torch.cat([rms(e, enorm, eps), rms(h_prev, hnorm, eps)], dim=-1) @ eh_proj.T
        x = x[None]
        mask = torch.full((n, n), torch.finfo(torch.float32).min).triu(1)[None, None]
        pe = rotary(x, pos[None])
        out = mtp_layer(x, attention_mask=mask, position_ids=pos[None], position_embeddings=pe)
        out = (out[0] if isinstance(out, tuple) else out)[0]
        return (rms(out, head_norm, eps) @ lm_head.T), out

    for attempt in range(MAX_ATTEMPTS):
        ids = mg.prompt_ids(SEED, 0, attempt, T, V)
        pre_norm.clear()
        target_moe.xs.clear()
        mtp_moe.xs.clear()
        with torch.no_grad():
            logits = target(input_ids=torch.tensor(ids)[None], use_cache=False).logits[0].numpy()
            hidden = pre_norm[0]
            g0 = int(np.argmax(logits[-1]))
            next_ids = [int(t) for t in ids[1:]] + [g0]
            mlog, mout = mtp_forward(next_ids, hidden)
            chain_ids = [int(torch.argmax(mlog[-1]))]
            margins = [mg.argmax_margin(logits[-1]), mg.argmax_margin(mlog[-1].numpy())]
            chain_logits = []
            h_rows, toks = hidden, list(next_ids)
            for j in range(1, N_CHAIN):
                # The chained row: the token the last row drafted, with that row's output hidden.
                h_rows = torch.cat([h_rows, mout[-1:]], dim=0)
                toks.append(chain_ids[-1])
                mtp_moe.xs.clear()  # the margins below: the rows of the last (longest) pass
                clog, cout = mtp_forward(toks, h_rows)
                # Causal: the earlier rows are as before.
                if float((clog[:-j] - mlog).abs().max()) > 1e-4 * float(mlog.abs().max()):
                    mg.fatal("a chained MTP pass changed the earlier rows' logits")
                row = clog[-1].numpy()
                chain_logits.append(row)
                chain_ids.append(int(np.argmax(row)))
                margins.append(mg.argmax_margin(row))
                mout = cout
        rmargin = min(route_margins(cfg, Wx, 1, target_moe.xs), route_margins(full, Wx, L, mtp_moe.xs))
        print(f"attempt {attempt}: argmax margins {min(margins):.4g}, router margin {rmargin:.3g}")
        if min(margins) >= ARGMAX_MARGIN_MIN and rmargin >= ROUTER_MARGIN_MIN:
            break
    else:
        mg.fatal(f"no prompt with safe margins in {MAX_ATTEMPTS} attempts")

    os.makedirs(args.out, exist_ok=True)
    mg.write_hf_folder(args.out, cfg, W_list, extras=extras)
    meta = {"torch": torch.__version__, "transformers": transformers.__version__, "seed": SEED,
            "attempt": attempt, "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    mg.write_safetensors(os.path.join(args.out, "reference.safetensors"), [
        ("prompt_ids", "I64", ids),
        ("g0", "I64", np.array([g0], dtype=np.int64)),
        ("hidden", "F32", hidden.numpy()),
        ("mtp_logits", "F32", mlog.numpy()),
        ("chain_ids", "I64", np.array(chain_ids, dtype=np.int64)),
        ("chain_logits", "F32", np.stack(chain_logits)),
    ], meta)
    print(f"wrote {args.out}: g0 {g0}, chain {chain_ids}, {mg.dir_size(args.out)} bytes")
    if mg.FAILURES:
        sys.exit(1)


if __name__ == "__main__":
    main()
