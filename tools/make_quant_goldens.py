#!/usr/bin/env python3
"""Make quantised golden checkpoints (ModelOpt NVFP4, DeepSeek FP8 blocks, compressed-tensors
INT4) and reference logits computed by transformers on their DEQUANTISED weights.

For each model under --out (default tests/goldens_quant/):
  config.json (+ quantization_config where the format keeps it there), hf_quant_config.json (the
  legacy ModelOpt file, one model), generation_config.json, model.safetensors holding the
  quantised layout exactly as published checkpoints name and type it, and reference.safetensors
  in the layout of tests/goldens (p0/p1 prompt ids, prefill logits, 8 greedy decode steps).

How: BF16 weights are drawn as tools/make_goldens.py draws them (gate_proj x2 and up_proj x0.5 so
the two halves of every SwiGLU get different NVFP4 global scales), the quantised linears are packed
by tools/quant_pack.py (numpy, from the published formulas), dequantised again in float32, and a
float32 copy of the dequantised model is written to a temporary folder (not kept) from which
transformers' DeepseekV3ForCausalLM computes the logits (float32, eager attention, CPU), with the
checks of make_goldens.py (loading info, state dict, an independent numpy forward, cached decode vs
uncached, prompt margins). The engine must reproduce those logits from the quantised files.

Usage:  python3 tools/make_quant_goldens.py --out tests/goldens_quant      (needs torch, transformers)
        python3 tools/make_quant_goldens.py --out tests/goldens_quant --tp8-only   (only TP8_MODELS)
        python3 tools/make_quant_goldens.py --out /tmp/q --no-hf           (numpy-only dry run)
"""

import argparse
import datetime
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402
import quant_pack as qp  # noqa: E402

SEED = 20261207
SIZE_LIMIT = 5_000_000
GATE_SCALE, UP_SCALE = 2.0, 0.5
KV_SCALE = 0.02   # k_scale written for the FP8-KV model (its value is the cache's dequant scale)


def cfg(**kw):
    base = dict(vocab=128, hidden=288, inter=128, layers=2, heads=4, q_lora=48, kv_lora=32, nope=16,
                rope=16, v=16, n_experts=4, topk=2, n_group=1, topk_group=1, n_shared=1, first_dense=1)
    base.update(kw)
    return mg.text_config(**base)


KIMI_YARN = dict(model_type="kimi_k2", rsf=2.827, max_pos=131072, rope_theta=50000.0,
                 rope_scaling={"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0,
                               "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                               "type": "yarn"})

MODELS = [
    dict(name="nvfp4_experts", fmt="nvfp4", form="hf_quant_config.json",
         covers="ModelOpt NVFP4, legacy hf_quant_config.json, routed experts only as NVIDIA's Kimi "
                "checkpoints (exclude_modules globs keep lm_head, layer 0, attention and shared "
                "experts BF16), kv_cache_quant_algo null; model_type kimi_k2 with YaRN",
         quantized=lambda n: ".mlp.experts." in n,
         exclude=["lm_head", "model.layers.0.*", "model.layers.*.self_attn*",
                  "model.layers.*.mlp.shared_experts*", "model.layers.*.mlp.gate"],
         config=cfg(moe_inter=192, **KIMI_YARN)),
    dict(name="nvfp4_all_linear", fmt="nvfp4", form="config.json",
         covers="ModelOpt NVFP4 in config.json quantization_config (quant_method modelopt, ignore "
                "[lm_head]): every decoder linear incl. MLA projections, dense MLP and shared experts; "
                "kv_cache_scheme FP8 with per-layer self_attn.k_scale; input_scale per linear",
         quantized=lambda n: n.startswith("model.layers."),
         config=cfg(moe_inter=192, inter=256)),
    dict(name="fp8_block", fmt="fp8", form="config.json",
         covers="DeepSeek FP8 blocks (quant_method fp8, fmt e4m3, weight_block_size [128, 128]): every "
                "decoder linear; hidden 288 = 2*128 + 32 and moe_intermediate 144 = 128 + 16 give "
                "ragged edge blocks in both dimensions",
         quantized=lambda n: n.startswith("model.layers."),
         config=cfg(moe_inter=144, inter=256)),
    dict(name="int4_kimi", fmt="int4", form="config.json",
         covers="compressed-tensors pack-quantized INT4, group 32, symmetric, BF16 scales, as "
                "Kimi-K2-Thinking: routed experts only (ignore: lm_head and re: patterns for "
                "attention, shared experts and the dense MLP); model_type kimi_k2 with YaRN",
         quantized=lambda n: ".mlp.experts." in n,
         config=cfg(moe_inter=128, **KIMI_YARN)),
]


# Goldens that shard at TP 8 (--tp8-only): 8 heads, intermediate and moe_intermediate 256, so at
# TP 8 each rank's column shard of a down projection is 32 wide: two NVFP4 groups of 16, one INT4
# group of 32, a cut FP8 128-block. Every decoder linear quantised (the routed experts and the
# rest) so each format is cut everywhere TP cuts.
TP8_MODELS = [
    dict(name="tp8_fp8_block", fmt="fp8", form="config.json",
         covers="TP 8 shapes (8 heads, intermediate and moe_intermediate 256) in DeepSeek FP8 blocks "
                "[128, 128]: TP 8 cuts every 128-block of a row-parallel input in four",
         quantized=lambda n: n.startswith("model.layers."),
         config=cfg(heads=8, inter=256, moe_inter=256)),
    dict(name="tp8_nvfp4", fmt="nvfp4", form="config.json",
         covers="TP 8 shapes in ModelOpt NVFP4 (config.json, ignore [lm_head]): every decoder "
                "linear; TP 8 leaves each rank two whole groups of 16 of a down projection",
         quantized=lambda n: n.startswith("model.layers."),
         config=cfg(heads=8, inter=256, moe_inter=256)),
    dict(name="tp8_int4", fmt="int4", form="config.json",
         covers="TP 8 shapes in compressed-tensors INT4 group 32, routed experts only as Kimi; TP 8 "
                "leaves each rank one whole group of a down projection",
         quantized=lambda n: ".mlp.experts." in n,
         config=cfg(heads=8, inter=256, moe_inter=256, **KIMI_YARN)),
]


def quantization_config(spec):
    if spec["fmt"] == "fp8":
        return {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                "weight_block_size": [128, 128]}
    if spec["fmt"] == "int4":
        return {"config_groups": {"group_0": {
                    "input_activations": None, "output_activations": None, "targets": ["Linear"],
                    "weights": {"actorder": None, "block_structure": None, "dynamic": False,
                                "group_size": 32, "num_bits": 4, "observer": "minmax",
                                "observer_kwargs": {}, "strategy": "group", "symmetric": True,
                                "type": "int"}}},
                "format": "pack-quantized",
                "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                           "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
                "kv_cache_scheme": None, "quant_method": "compressed-tensors",
                "quantization_status": "compressed"}
    if spec["form"] == "config.json":
        # The FP8 KV scheme only where the checkpoint carries its k_scale tensors (build()).
        kv = ({"num_bits": 8, "type": "float", "dynamic": False}
              if spec["name"] == "nvfp4_all_linear" else None)
        return {"quant_method": "modelopt", "quant_algo": "NVFP4", "producer": {"name": "modelopt"},
                "ignore": ["lm_head"],
                "kv_cache_scheme": kv,
                "config_groups": {"group_0": {
                    "weights": {"num_bits": 4, "type": "float", "group_size": 16, "dynamic": False},
                    "input_activations": {"num_bits": 4, "type": "float", "group_size": 16,
                                          "dynamic": False},
                    "targets": ["Linear"]}}}
    return None


def encode(dt, arr):
    if dt in ("U8", "F8_E4M3"):
        return np.ascontiguousarray(arr, np.uint8).tobytes()
    if dt == "I32":
        return np.ascontiguousarray(arr, "<i4").tobytes()
    return mg.encode(dt, arr)


def write_st(path, tensors):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, dt, arr in tensors:
        b = encode(dt, arr)
        header[name] = {"dtype": dt, "shape": [int(s) for s in np.shape(arr)],
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))


def is_linear(name):
    """q_a/q_b/q_proj, kv_a_proj_with_mqa, kv_b, o, gate/up/down projections (not the router)."""
    return name.endswith("_proj.weight") or name.endswith("_proj_with_mqa.weight")


def quantize_model(spec, tensors):
    """-> (stored tensors, dequantised float32 dict, stats)."""
    stored, deq, stats = [], {}, dict(n_quant=0, max_rel_err=0.0, ws2_pairs=0, ws2_differ=0)
    ws2 = {}
    for name, dt, a in tensors:
        if name.endswith("gate_proj.weight"):
            a = a * GATE_SCALE
        elif name.endswith("up_proj.weight"):
            a = a * UP_SCALE
        if not (is_linear(name) and spec["quantized"](name)):
            stored.append((name, dt, a))
            deq[name] = a
            continue
        base = name[:-len(".weight")]
        stats["n_quant"] += 1
        if spec["fmt"] == "nvfp4":
            packed, sf, s2 = qp.nvfp4_quantize(a)
            d = qp.nvfp4_dequantize(packed, sf, s2)
            amax_in = np.float32(8.0)
            stored += [(name, "U8", packed), (base + ".weight_scale", "F8_E4M3", sf),
                       (base + ".weight_scale_2", "F32", np.array(s2, np.float32)),
                       (base + ".input_scale", "F32", np.array(amax_in / np.float32(6 * 448), np.float32))]
            ws2[name] = float(s2)
        elif spec["fmt"] == "fp8":
            q, s = qp.fp8_block_quantize(a)
            d = qp.fp8_block_dequantize(q, s)
            stored += [(name, "F8_E4M3", q), (base + ".weight_scale_inv", "F32", s)]
        else:
            packed, sc = qp.int4_quantize(a)
            d = qp.int4_dequantize(packed, sc)
            stored += [(base + ".weight_packed", "I32", packed), (base + ".weight_scale", "BF16", sc),
                       (base + ".weight_shape", "I32", np.array(a.shape, np.int32))]
        deq[name] = d
        stats["max_rel_err"] = max(stats["max_rel_err"], float(np.max(np.abs(d - a)) / np.max(np.abs(a))))
    for name, s in ws2.items():
        if name.endswith("gate_proj.weight"):
            other = name.replace("gate_proj", "up_proj")
            if other in ws2:
                stats["ws2_pairs"] += 1
                stats["ws2_differ"] += int(ws2[other] != s)
    if spec["fmt"] == "nvfp4" and stats["ws2_differ"] != stats["ws2_pairs"]:
        mg.fail(f"{spec['name']}: gate and up share a weight_scale_2 somewhere")
    if spec["name"] == "nvfp4_all_linear":
        for l in range(spec["config"]["num_hidden_layers"]):
            stored.append((f"model.layers.{l}.self_attn.k_scale", "F32", np.array(KV_SCALE, np.float32)))
    return stored, deq, stats


def build(spec, index, out_root, tmp_root, use_hf, versions):
    name, c = spec["name"], dict(spec["config"])
    print(f"\n=== {name} ===", flush=True)
    seed = SEED + 101 * index
    tensors = mg.make_weights(c, seed)
    stored, W, stats = quantize_model(spec, tensors)
    print(f"  {stats['n_quant']} linears quantised ({spec['fmt']}), max |deq - w| / max|w| "
          f"{stats['max_rel_err']:.3f}; gate/up pairs with different weight_scale_2: "
          f"{stats['ws2_differ']}/{stats['ws2_pairs']}")
    gold = os.path.join(out_root, name)
    shutil.rmtree(gold, ignore_errors=True)
    os.makedirs(gold)
    committed = dict(c)
    qc = quantization_config(spec)
    if qc is not None:
        committed["quantization_config"] = qc
    mg.write_json(os.path.join(gold, "config.json"), committed)
    mg.write_json(os.path.join(gold, "generation_config.json"),
                  {"bos_token_id": c["bos_token_id"], "eos_token_id": c["eos_token_id"]})
    if spec["form"] == "hf_quant_config.json":
        mg.write_json(os.path.join(gold, "hf_quant_config.json"),
                      {"producer": {"name": "modelopt", "version": "0.29.0"},
                       "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                                        "group_size": 16, "exclude_modules": spec["exclude"]}})
    write_st(os.path.join(gold, "model.safetensors"), stored)
    info = dict(name=name, covers=spec["covers"], stats=stats, cfg=c, prompts=[])
    if not use_hf:
        for p, T in enumerate(mg.PROMPT_LENS):
            lg = mg.np_forward(c, W, mg.prompt_ids(SEED, p, 0, T, c["vocab_size"]))
            print(f"  [dry] p{p}: numpy logits {lg.shape}, argmax margin {mg.argmax_margin(lg[-1]):.2e}")
        info["bytes"] = mg.dir_size(gold)
        return info

    # transformers on the dequantised float32 weights (temporary folder, plain config)
    hf_dir = os.path.join(tmp_root, name + "_dequantised")
    mg.write_hf_folder(hf_dir, c, [(n, "F32" if dt != "BF16" or is_linear(n) else dt, W[n])
                                   for n, dt, _ in tensors])
    model, linfo = mg.hf_load(hf_dir, tmp_root)
    mg.check_loading_info(linfo)
    mg.check_state_dict(model, W)
    probe = mg.RouterProbe(model, c)
    ref = []
    for p, T in enumerate(mg.PROMPT_LENS):
        for attempt in range(mg.MAX_ATTEMPTS):
            ids = mg.prompt_ids(SEED, p, attempt, T, c["vocab_size"])
            probe.reset()
            prefill, gen, dec, full = mg.hf_generate(model, ids, probe)
            em, gm, changed, total, cmp_n, cmp_bad = mg.router_stats(probe, c, W)
            am = min(mg.argmax_margin(prefill[-1]), min(mg.argmax_margin(r) for r in dec))
            if am >= mg.ARGMAX_MARGIN_MIN and em >= mg.ROUTER_MARGIN_MIN:
                break
            print(f"  p{p} attempt {attempt}: margins too small (argmax {am:.2e}, expert {em:.2e})")
        else:
            mg.fatal(f"{name} p{p}: no prompt with safe margins")
        d_dec = mg.max_rel_diff(dec, full[T:T + mg.N_DECODE])
        npl = mg.np_forward(c, W, np.concatenate([ids, gen[:mg.N_DECODE]]))
        d_np = max(mg.max_rel_diff(prefill, npl[:T]), mg.max_rel_diff(dec, npl[T:T + mg.N_DECODE]))
        print(f"  p{p}: attempt {attempt}, generated {gen.tolist()}, argmax margin {am:.2e}, expert "
              f"margin {em:.2e}, decode-vs-uncached {d_dec:.1e}, numpy-vs-HF {d_np:.1e}, HF routing "
              f"compared on {cmp_n} token-layers ({cmp_bad} differ)")
        if d_dec > mg.DECODE_RTOL or d_np > mg.NUMPY_RTOL or cmp_bad:
            mg.fail(f"{name} p{p}: decode {d_dec:.2e} / numpy {d_np:.2e} / routing {cmp_bad}")
        info["prompts"].append(dict(attempt=attempt, generated=gen.tolist(), am=am, em=em, d_dec=d_dec, d_np=d_np))
        ref += [(f"p{p}.prompt_ids", "I64", ids), (f"p{p}.prefill_logits", "F32", prefill),
                (f"p{p}.generated_ids", "I64", gen), (f"p{p}.decode_logits", "F32", dec)]
    meta = {"script": "tools/make_quant_goldens.py", "seed": str(SEED), "model_seed": str(seed),
            "model": name, "torch": versions["torch"], "transformers": versions["transformers"]}
    mg.write_safetensors(os.path.join(gold, "reference.safetensors"), ref, meta)
    del model
    info["bytes"] = mg.dir_size(gold)
    print(f"  folder: {info['bytes']:,} bytes")
    return info


def crosscheck_torch():
    """Our e4m3 encoder against torch's float8_e4m3fn cast (round to nearest even) on the GPU host."""
    import torch
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(200000) * s for s in (1e-3, 1e-2, 0.1, 1, 10, 100)])
    x = np.concatenate([x, qp.E4M3[:126] + np.diff(qp.E4M3[:127]) / 2,  # every positive midpoint
                        -(qp.E4M3[:126] + np.diff(qp.E4M3[:127]) / 2)]).astype(np.float32)
    x = x[np.abs(x) < 448]
    ours = qp.e4m3_encode(x)
    theirs = torch.from_numpy(x).to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    bad = int(np.sum(ours != theirs))
    print(f"e4m3 encoder vs torch float8_e4m3fn: {x.size} values, {bad} differ")
    if bad:
        mg.fail(f"e4m3 encoder differs from torch on {bad} values")
    return x.size


def write_readme(out, infos, versions, n_checked):
    lines = [
        "# Quantised golden checkpoints",
        "",
        "Tiny DeepSeek-V3-family checkpoints in the quantised layouts users download, with reference "
        "logits computed by Hugging Face transformers (`DeepseekV3ForCausalLM`, float32, eager, CPU) on "
        "their **dequantised** weights. Made by `tools/make_quant_goldens.py` (packers in "
        "`tools/quant_pack.py`, written from reference.md §2 and self-checked); do not edit by hand.",
        "",
        f"- Command: `python3 tools/make_quant_goldens.py --out tests/goldens_quant` (run on the GPU "
        f"host, CPU compute)",
        f"- torch {versions['torch']}, transformers {versions['transformers']}, numpy {versions['numpy']}, "
        f"Python {versions['python']}; date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- Seed {SEED} (model i: {SEED} + 101 i; weights drawn as tools/make_goldens.py draws them, then "
        f"gate_proj x{GATE_SCALE} and up_proj x{UP_SCALE} so their NVFP4 global scales differ)",
        f"- Packer checks: `python3 tools/quant_pack.py` (e4m3/e2m1 tables, ties to even, subnormals, "
        f"nibble order, error bounds); the e4m3 encoder equals torch's float8_e4m3fn cast on "
        f"{n_checked:,} values.",
        "- The dequantised float32 model given to transformers lived in a temporary folder (not kept); "
        "model_type kimi_k2 configs are loaded with model_type deepseek_v3 (see tests/goldens/README.md) "
        "and the loading info and state dict are checked, as are an independent numpy forward and "
        "cached-vs-uncached decode.",
        "- reference.safetensors: as tests/goldens (p0/p1: prompt_ids, prefill_logits, generated_ids, "
        "decode_logits).",
        "",
        "| model | covers | max abs(deq − w) / max abs(w) | bytes |",
        "|---|---|---|---|",
    ]
    for i in infos:
        lines.append(f"| `{i['name']}` | {i['covers']} | {i['stats']['max_rel_err']:.3f} | {i['bytes']:,} |")
    lines.append("")
    lines.append("Dims: vocab 128, hidden 288, 2 layers (layer 0 dense), 4 heads, q_lora 48, kv_lora 32, "
                 "nope/rope/v 16/16/16, 4 routed experts top-2 + 1 shared; moe_intermediate 192 (NVFP4), "
                 "144 (FP8), 128 (INT4); dense intermediate 128 or 256.")
    lines.append("")
    for i in infos:
        for p, pr in enumerate(i["prompts"]):
            lines.append(f"- `{i['name']}` p{p}: attempt {pr['attempt']}, generated {pr['generated']}, "
                         f"argmax margin {pr['am']:.1e}, numpy-vs-HF {pr['d_np']:.1e}, "
                         f"decode-vs-uncached {pr['d_dec']:.1e}")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/goldens_quant")
    ap.add_argument("--no-hf", action="store_true")
    ap.add_argument("--tp8-only", action="store_true",
                    help="make only the goldens that shard at TP 8 (TP8_MODELS) into --out, "
                         "leaving the others and README.md as they are")
    args = ap.parse_args()
    models = TP8_MODELS if args.tp8_only else MODELS
    qp.selftest()
    versions = {"numpy": np.__version__, "python": sys.version.split()[0]}
    n_checked = 0
    if not args.no_hf:
        import torch
        import transformers
        torch.manual_seed(SEED)
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)
        versions.update(torch=torch.__version__, transformers=transformers.__version__)
        n_checked = crosscheck_torch()
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="qgoldens_")
    try:
        # The TP 8 models draw from seeds after MODELS' own.
        first = len(MODELS) if args.tp8_only else 0
        infos = [build(s, first + i, args.out, tmp, not args.no_hf, versions)
                 for i, s in enumerate(models)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not args.no_hf and not args.tp8_only:
        write_readme(args.out, infos, versions, n_checked)
    elif not args.no_hf:
        argv = " ".join(["python3", "tools/make_quant_goldens.py"] + sys.argv[1:])
        for i in infos:
            with open(os.path.join(args.out, i["name"], "README.md"), "w") as f:
                f.write(f"# {i['name']}\n\n{i['covers']}.\n\n- Made by `{argv}` (see "
                        f"tools/make_quant_goldens.py); torch {versions.get('torch')}, "
                        f"transformers {versions.get('transformers')}, numpy "
                        f"{versions.get('numpy')}\n")
    total = (mg.dir_size(args.out) if not args.tp8_only else
             sum(mg.dir_size(os.path.join(args.out, i["name"])) for i in infos))
    print(f"\ntotal under {args.out}: {total:,} bytes (limit {SIZE_LIMIT:,})")
    if total >= SIZE_LIMIT:
        mg.fail("quantised goldens too large")
    if mg.FAILURES:
        print("FAILED:\n  " + "\n  ".join(mg.FAILURES))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
