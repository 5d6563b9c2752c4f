#!/usr/bin/env python3
"""Make the GGUF golden files (tests/goldens_gguf) with llama.cpp's own converter and quantizer.

Three stages; the middle one needs torch (llama.cpp's convert_hf_to_gguf.py imports it) and a C++
toolchain (llama-quantize is built from the same sources), so it ran on the GPU host:

  checkpoint  (no torch)  train a ~300-token byte-level BPE with the `tokenizers` package (the
              DeepSeek-V3 pre-tokenizer, a chat template, one non-special added token) and write
              a tiny DeepSeek-V3 checkpoint (config.json, BF16 model.safetensors, tokenizer files)
              into WORK/hf.
  convert     (torch)     llama.cpp's convert_hf_to_gguf.py: WORK/gguf/tiny-F32.gguf (--outtype f32)
              and WORK/gguf/tiny-Q8_0-0000{1,2,3}-of-00003.gguf (--outtype q8_0
              --split-max-tensors N); then llama-quantize (built from the sdist with cmake) makes
              WORK/gguf/tiny-Q4_K_M.gguf from the F32 file (Q4_K_M mixture plus --tensor-type
              overrides, see QUANTIZE_ARGS, so that no tensor falls back to a type myriad lacks).
  reference   (no torch)  reads every GGUF with the `gguf` package, dequantises with
              gguf.quants.dequantize, maps llama.cpp's deepseek2 tensors back to Hugging Face names
              (attn_k_b transposed back, attn_v_b, stacked experts split), checks that the F32 file
              holds exactly the checkpoint's weights, computes reference logits with the float64
              numpy forward of tools/make_goldens.py on the dequantised weights, and writes
              OUT/<model>/reference.safetensors plus the GGUF files xz-compressed.

The converter recognises a pre-tokenizer by hashing a known checkpoint's encoding of a test
string; a newly trained tokenizer has no registered hash, so the convert stage registers ours as
"deepseek-v3" (its pre-tokenizer is DeepSeek-V3's), as convert_hf_to_gguf_update.py would.

Weights are drawn on a coarse grid (small integers times a power of two per tensor) so that the
files compress to fit the repository's golden budget; the reference is computed on the
dequantised weights either way.

Usage:
  python3 tools/make_gguf_goldens.py checkpoint --work W
  python3 tools/make_gguf_goldens.py convert --work W --llama-cpp W/llama.cpp   # GPU host
  python3 tools/make_gguf_goldens.py reference --work W --out tests/goldens_gguf
"""

import argparse
import datetime
import json
import lzma
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402

SEED = 20261215
VOCAB = 320          # config vocab_size; the tokenizer has TOKENIZER_SIZE tokens, the rest are [PADn]
TOKENIZER_SIZE = 314
N_DECODE = 2
BUDGET = 700_000     # bytes, all of --out together
ROUTER_MARGIN_MIN = 1e-4
ARGMAX_MARGIN_MIN = 1e-3

BOS, EOS, PAD = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"
USER, ASSISTANT = "<｜User｜>", "<｜Assistant｜>"
THINK = "<think>"   # a non-special added token: USER_DEFINED in the GGUF
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}"
    "{% elif m['role'] == 'user' %}{{ '<｜User｜>' + m['content'] }}"
    "{% elif m['role'] == 'assistant' %}{{ '<｜Assistant｜>' + m['content'] + '<｜end▁of▁sentence｜>' }}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<｜Assistant｜>' }}{% endif %}")

# DeepSeek-V3's tokenizer.json pre-tokenizer (reference.md 4.3).
PRE_SPLITS = [
    r"\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
]

CORPUS = """The quick brown fox jumps over the lazy dog. A tiny model reads a tiny book.
Engines load weights from files; quantised files hold blocks of numbers with scales.
In 2024 there were 365 days and 12 months; in 1999, 1000 people counted 3 apples each.
Hello, world! How are you today? I am fine, thank you. Let's write some code: x = y + 1;
def main(): return 0  # comments are text too
The model answers questions about mixture of experts, attention, latent caches and tokens.
Numbers like 3.14159 and 2.71828 appear in maths; so do words like matrix, vector, scalar.
Mixed text: naïve café, déjà vu, 東京 and 日本語 and ひらがな and カタカナ.
""" * 3

CONFIG = mg.text_config(vocab=VOCAB, hidden=256, inter=32, moe_inter=32, layers=2, heads=2,
                        n_shared=1, n_experts=4, rsf=2.5, kv_lora=32, q_lora=32, rope=16, v=16,
                        nope=32, n_group=2, topk_group=1, topk=2, first_dense=1, max_pos=8192,
                        eps=1e-6, bos=0, eos=1, rope_theta=10000.0,
                        rope_scaling={"type": "yarn", "factor": 2.0,
                                      "original_max_position_embeddings": 4096, "beta_fast": 32,
                                      "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})

# llama-quantize: Q4_K_M, with the tensors whose rows (ggml ne0) are not a multiple of 256 set
# explicitly (its own fallback for Q4_K would be Q5_0); the first matching pattern wins.
QUANTIZE_ARGS = [
    "--token-embedding-type", "q5_k", "--output-tensor-type", "q6_k",
    "--tensor-type", "attn_q_b=f16", "--tensor-type", "attn_k_b=q8_0",
    "--tensor-type", "attn_v_b=q4_0", "--tensor-type", "attn_output=q4_0",
    "--tensor-type", "ffn_down_exps=q4_0", "--tensor-type", "ffn_down_shexp=bf16",
    "--tensor-type", "ffn_down=q8_0",
]

MODELS = {  # name -> (first file, files)
    "f32": ["tiny-F32.gguf"],
    "q8_0_split": [f"tiny-Q8_0-0000{i}-of-00003.gguf" for i in (1, 2, 3)],
    "q4_k_m": ["tiny-Q4_K_M.gguf"],
}


# ---------------------------------------------------------------------------------------------
# checkpoint
# ---------------------------------------------------------------------------------------------

def train_tokenizer(folder):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(p), behavior="isolated") for p in PRE_SPLITS] +
        [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TOKENIZER_SIZE - 1, show_progress=False,
                                  special_tokens=[BOS, EOS, PAD, USER, ASSISTANT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS.splitlines(), trainer)
    tok.add_tokens([AddedToken(THINK, special=False, normalized=False)])
    assert tok.get_vocab_size() == TOKENIZER_SIZE, tok.get_vocab_size()
    tok.save(os.path.join(folder, "tokenizer.json"))
    mg.write_json(os.path.join(folder, "tokenizer_config.json"), {
        "add_bos_token": True, "add_eos_token": False, "bos_token": BOS, "eos_token": EOS,
        "pad_token": PAD, "clean_up_tokenization_spaces": False, "model_max_length": 8192,
        "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE})
    return tok


def grid_weights(cfg, seed):
    """make_goldens' tensors, redrawn on a coarse grid: k * 2^-e with k a small integer."""
    rng = np.random.default_rng(seed)
    out = []
    for name, dt, a in mg.make_weights(cfg, seed):
        if name.endswith("e_score_correction_bias"):
            v = rng.integers(0, 7, a.shape) / 64.0
        elif a.ndim == 1:   # norms: 1 + k/8
            v = 1.0 + np.clip(np.rint(rng.standard_normal(a.shape) * 1.2), -2, 2) / 8.0
        else:
            std = 1.0 if "embed_tokens" in name else 1.0 / math.sqrt(a.shape[1])
            step = 2.0 ** round(math.log2(std / 2.0))
            v = np.clip(np.rint(rng.standard_normal(a.shape) * 2.0), -6, 6) * step
        out.append((name, dt, v.astype(np.float32)))
    return out


def stage_checkpoint(work):
    hf = os.path.join(work, "hf")
    os.makedirs(hf, exist_ok=True)
    train_tokenizer(hf)
    tensors = grid_weights(CONFIG, SEED)
    for _, dt, a in tensors:
        if dt == "BF16":
            assert np.array_equal(mg.bf16_round(a), a)
    mg.write_hf_folder(hf, CONFIG, tensors)
    print(f"checkpoint: {mg.param_count(tensors)} parameters in {hf}")


# ---------------------------------------------------------------------------------------------
# convert (GPU host: torch + cmake)
# ---------------------------------------------------------------------------------------------

def stage_convert(work, llama_cpp, jobs):
    out = os.path.join(work, "gguf")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(llama_cpp, "gguf-py") + os.pathsep + llama_cpp)
    build = os.path.join(work, "build-quantize")
    # llama-quantize builds in the background while the converter runs.
    cmake = subprocess.Popen(
        ["sh", "-c",
         f"cmake -S '{llama_cpp}' -B '{build}' -G Ninja -DCMAKE_BUILD_TYPE=Release "
         "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF "
         "-DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF "
         "-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DBUILD_SHARED_LIBS=OFF > "
         f"'{work}/cmake.log' 2>&1 && ninja -C '{build}' -j{jobs} llama-quantize >> '{work}/cmake.log' 2>&1"])
    driver = (
        "import sys, runpy\n"
        f"sys.path[:0] = [{llama_cpp!r}, {os.path.join(llama_cpp, 'gguf-py')!r}]\n"
        "import conversion.base as b\n"
        "b.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'deepseek-v3'\n"
        f"sys.argv = ['convert_hf_to_gguf.py'] + sys.argv[1:]\n"
        f"runpy.run_path({os.path.join(llama_cpp, 'convert_hf_to_gguf.py')!r}, run_name='__main__')\n")
    hf = os.path.join(work, "hf")
    runs = [["--outtype", "f32", "--outfile", os.path.join(out, "tiny-F32.gguf")],
            ["--outtype", "q8_0", "--split-max-tensors", "12", "--outfile",
             os.path.join(out, "tiny-Q8_0.gguf")]]
    procs = [subprocess.Popen([sys.executable, "-c", driver, hf] + r, env=env,
                              stdout=open(os.path.join(work, f"convert{i}.log"), "w"),
                              stderr=subprocess.STDOUT) for i, r in enumerate(runs)]
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"converter failed: see {work}/convert*.log")
    if cmake.wait() != 0:
        sys.exit(f"llama-quantize build failed: see {work}/cmake.log")
    quantize = os.path.join(build, "bin", "llama-quantize")
    with open(os.path.join(work, "quantize.log"), "w") as log:
        rc = subprocess.call([quantize] + QUANTIZE_ARGS +
                             [os.path.join(out, "tiny-F32.gguf"), os.path.join(out, "tiny-Q4_K_M.gguf"),
                              "Q4_K_M", "4"], stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(f"llama-quantize failed: see {work}/quantize.log")
    print("convert: " + ", ".join(sorted(os.listdir(out))))


# ---------------------------------------------------------------------------------------------
# reference (no torch)
# ---------------------------------------------------------------------------------------------

def read_gguf(paths):
    """-> (metadata of the first file {key: value}, {name: (type name, float64 array in torch
    order)}) over all split files."""
    import gguf
    from gguf.quants import dequantize
    meta, tensors = {}, {}
    for i, path in enumerate(paths):
        r = gguf.GGUFReader(path)
        if i == 0:
            for k, f in r.fields.items():
                meta[k] = f.contents()
        for t in r.tensors:
            a = dequantize(t.data, t.tensor_type)
            shape = [int(d) for d in reversed(t.shape.tolist())]
            tensors[t.name] = (t.tensor_type.name, np.asarray(a, np.float64).reshape(shape))
    return meta, tensors


def to_hf(cfg, g):
    """llama.cpp deepseek2 tensors -> Hugging Face names (reference.md 3.2)."""
    nh, dn, dv = cfg["num_attention_heads"], cfg["qk_nope_head_dim"], cfg["v_head_dim"]
    W = {"model.embed_tokens.weight": g["token_embd.weight"],
         "model.norm.weight": g["output_norm.weight"], "lm_head.weight": g["output.weight"]}
    simple = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
              "attn_q_a": "self_attn.q_a_proj", "attn_q_a_norm": "self_attn.q_a_layernorm",
              "attn_q_b": "self_attn.q_b_proj", "attn_q": "self_attn.q_proj",
              "attn_kv_a_mqa": "self_attn.kv_a_proj_with_mqa",
              "attn_kv_a_norm": "self_attn.kv_a_layernorm", "attn_output": "self_attn.o_proj",
              "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
              "ffn_gate_inp": "mlp.gate", "ffn_gate_shexp": "mlp.shared_experts.gate_proj",
              "ffn_up_shexp": "mlp.shared_experts.up_proj",
              "ffn_down_shexp": "mlp.shared_experts.down_proj"}
    for l in range(cfg["num_hidden_layers"]):
        b, p = f"blk.{l}.", f"model.layers.{l}."
        for k, v in simple.items():
            if b + k + ".weight" in g:
                W[p + v + ".weight"] = g[b + k + ".weight"]
        if b + "exp_probs_b.bias" in g:
            W[p + "mlp.gate.e_score_correction_bias"] = g[b + "exp_probs_b.bias"]
        k_b = g[b + "attn_k_b.weight"]              # [H, r, dn]
        v_b = g[b + "attn_v_b.weight"]              # [H, dv, r]
        kv = np.concatenate([k_b.transpose(0, 2, 1), v_b], axis=1)  # [H, dn + dv, r]
        assert kv.shape[:2] == (nh, dn + dv)
        W[p + "self_attn.kv_b_proj.weight"] = kv.reshape(nh * (dn + dv), -1)
        for w in ("gate", "up", "down"):
            key = b + f"ffn_{w}_exps.weight"
            if key in g:
                for e in range(g[key].shape[0]):
                    W[p + f"mlp.experts.{e}.{w}_proj.weight"] = g[key][e]
    return W


def route_margins(cfg, W, ids):
    """Smallest router margins (expert and group boundary) over the MoE layers of one forward."""
    worst = [np.inf]
    real = mg.route

    def spy(c, logits, bias, grouped=True):
        res = real(c, logits, bias, grouped)
        worst[0] = min(worst[0], res[2], res[3])
        return res
    mg.route = spy
    try:
        logits = mg.np_forward(cfg, W, ids)
    finally:
        mg.route = real
    return logits, worst[0]


def reference_for(cfg, W, prompts):
    out, notes = [], []
    for p, ids in enumerate(prompts):
        ids = list(ids)
        logits, margin = route_margins(cfg, W, ids)
        gen = [int(np.argmax(logits[-1]))]
        for _ in range(N_DECODE):
            full, m2 = route_margins(cfg, W, ids + gen)
            margin = min(margin, m2)
            gen.append(int(np.argmax(full[-1])))
        full, m3 = route_margins(cfg, W, ids + gen[:-1])
        margin = min(margin, m3)
        dec = full[len(ids):]
        amargin = min(mg.argmax_margin(r) for r in np.concatenate([logits[-1:], dec]))
        if margin < ROUTER_MARGIN_MIN or amargin < ARGMAX_MARGIN_MIN:
            raise RuntimeError(f"p{p}: router margin {margin:.2e}, argmax margin {amargin:.2e}")
        out += [(f"p{p}.prompt_ids", "I64", np.asarray(ids, np.int64)),
                (f"p{p}.prefill_logits", "F32", logits.astype(np.float32)),
                (f"p{p}.generated_ids", "I64", np.asarray(gen, np.int64)),
                (f"p{p}.decode_logits", "F32", dec.astype(np.float32))]
        notes.append(f"p{p}: T={len(ids)}, generated {gen}, router margin {margin:.1e}, "
                     f"argmax margin {amargin:.1e}")
    return out, notes


def xz(src, dst):
    with open(src, "rb") as f:
        data = f.read()
    with open(dst, "wb") as f:
        f.write(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))


def stage_reference(work, out_root, versions):
    from tokenizers import Tokenizer
    import gguf
    hf_weights = {n: a for n, (_, a) in mg.read_folder_weights(os.path.join(work, "hf")).items()}
    tok = Tokenizer.from_file(os.path.join(work, "hf", "tokenizer.json"))
    prompts = [tok.encode("Hello world").ids,
               [int(x) for x in np.random.default_rng(SEED).integers(0, VOCAB, 6)]]
    gdir = os.path.join(work, "gguf")
    rows, notes = [], []
    for name, files in MODELS.items():
        meta, g = read_gguf([os.path.join(gdir, f) for f in files])
        W = to_hf(CONFIG, {k: a for k, (_, a) in g.items()})
        missing = sorted(set(hf_weights) - set(W))
        if missing:
            sys.exit(f"{name}: no GGUF tensor for {missing[:5]}")
        worst = max(float(np.max(np.abs(W[k] - hf_weights[k])) / max(1e-30, np.max(np.abs(hf_weights[k]))))
                    for k in hf_weights)
        if name == "f32" and worst != 0.0:
            sys.exit(f"f32: the GGUF does not hold the checkpoint's weights exactly ({worst})")
        types = {}
        for _, (t, _) in g.items():
            types[t] = types.get(t, 0) + 1
        ref, pnotes = reference_for(CONFIG, W, prompts)
        folder = os.path.join(out_root, name)
        os.makedirs(folder, exist_ok=True)
        mg.write_safetensors(os.path.join(gdir, name + ".reference.safetensors"), ref,
                             {"seed": SEED, "model": name})
        xz(os.path.join(gdir, name + ".reference.safetensors"),
           os.path.join(folder, "reference.safetensors.xz"))
        for f in files:
            xz(os.path.join(gdir, f), os.path.join(folder, f + ".xz"))
        rows.append((name, files, types, worst))
        notes += [f"`{name}` {n}" for n in pnotes]
        print(f"{name}: types {types}, max|deq - w|/max|w| {worst:.3f}; " + "; ".join(pnotes))
    os.makedirs(os.path.join(out_root, "hf_tokenizer"), exist_ok=True)
    xz(os.path.join(work, "hf", "tokenizer.json"),
       os.path.join(out_root, "hf_tokenizer", "tokenizer.json.xz"))
    write_readme(out_root, rows, notes, versions, gguf)
    size = mg.dir_size(out_root)
    print(f"{out_root}: {size} bytes")
    if size > BUDGET:
        sys.exit(f"{out_root} holds {size} bytes, over the {BUDGET} budget")


def write_readme(out_root, rows, notes, versions, gguf_module):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# GGUF golden files",
        "",
        "A tiny DeepSeek-V3 checkpoint converted by llama.cpp's own tools, and reference logits "
        "computed on the GGUF files' **dequantised** weights. Made by `tools/make_gguf_goldens.py` "
        "(see its docstring); do not edit by hand. Every file is xz-compressed; the build "
        "unpacks them into `<build>/goldens_gguf/` (tests/CMakeLists.txt).",
        "",
        f"- llama.cpp: the copy vendored in the PyPI sdist llama-cpp-python {versions['sdist']} "
        "(`pip download --no-deps --no-binary :all: llama-cpp-python`): `convert_hf_to_gguf.py` with "
        f"its gguf-py, and `llama-quantize` built from the same sources with cmake (CPU only). "
        f"{versions['convert']}",
        "- Converter runs: `--outtype f32` and `--outtype q8_0 --split-max-tensors 12` (three files); "
        "the driver registers the newly trained tokenizer's pre-tokenizer as `deepseek-v3`.",
        "- `llama-quantize " + " ".join(QUANTIZE_ARGS) + " tiny-F32.gguf tiny-Q4_K_M.gguf Q4_K_M`: "
        "the tensors whose rows (ggml ne0) are not a multiple of 256 get an explicit type, so no "
        "tensor falls back to a type myriad does not read.",
        f"- Reference: gguf {gguf_module.__version__ if hasattr(gguf_module, '__version__') else versions['gguf']} "
        f"`GGUFReader` + `gguf.quants.dequantize`, the float64 numpy forward of tools/make_goldens.py "
        f"(np_forward, checked there against transformers), numpy {np.__version__}; date {now}.",
        f"- Seed {SEED}. Tokenizer: byte-level BPE trained with tokenizers {versions['tokenizers']} "
        f"({TOKENIZER_SIZE} tokens; config vocab_size {VOCAB}, so ids {TOKENIZER_SIZE}..{VOCAB - 1} "
        "are the converter's [PADn] tokens), DeepSeek-V3 pre-tokenizer, chat template, `<think>` "
        "as a non-special added token.",
        "- hf_tokenizer/tokenizer.json: the checkpoint's tokenizer, the oracle (HF `tokenizers`) "
        "for the GGUF vocabulary in tests/python/test_gguf.py.",
        "- reference.safetensors: as tests/goldens (p0 a text prompt, p1 random ids: prompt_ids, "
        f"prefill_logits, generated_ids g0..g{N_DECODE}, decode_logits for g0..g{N_DECODE - 1}).",
        "",
        "| model | files | tensor types | max abs(deq - w) / max abs(w) |",
        "|---|---|---|---|",
    ]
    for name, files, types, worst in rows:
        lines.append(f"| `{name}` | {', '.join(files)} | "
                     f"{', '.join(f'{k} {v}' for k, v in sorted(types.items()))} | {worst:.3f} |")
    c = CONFIG
    lines += ["", f"Dims: vocab {c['vocab_size']}, hidden {c['hidden_size']}, 2 layers (layer 0 "
              f"dense, intermediate {c['intermediate_size']}), {c['num_attention_heads']} heads, "
              f"q_lora {c['q_lora_rank']}, kv_lora {c['kv_lora_rank']}, nope/rope/v "
              f"{c['qk_nope_head_dim']}/{c['qk_rope_head_dim']}/{c['v_head_dim']}, "
              f"{c['n_routed_experts']} routed experts top-{c['num_experts_per_tok']} in "
              f"{c['n_group']} groups (top {c['topk_group']}) + 1 shared, moe_intermediate "
              f"{c['moe_intermediate_size']}, YaRN factor 2.", ""]
    lines += [f"- {n}" for n in notes]
    with open(os.path.join(out_root, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["checkpoint", "convert", "reference"])
    ap.add_argument("--work", required=True)
    ap.add_argument("--llama-cpp")
    ap.add_argument("--out", default="tests/goldens_gguf")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--sdist-version", default="0.3.36")
    ap.add_argument("--convert-note", default="")
    a = ap.parse_args()
    if a.stage == "checkpoint":
        stage_checkpoint(a.work)
    elif a.stage == "convert":
        stage_convert(a.work, a.llama_cpp, a.jobs)
    else:
        import tokenizers
        import gguf
        versions = {"sdist": a.sdist_version, "convert": a.convert_note,
                    "tokenizers": tokenizers.__version__,
                    "gguf": getattr(gguf, "__version__", "?")}
        stage_reference(a.work, a.out, versions)


if __name__ == "__main__":
    main()
