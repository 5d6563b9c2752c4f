#!/usr/bin/env python3
"""Checkpoints of issue 19's configuration, with transformers' greedy continuations.

For each seed, a folder under --out holds a DeepSeek-V3-shaped checkpoint with random BF16
weights (tools/make_goldens.py's weights and files) of the configuration in which the GPU once
chose a different token from the CPU: hidden 128, 4 layers (2 dense, intermediate 256), 16 routed
experts of 64 in 4 groups (2 kept), top 4, 1 shared expert, sigmoid/noaux_tc, norm_topk_prob,
routed_scaling_factor 2.5, 4 heads, q_lora 96, kv_lora 64, nope/rope/v 32/16/32, vocab 512,
YaRN (factor 40 over 64, beta 32/1, mscale 1/1), rope_theta 10000, max_position_embeddings 2560.

Beside the weights, prompts.json holds random prompts (lengths --lens), the number of greedy
steps, transformers' greedy tokens (float32, eager, full forward over the growing sequence at
each step), the top-2 logit margin of every greedy pick, and for every MoE layer and position the
router's smallest expert and group margins (biased scores, float64 from the gate's input as
transformers computed it). tests/gpu/differential_test.cpp (MYRIAD_DIFF_DIRS) reads the folders
and compares CPU and GPU there, decision by decision.

Usage (needs torch and transformers; runs on the CPU):
    python3 tools/divergence_case.py --out /tmp/div --seeds 1,2,3,4,5
    python3 tools/divergence_case.py --out /tmp/div --compare build-gpu/myriad   # no torch needed
"""

import argparse
import glob
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402


def issue_config():
    return mg.text_config(
        vocab=512, hidden=128, inter=256, moe_inter=64, layers=4, heads=4, n_shared=1,
        n_experts=16, rsf=2.5, kv_lora=64, q_lora=96, rope=16, v=32, nope=32, n_group=4,
        topk_group=2, topk=4, first_dense=2, norm_topk=True, max_pos=2560, eps=1e-6,
        rope_theta=10000.0,
        rope_scaling={"type": "yarn", "factor": 40, "original_max_position_embeddings": 64,
                      "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})


def run_seed(out, seed, lens, n_decode, tmp):
    import torch
    cfg = issue_config()
    folder = os.path.join(out, f"issue19_seed{seed}")
    tensors = mg.make_weights(cfg, seed)
    mg.write_hf_folder(folder, cfg, tensors)
    model, info = mg.hf_load(folder, tmp)
    mg.check_loading_info(info)
    W = {n: a for n, _, a in tensors}
    gate_inputs = {}

    def hook(layer):
        def f(module, args):
            gate_inputs[layer] = args[0].detach().double().reshape(-1, cfg["hidden_size"]).numpy()
        return f

    for l in range(cfg["first_k_dense_replace"], cfg["num_hidden_layers"]):
        model.model.layers[l].mlp.gate.register_forward_pre_hook(hook(l))
    prompts, greedy, pick_margins, routing = [], [], [], []
    rng = np.random.default_rng([seed, 19])
    for T in lens:
        ids = rng.integers(0, cfg["vocab_size"], size=T).tolist()
        seq, gen, margins = list(ids), [], []
        with torch.no_grad():
            for _ in range(n_decode + 1):
                logits = model(torch.tensor([seq])).logits[0, -1].double().numpy()
                order = np.argsort(-logits, kind="stable")
                gen.append(int(order[0]))
                margins.append(float(logits[order[0]] - logits[order[1]]))
                seq.append(int(order[0]))
        # Routing of the last full forward (prompt + all but the last greedy token).
        per_layer = {}
        for l, x in sorted(gate_inputs.items()):
            lg = x @ W[f"model.layers.{l}.mlp.gate.weight"].astype(np.float64).T
            bias = W[f"model.layers.{l}.mlp.gate.e_score_correction_bias"].astype(np.float64)
            rows = []
            for p in range(lg.shape[0]):
                _, _, em, gm = mg.route(cfg, lg[p:p + 1], bias)
                rows.append([em, gm])
            per_layer[str(l)] = rows
        prompts.append(ids)
        greedy.append(gen)
        pick_margins.append(margins)
        routing.append(per_layer)
        print(f"seed {seed} prompt {T}: greedy {gen}, smallest pick margin {min(margins):.3e}")
    mg.write_json(os.path.join(folder, "prompts.json"),
                  {"prompts": prompts, "decode": n_decode, "hf_greedy": greedy,
                   "hf_pick_margins": pick_margins,
                   "hf_router_margins_expert_group": routing})


def compare(out, binary):
    """`myriad generate` on every folder and prompt, CPU and GPU (exact and default mode), against
    transformers' greedy tokens; prints one line per run and returns the number that differ."""
    import subprocess
    differ = 0
    for folder in sorted(glob.glob(os.path.join(out, "*", "prompts.json"))):
        folder = os.path.dirname(folder)
        pj = json.load(open(os.path.join(folder, "prompts.json")))
        for i, (ids, hf) in enumerate(zip(pj["prompts"], pj["hf_greedy"])):
            for device, exact in (("cpu", "0"), ("cuda", "1"), ("cuda", "0")):
                env = dict(os.environ, MYRIAD_KERNELS="exact=" + exact)
                cmd = [binary, "generate", folder, "--device", device, "--prompt-ids",
                       ",".join(map(str, ids)), "--max-tokens", str(len(hf)), "--ids",
                       "--temperature", "0", "--ignore-eos"]
                r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
                got = [int(t) for t in r.stdout.strip().splitlines()[-1].split(",")] if r.returncode == 0 else []
                first = next((j for j, (a, b) in enumerate(zip(got, hf)) if a != b),
                             None if len(got) == len(hf) else min(len(got), len(hf)))
                mode = device + ("" if device == "cpu" else " exact" if exact == "1" else " default")
                print(f"{os.path.basename(folder)} p{i} {mode:13s} "
                      + ("same as transformers" if first is None else
                         f"differs from token {first}: {got} vs {hf} {r.stderr.strip()[-200:]}"))
                differ += first is not None
    return differ


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare", metavar="MYRIAD",
                    help="instead of writing: run `MYRIAD generate` on the folders under --out")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--lens", default="27,40,64,80")
    ap.add_argument("--decode", type=int, default=8)
    a = ap.parse_args()
    if a.compare:
        n = compare(a.out, a.compare)
        print(f"{n} runs differ from transformers")
        return
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for s in a.seeds.split(","):
            run_seed(a.out, int(s), [int(x) for x in a.lens.split(",")], a.decode, tmp)
    if mg.FAILURES:
        print("FAILED:\n  " + "\n  ".join(mg.FAILURES))
        sys.exit(1)


if __name__ == "__main__":
    main()
