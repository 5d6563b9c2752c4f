"""A compact torch DeepSeek-V3 (as transformers' DeepseekV3ForCausalLM computes it) for training.

Same math as transformers 5.x (reference.md §1): MLA with q_lora (q_a_proj, q_a_layernorm,
q_b_proj; kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj), YaRN RoPE on the rope part applied the
interleaved way (rope_interleave, HF's default), softmax scale qk_head_dim^-0.5 * mscale(factor,
mscale_all_dim)^2; dense first layers; MoE layers with a sigmoid router in fp32, noaux_tc top-k on
scores + e_score_correction_bias (bias used for the choice only), norm_topk_prob,
routed_scaling_factor, and a shared expert.

For speed the routed experts run densely: all experts' gate/up projections as one wide matmul, the
activations scaled by each token's routing weight (zero for experts not chosen), one down
projection. That is the same sum as running only the chosen experts. The router bias is not
learned by gradient: train.py nudges it from the expert load (aux-loss-free balancing).
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def yarn_rope(cfg):
    """(inv_freq, attention_factor, softmax scale) as transformers computes them for YaRN."""
    d = cfg["qk_rope_head_dim"]
    base = cfg["rope_theta"]
    rs = cfg.get("rope_scaling") or {}
    qk_head_dim = cfg["qk_nope_head_dim"] + d
    scale = qk_head_dim ** -0.5
    pos_freqs = base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    if not rs:
        return 1.0 / pos_freqs, 1.0, scale
    assert rs.get("type", rs.get("rope_type")) == "yarn", "only YaRN rope scaling is supported"
    factor = rs["factor"]
    l0 = rs["original_max_position_embeddings"]

    def mscale(s, m=1.0):
        return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

    m, mad = rs.get("mscale"), rs.get("mscale_all_dim")
    attention_factor = mscale(factor, m) / mscale(factor, mad) if (m and mad) else mscale(factor)
    beta_fast, beta_slow = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1

    def corr(rot):
        return d * math.log(l0 / (rot * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(math.floor(corr(beta_fast)), 0), min(math.ceil(corr(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(d // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    extrapolation = 1 - ramp
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (1.0 / pos_freqs) * extrapolation
    if mad:
        scale = scale * mscale(factor, mad) ** 2
    return inv_freq, attention_factor, scale


def apply_rope_interleaved(x, cos, sin):
    """Adjacent pairs (x0, x1), (x2, x3), ... rotated; output de-interleaved as HF leaves it."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, self.nh = cfg["hidden_size"], cfg["num_attention_heads"]
        self.dn, self.dr, self.dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        self.r_kv = cfg["kv_lora_rank"]
        eps = cfg["rms_norm_eps"]
        self.q_a_proj = nn.Linear(h, cfg["q_lora_rank"], bias=False)
        self.q_a_layernorm = RMSNorm(cfg["q_lora_rank"], eps)
        self.q_b_proj = nn.Linear(cfg["q_lora_rank"], self.nh * (self.dn + self.dr), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(h, self.r_kv + self.dr, bias=False)
        self.kv_a_layernorm = RMSNorm(self.r_kv, eps)
        self.kv_b_proj = nn.Linear(self.r_kv, self.nh * (self.dn + self.dv), bias=False)
        self.o_proj = nn.Linear(self.nh * self.dv, h, bias=False)

    def forward(self, x, cos, sin, scale):
        b, t, _ = x.shape
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(b, t, self.nh, -1).transpose(1, 2)
        q_pass, q_rot = q.split([self.dn, self.dr], dim=-1)
        ckv = self.kv_a_proj_with_mqa(x)
        kv, k_rot = ckv.split([self.r_kv, self.dr], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(kv)).view(b, t, self.nh, -1).transpose(1, 2)
        k_pass, v = kv.split([self.dn, self.dv], dim=-1)
        q_rot = apply_rope_interleaved(q_rot, cos, sin)
        k_rot = apply_rope_interleaved(k_rot.view(b, 1, t, self.dr), cos, sin)
        # cos/sin are fp32 (as HF computes them); under autocast bring q and k back to v's dtype.
        q = torch.cat([q_pass, q_rot.to(q_pass.dtype)], dim=-1).to(v.dtype)
        k = torch.cat([k_pass, k_rot.to(k_pass.dtype).expand(b, self.nh, t, self.dr)], dim=-1)
        k = k.to(v.dtype)
        if q.is_cuda and self.dv < q.shape[-1]:
            # Flash attention wants one head width for q, k and v: zero-pad v, drop the padding.
            o = F.scaled_dot_product_attention(q, k, F.pad(v, (0, q.shape[-1] - self.dv)),
                                               is_causal=True, scale=scale)[..., :self.dv]
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, self.nh * self.dv))


class MLP(nn.Module):
    def __init__(self, h, inter):
        super().__init__()
        self.gate_proj = nn.Linear(h, inter, bias=False)
        self.up_proj = nn.Linear(h, inter, bias=False)
        self.down_proj = nn.Linear(inter, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, self.e, self.i = cfg["hidden_size"], cfg["n_routed_experts"], cfg["moe_intermediate_size"]
        self.k = cfg["num_experts_per_tok"]
        assert cfg["n_group"] == 1 and cfg["topk_group"] == 1, "one expert group only"
        self.norm_topk_prob = cfg["norm_topk_prob"]
        self.scaling = cfg["routed_scaling_factor"]
        self.gate = nn.Linear(h, self.e, bias=False)
        self.register_buffer("e_score_correction_bias", torch.zeros(self.e))
        self.gate_proj = nn.Parameter(torch.empty(self.e, self.i, h))  # experts.{e}.gate_proj
        self.up_proj = nn.Parameter(torch.empty(self.e, self.i, h))
        self.down_proj = nn.Parameter(torch.empty(self.e, h, self.i))
        self.shared_experts = MLP(h, self.i * cfg["n_shared_experts"])
        self.last_load = None  # tokens per expert of the last forward (for the bias update)

    def route(self, x):
        """Dense [N, E] routing weights: zero except at the top-k experts."""
        # In F32 whatever autocast says (myriad's router is F32 too; bf16 scores would pick
        # other experts where they are close).
        with torch.autocast(x.device.type, enabled=False):
            scores = F.linear(x.float(), self.gate.weight.float()).sigmoid()
        idx = torch.topk(scores + self.e_score_correction_bias, self.k, dim=-1, sorted=False)[1]
        w = scores.gather(1, idx)
        if self.norm_topk_prob:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        w = w * self.scaling
        with torch.no_grad():  # scatter_add, not bincount: no device-to-host sync on CUDA
            self.last_load = torch.zeros(self.e, device=x.device).scatter_add_(
                0, idx.flatten(), torch.ones(idx.numel(), device=x.device))
        return torch.zeros_like(scores).scatter(1, idx, w)

    def forward(self, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        w = self.route(flat)
        n, e, i = flat.shape[0], self.e, self.i
        g = flat @ self.gate_proj.reshape(e * i, -1).t()
        u = flat @ self.up_proj.reshape(e * i, -1).t()
        a = (F.silu(g) * u).view(n, e, i) * w.to(g.dtype).unsqueeze(-1)
        y = a.view(n, e * i) @ self.down_proj.permute(0, 2, 1).reshape(e * i, -1)
        return (y + self.shared_experts(flat)).view(shape)


class Layer(nn.Module):
    def __init__(self, cfg, index):
        super().__init__()
        h, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
        self.input_layernorm = RMSNorm(h, eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(h, eps)
        dense = index < cfg["first_k_dense_replace"]
        self.mlp = MLP(h, cfg["intermediate_size"]) if dense else MoE(cfg)

    def forward(self, x, cos, sin, scale):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, scale)
        return x + self.mlp(self.post_attention_layernorm(x))


class TinyDeepseekV3(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        h = cfg["hidden_size"]
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], h)
        self.layers = nn.ModuleList(Layer(cfg, i) for i in range(cfg["num_hidden_layers"]))
        self.norm = RMSNorm(h, cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(h, cfg["vocab_size"], bias=False)
        inv_freq, self.attention_factor, self.scale = yarn_rope(cfg)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def moe_layers(self):
        return [layer.mlp for layer in self.layers if isinstance(layer.mlp, MoE)]

    def init_weights(self, seed):
        g = torch.Generator().manual_seed(seed)
        n_layers = self.cfg["num_hidden_layers"]
        for name, p in self.named_parameters():
            if name.endswith("norm.weight") or "layernorm" in name:
                nn.init.ones_(p)
                continue
            std = 0.02
            if name.endswith(("o_proj.weight", "down_proj.weight", "down_proj")):
                std = 0.02 / math.sqrt(2 * n_layers)
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * std)

    def rope(self, t, device):
        pos = torch.arange(t, device=device, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq.to(device))
        return freqs.cos() * self.attention_factor, freqs.sin() * self.attention_factor

    def hidden(self, ids):
        """Final-normed hidden states [B, T, H] (positions 0..T-1 in every row)."""
        x = self.embed_tokens(ids)
        cos, sin = self.rope(ids.shape[1], ids.device)
        for layer in self.layers:
            x = layer(x, cos, sin, self.scale)
        return self.norm(x)

    def forward(self, ids):
        return self.lm_head(self.hidden(ids))
