#!/usr/bin/env python3
"""Trains models/myriad-tiny (issue 9): a 4.45 M-parameter DeepSeek-V3-architecture chat model
that reasons (`<think>…</think>`), does two-operand arithmetic and calls tools in Kimi-K2's format.

One run, end to end (about 7.2 minutes on one H200 with the defaults):
  1. data: tasks.make_training_examples rendered with the shipped chat template and tokenized by
     worker processes while training runs (each epoch takes the shards made so far); loss on the
     assistant turns only; plus this repository's Markdown as plain text;
  2. training: the compact torch model of model.py, AdamW, warm-up then cosine decay driven by
     elapsed time (--minutes), bf16 autocast, batches of one length bucket (multiples of 64
     tokens) so that on CUDA each bucket's whole step (forward, backward, clipping, AdamW, router
     bias) is one CUDA graph, aux-loss-free balancing of the experts (router bias nudged from the
     load);
  3. export to --out: model.safetensors (BF16, router bias F32, the published DeepSeek-V3 tensor
     names of tools/make_shipped_model.py), config.json, generation_config.json and the tokenizer
     files and chat template copied unchanged from the shipped model;
  4. check: transformers' DeepseekV3ForCausalLM loads the export and gives the compact model's
     logits (both fp32 on the BF16 weights); fails otherwise;
  5. the quality bar of issue 9 on held-out tasks (tasks.make_eval_tasks), greedy, at most 96 new
     tokens: writes eval.json and train_log.txt to --report (default: --out) and exits 1 when the
     bar is not met.

--quick: a few hundred CPU steps on a small pool and a small eval, to prove the pipeline (it
cannot meet the bar, so the bar does not decide its exit status; the logit check does).
--eval-only DIR: steps 4-5 for an existing export.

Needs torch, transformers, jinja2, numpy and tiktoken or regex.
Usage: python3 tools/train_tiny/train.py [--out DIR] [--minutes M] [--quick]
"""

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import struct
import sys
import threading
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools"))

import chat  # noqa: E402
import tasks  # noqa: E402
from model import TinyDeepseekV3  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

SHIPPED = os.path.join(REPO, "models", "myriad-tiny")
TOKENIZER_FILES = ["tiktoken.model", "tokenizer_config.json", "chat_template.jinja"]
PAD, EOS, IM_END = 4095, 3841, 3842
MAX_LEN = 512
BUCKET = 64  # batch lengths are multiples of this
PIN = torch.cuda.is_available()
EVAL_SEED = 90210
LOG = None


def log(*a):
    line = " ".join(str(x) for x in a)
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


# --- data --------------------------------------------------------------------------------------

_W = {}


def _worker_init(model_dir):
    _W["template"] = chat.ChatTemplate(model_dir)
    _W["tok"] = Tokenizer(model_dir)


def _make_shard(job):
    """Examples of one shard -> (tokens uint16, learn uint8, lengths int32)."""
    seed, shard, n = job
    examples = tasks.make_training_examples(f"{seed}:{shard}", n)
    toks, learn, lengths = [], [], []
    for ex in examples:
        ids, mask = [], []
        for text, train in chat.training_pieces(_W["template"], ex):
            piece = _W["tok"].encode(text)
            ids += piece
            mask += [train] * len(piece)
        if len(ids) > MAX_LEN:
            continue
        toks += ids
        learn += mask
        lengths.append(len(ids))
    return (np.array(toks, np.uint16), np.array(learn, np.uint8), np.array(lengths, np.int32))


def english_chunks(tok, n_tokens, seed, chunk=256):
    """n_tokens of this repository's Markdown as plain-text chunks, every token learned."""
    docs = tasks.english_documents(REPO)
    ids = []
    for d in docs:
        ids += tok.encode(d)
    if not ids:
        return []
    r = random.Random(seed)
    out, total = [], 0
    while total < n_tokens:
        start = r.randrange(max(1, len(ids) - chunk))
        out.append(ids[start:start + chunk])
        total += len(out[-1])
    return out


class Pool:
    """Training sequences, kept in the parts the data workers made (no concatenation), and
    batches of one length bucket each: rows padded to a multiple of BUCKET tokens, as many rows
    as fit in --batch-tokens, so every batch of a bucket has the same shapes (CUDA graphs)."""

    def __init__(self, parts):
        self.parts = parts
        starts = [np.concatenate([[0], np.cumsum(p[2])[:-1]]).astype(np.int64) for p in parts]
        self.lengths = np.concatenate([p[2] for p in parts]).astype(np.int64)
        self.part = np.concatenate([np.full(len(p[2]), i, np.int32) for i, p in enumerate(parts)])
        self.offsets = np.concatenate(starts)
        self.learned = np.concatenate([np.add.reduceat(p[1].astype(np.int64), s) if len(s) else
                                       np.zeros(0, np.int64) for p, s in zip(parts, starts)])
        self.tokens = int(self.lengths.sum())
        self.learn_share = float(self.learned.sum()) / max(1, self.tokens)

    def epoch_batches(self, rng, batch_tokens):
        """[(T, rows, idx)] in random order; T = the bucket (padded length)."""
        bucket = -(-self.lengths // BUCKET) * BUCKET
        batches = []
        for t in np.unique(bucket):
            idx = np.flatnonzero(bucket == t)
            rng.shuffle(idx)
            rows = max(1, batch_tokens // int(t))
            batches += [(int(t), rows, idx[s:s + rows]) for s in range(0, len(idx), rows)]
        order = rng.permutation(len(batches))
        return [batches[i] for i in order]

    def batch(self, t, rows, idx, cap, rng):
        """Fixed shapes for bucket t: ids [rows, t] (PAD-filled), where [cap] (flat indices into
        the [rows, t-1] grid of positions whose next token is learned; padded with 0), targets
        [cap] and weights [cap] (1 for a learned position, 0 for padding). A batch with more
        learned positions than cap keeps a random cap of them."""
        ids = np.full((rows, t), PAD, np.int64)
        learn = np.zeros((rows, t), np.bool_)
        for row, i in enumerate(idx):
            p, o, n = self.parts[self.part[i]], self.offsets[i], self.lengths[i]
            ids[row, :n] = p[0][o:o + n]
            learn[row, :n] = p[1][o:o + n]
        where = np.flatnonzero(learn[:, 1:])
        dropped = max(0, len(where) - cap)
        if dropped:
            where = np.sort(rng.choice(where, cap, replace=False))
        targets = ids[:, 1:].reshape(-1)[where]
        n = len(where)
        weights = np.zeros(cap, np.float32)
        weights[:n] = 1
        where = np.concatenate([where, np.zeros(cap - n, np.int64)])
        targets = np.concatenate([targets, np.zeros(cap - n, np.int64)])
        out = [torch.from_numpy(x) for x in (ids, where, targets, weights)]
        if PIN:
            out = [x.pin_memory() for x in out]
        return out, n, dropped


class DataFeed:
    """The training pool, made by worker processes while training runs: shards arrive in the
    background; each epoch takes every shard that has arrived by its start."""

    def __init__(self, args, tok):
        self.t0 = time.time()
        shard = 2000
        jobs = [(args.seed, s, min(shard, args.examples - s * shard))
                for s in range((args.examples + shard - 1) // shard)]
        self.n_jobs = len(jobs)
        self.workers = args.workers or max(1, min(len(jobs), (os.cpu_count() or 2) - 1))
        self.parts, self.done, self.error = [], False, None
        self._mp = mp.get_context("fork").Pool(self.workers, _worker_init, (SHIPPED,))
        it = self._mp.imap_unordered(_make_shard, jobs, chunksize=1)
        self._thread = threading.Thread(target=self._collect, args=(it,), daemon=True)
        self._thread.start()
        # Plain text: --text-share of the chat tokens, estimated from the first shard.
        self.wait(1)
        p = self.parts[0]
        chat_tokens = len(p[0]) * args.examples / max(1, len(p[2]))
        text = english_chunks(tok, int(chat_tokens * args.text_share), args.seed)
        self.text_tokens = np.array([x for c in text for x in c], np.uint16)
        self.text_lengths = np.array([len(c) for c in text], np.int32)
        self.n_text = 0

    def _collect(self, it):
        try:
            for part in it:
                self.parts.append(part)
        except Exception as e:  # noqa: BLE001 - reported by wait()
            self.error = e
        self.done = True

    def wait(self, n):
        while len(self.parts) < min(n, self.n_jobs) and not self.done:
            time.sleep(0.05)
        if self.error is not None:
            raise RuntimeError(f"data worker failed: {self.error}")

    def text_part(self, n_parts):
        """The plain-text chunks in proportion to the chat shards that have arrived."""
        self.n_text = len(self.text_lengths) * n_parts // self.n_jobs
        n = int(self.text_lengths[:self.n_text].sum())
        if not self.n_text:
            return []
        return [(self.text_tokens[:n], np.ones(n, np.uint8), self.text_lengths[:self.n_text])]

    def snapshot(self):
        parts = list(self.parts)
        pool = Pool(parts + self.text_part(len(parts)))
        log(f"data: {len(pool.lengths):,} sequences ({len(parts)}/{self.n_jobs} shards; "
            f"{self.n_text} text chunks), {pool.tokens:,} tokens, "
            f"{pool.learn_share * 100:.0f} % learned, at {time.time() - self.t0:.1f} s, "
            f"{self.workers} workers")
        if len(parts) == self.n_jobs:
            self._mp.close()
        return pool


# --- training ----------------------------------------------------------------------------------

def _loss(model, hidden, ids, where, targets, weights, use_amp):
    """Cross-entropy on the learned positions only (lm_head runs on those alone); padding
    positions have weight 0. hidden: model.hidden or a compiled copy of it."""
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=use_amp,
                        cache_enabled=False):
        h = hidden(ids)
        h = h[:, :-1].reshape(-1, h.shape[-1]).index_select(0, where)
        logits = model.lm_head(h)
    ce = F.cross_entropy(logits.float(), targets, reduction="none")
    return (ce * weights).sum() / weights.sum().clamp(min=1.0)


class Stepper:
    """One optimiser step: forward, backward, clipping, AdamW and the router-bias nudge
    (aux-loss-free balancing, DeepSeek-V3 §2.1.2). On CUDA each length bucket's step is captured
    once as a CUDA graph and replayed (eagerly the step is bound by kernel launches); a failed
    capture falls back to eager steps."""

    def __init__(self, model, args, device, use_amp):
        self.model, self.args, self.device, self.use_amp = model, args, device, use_amp
        cuda = device.type == "cuda"
        self.graphs = bool(args.graphs) and cuda
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n]
        no_decay = [p for n, p in model.named_parameters()
                    if not (p.dim() >= 2 and "embed" not in n)]
        self.params = decay + no_decay
        lr = torch.tensor(args.lr, device=device) if self.graphs else args.lr
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                      {"params": no_decay, "weight_decay": 0.0}],
                                     lr=lr, betas=(0.9, 0.95), eps=1e-8, fused=cuda,
                                     capturable=self.graphs)
        self.lr_t = lr if self.graphs else None
        self.bias_rate = torch.tensor(args.bias_rate, device=device)
        # --compile: inductor's fused kernels for the model body (dynamic shapes: one compile
        # serves every bucket); compiled by the first warm-up step, then captured like eager.
        self.hidden = torch.compile(model.hidden, dynamic=True) if args.compile else model.hidden
        self.captured = {}  # bucket T -> (graph, static inputs, static loss)
        self.pool = None

    def set_lr(self, lr):
        if self.lr_t is not None:
            self.lr_t.fill_(lr)
        else:
            for g in self.opt.param_groups:
                g["lr"] = lr

    def _eager(self, ids, where, targets, weights):
        loss = _loss(self.model, self.hidden, ids, where, targets, weights, self.use_amp)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0, foreach=self.device.type == "cuda")
        self.opt.step()
        if not self.graphs:
            self.opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            for moe in self.model.moe_layers():
                load = moe.last_load.float()
                moe.e_score_correction_bias += self.bias_rate * torch.sign(load.mean() - load)
        return loss

    def _reset_step_counts(self):
        for state in self.opt.state.values():
            if "step" in state:
                state["step"].zero_()

    def capture(self, shapes):
        """shapes: {T: (rows, cap)}. Per bucket: warm-up runs with learning rate, bias rate and
        every loss weight 0 (no parameter moves), then the capture; the optimiser's step counts
        are reset afterwards. False (and eager steps from then on) if anything fails."""
        if not self.graphs:
            return False
        t0 = time.time()
        saved_lr = float(self.lr_t)
        self.lr_t.fill_(0.0)
        self.bias_rate.fill_(0.0)
        try:
            for t, (rows, cap) in sorted(shapes.items()):
                static = (torch.full((rows, t), PAD, dtype=torch.long, device=self.device),
                          torch.zeros(cap, dtype=torch.long, device=self.device),
                          torch.zeros(cap, dtype=torch.long, device=self.device),
                          torch.zeros(cap, dtype=torch.float32, device=self.device))
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(2):
                        self.opt.zero_grad(set_to_none=True)
                        self._eager(*static)
                torch.cuda.current_stream().wait_stream(side)
                self.opt.zero_grad(set_to_none=True)
                g = torch.cuda.CUDAGraph()
                # One memory pool for all buckets: nothing a replay leaves behind is read after
                # another bucket's replay except the parameters and optimiser state (outside it).
                with torch.cuda.graph(g, pool=self.pool):
                    loss = self._eager(*static)
                if self.pool is None:
                    self.pool = g.pool()
                self.captured[t] = (g, static, loss)
            self._reset_step_counts()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - fall back to eager steps
            log(f"CUDA graphs: capture failed ({type(e).__name__}: {str(e)[:400]}); "
                "training eagerly")
            self.graphs, self.captured = False, {}
            self.opt.zero_grad(set_to_none=True)
            self._reset_step_counts()
        self.lr_t.fill_(saved_lr)
        self.bias_rate.fill_(self.args.bias_rate)
        if self.graphs:
            log(f"CUDA graphs: {len(self.captured)} buckets captured in {time.time() - t0:.1f} s "
                f"(peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB)")
        return self.graphs

    def step(self, t, batch):
        if self.graphs:
            g, static, loss = self.captured[t]
            for dst, src in zip(static, batch):
                dst.copy_(src, non_blocking=True)
            g.replay()
            return loss
        return self._eager(*[x.to(self.device, non_blocking=True) for x in batch])


def loss_caps(pool, rng, batch_tokens):
    """{T: (rows, cap)}: per bucket, room for 1.25 x the most learned positions of a batch in one
    epoch of the pool (at least 1 Ki, at most every position). Buckets the pool lacks get every
    position."""
    most = {}
    for t, rows, idx in pool.epoch_batches(rng, batch_tokens):
        most[t] = max(most.get(t, 0), int(pool.learned[idx].sum()))
    caps = {}
    for t in range(BUCKET, MAX_LEN + 1, BUCKET):
        rows = max(1, batch_tokens // t)
        full = rows * (t - 1)
        caps[t] = (rows, min(full, max(1024, int(most[t] * 1.25))) if t in most else full)
    return caps


def train(args, cfg, feed, device):
    torch.manual_seed(args.seed)
    model = TinyDeepseekV3(cfg)
    model.init_weights(args.seed)
    model.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params:,} parameters")
    use_amp = device.type == "cuda" if args.amp is None else args.amp
    stepper = Stepper(model, args, device, use_amp)
    rng = np.random.default_rng(args.seed)
    feed.wait(args.first_shards)
    pool = feed.snapshot()
    caps = loss_caps(pool, np.random.default_rng(args.seed + 1), args.batch_tokens)
    stepper.capture(caps)
    log(f"steps: {'CUDA graphs' if stepper.graphs else 'eager'}; buckets (length x rows, loss "
        "cap): " + ", ".join(f"{t}x{rows} ({cap})" for t, (rows, cap) in sorted(caps.items())))
    budget = args.minutes * 60
    t0 = time.time()
    step = tokens = learned = dropped = 0
    loss_avg = None
    batches = []
    while True:
        elapsed = time.time() - t0
        if elapsed >= budget or (args.max_steps and step >= args.max_steps):
            break
        # Linear warm-up over steps, cosine decay over time (or steps, with --max-steps).
        progress = max(elapsed / budget, step / args.max_steps if args.max_steps else 0)
        lr = args.lr * min(1.0, (step + 1) / args.warmup_steps) * (
            args.final_lr + (1 - args.final_lr) * 0.5 * (1 + math.cos(math.pi * progress)))
        stepper.set_lr(lr)
        if not batches:
            if step:
                pool = feed.snapshot()
            batches = pool.epoch_batches(rng, args.batch_tokens)
        t, rows, idx = batches.pop()
        batch, n_learned, n_dropped = pool.batch(t, rows, idx, caps[t][1], rng)
        loss = stepper.step(t, batch)
        step += 1
        tokens += int(pool.lengths[idx].sum())
        learned += n_learned
        dropped += n_dropped
        if step % 50 == 0 or step == 1:
            lv = loss.item()
            loss_avg = lv if loss_avg is None else 0.9 * loss_avg + 0.1 * lv
            el = time.time() - t0
            log(f"step {step:6d}  {el:6.1f} s  lr {lr:.2e}  loss {lv:.4f} (avg {loss_avg:.4f})  "
                f"{tokens / el:,.0f} tok/s")
    if device.type == "cuda":
        torch.cuda.synchronize()
    el = time.time() - t0
    log(f"trained: {step} steps, {tokens:,} tokens ({learned:,} learned, {dropped:,} over a "
        f"batch's loss cap left out) in {el:.1f} s ({tokens / max(el, 1e-9):,.0f} tok/s)")
    loads = [moe.e_score_correction_bias.tolist() for moe in model.moe_layers()]
    log("router biases:", json.dumps([[round(b, 4) for b in x] for x in loads]))
    return model, {"steps": step, "tokens": tokens, "learned_tokens": learned,
                   "seconds": round(el, 1), "cuda_graphs": stepper.graphs}


# --- export ------------------------------------------------------------------------------------

def exported_tensors(model, cfg):
    """{published name: fp32 tensor} for every tensor of make_shipped_model.tensor_specs."""
    sd = {}
    for name, t in model.state_dict().items():
        if name == "inv_freq":
            continue
        if name.startswith("lm_head"):
            sd[name] = t
            continue
        key = "model." + name
        for proj in ("gate_proj", "up_proj", "down_proj"):
            if key.endswith(f".mlp.{proj}") and t.dim() == 3:  # stacked routed experts
                base = key[: -len(proj)]
                for e in range(t.shape[0]):
                    sd[f"{base}experts.{e}.{proj}.weight"] = t[e]
                break
        else:
            sd[key.replace(".mlp.e_score_correction_bias", ".mlp.gate.e_score_correction_bias")] = t
    return {k: v.detach().float().cpu() for k, v in sd.items()}


def bf16_bytes(t):
    return t.to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()


def export(model, cfg, out):
    import make_shipped_model as ship  # noqa: PLC0415 - the published names, shapes, configs
    os.makedirs(out, exist_ok=True)
    tensors = exported_tensors(model, cfg)
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    specs = ship.tensor_specs()
    assert set(tensors) == {s[0] for s in specs}, set(tensors) ^ {s[0] for s in specs}
    for name, shape, _, dtype in specs:
        t = tensors[name]
        assert tuple(t.shape) == tuple(shape), (name, t.shape, shape)
        data = bf16_bytes(t) if dtype == "BF16" else t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    hdr = json.dumps(header, separators=(",", ":")).encode()
    hdr += b" " * (-(8 + len(hdr)) % 8)
    path = os.path.join(out, "model.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for b in blobs:
            f.write(b)
    assert os.path.getsize(path) <= 15 * 1024 * 1024, "model.safetensors over 15 MiB"
    ship.write_json(os.path.join(out, "config.json"), cfg)
    ship.write_json(os.path.join(out, "generation_config.json"), ship.generation_config())
    for f in TOKENIZER_FILES:
        if os.path.abspath(os.path.join(out, f)) != os.path.abspath(os.path.join(SHIPPED, f)):
            shutil.copyfile(os.path.join(SHIPPED, f), os.path.join(out, f))
    log(f"exported {len(specs)} tensors, {os.path.getsize(path):,} bytes to {out}")


def load_export(out, cfg):
    """The compact model with an export's weights (BF16 -> fp32)."""
    with open(os.path.join(out, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    raw = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = bytearray(data[a:b])
        if info["dtype"] == "BF16":
            t = torch.frombuffer(buf, dtype=torch.bfloat16).float()
        else:
            t = torch.frombuffer(buf, dtype=torch.float32).clone()
        raw[name] = t.view(info["shape"])
    model = TinyDeepseekV3(cfg)
    sd = {}
    for name in model.state_dict():
        if name == "inv_freq":
            continue
        key = name if name.startswith("lm_head") else "model." + name
        for proj in ("gate_proj", "up_proj", "down_proj"):
            if key.endswith(f".mlp.{proj}") and model.state_dict()[name].dim() == 3:
                base = key[: -len(proj)]
                e = model.state_dict()[name].shape[0]
                sd[name] = torch.stack([raw[f"{base}experts.{i}.{proj}.weight"] for i in range(e)])
                break
        else:
            sd[name] = raw[key.replace(".mlp.e_score_correction_bias",
                                       ".mlp.gate.e_score_correction_bias")]
    model.load_state_dict(sd, strict=False)
    return model


# --- checks ------------------------------------------------------------------------------------

def check_transformers(out, cfg, prompts):
    """transformers' DeepseekV3ForCausalLM on the export vs the compact model, both fp32."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM  # noqa: PLC0415
    # model_type kimi_k2 is DeepSeek-V3's architecture, but transformers keys the weight
    # conversion that merges per-expert tensors by model_type: load it as deepseek_v3.
    config = DeepseekV3Config.from_pretrained(out)
    config.model_type = "deepseek_v3"
    hf = DeepseekV3ForCausalLM.from_pretrained(out, config=config, dtype=torch.float32).eval()
    mine = load_export(out, cfg).eval()
    worst, scale = 0.0, 0.0
    with torch.no_grad():
        for ids in prompts:
            x = torch.tensor([ids])
            a = hf(input_ids=x).logits[0]
            b = mine(x)[0]
            worst = max(worst, (a - b).abs().max().item())
            scale = max(scale, a.abs().max().item())
    ok = worst <= 1e-3 * max(scale, 1.0) + 1e-3
    log(f"transformers check: max |logit difference| {worst:.2e} (largest logit {scale:.1f}) "
        f"over {len(prompts)} prompts: {'ok' if ok else 'FAILED'}")
    return ok, worst


@torch.no_grad()
def greedy(model, prompts, device, max_new, batch_tokens):
    """Greedy continuations (ids) of each prompt, batched, no KV cache: every step recomputes the
    right-padded batch (causal attention: padding after a row's end does not change it)."""
    model.eval()
    outs = [None] * len(prompts)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    # fp32, no TF32: as close as a GPU gets to myriad's CPU arithmetic on the BF16 weights.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end - start + 1) * (len(prompts[order[end]]) + max_new) <= batch_tokens:
            end += 1
        rows = order[start:end]
        start = end
        t_max = max(len(prompts[i]) for i in rows) + max_new
        buf = torch.full((len(rows), t_max), PAD, dtype=torch.long)
        lens = torch.tensor([len(prompts[i]) for i in rows])
        for r, i in enumerate(rows):
            buf[r, :len(prompts[i])] = torch.tensor(prompts[i])
        buf, lens = buf.to(device), lens.to(device)
        n0 = lens.clone()
        active = torch.ones(len(rows), dtype=torch.bool, device=device)
        ar = torch.arange(len(rows), device=device)
        for _ in range(max_new):
            t = int(lens.max())
            h = model.hidden(buf[:, :t])
            logits = model.lm_head(h[ar, lens - 1])
            nxt = logits.float().argmax(-1)
            buf[ar[active], lens[active]] = nxt[active]
            lens = lens + active.long()
            active &= (nxt != IM_END) & (nxt != EOS)
            if not active.any():
                break
        for r, i in enumerate(rows):
            outs[i] = buf[r, n0[r]:lens[r]].tolist()
    return outs


def evaluate(model, tok, template, device, n_arith, n_tool, max_new, batch_tokens):
    ev = tasks.make_eval_tasks(EVAL_SEED, n_arith=n_arith, n_tool=n_tool)
    flat = [(k, t) for k in ("arith", "tool", "followup") for t in ev[k]]
    prompts = [tok.encode(template.render(t["messages"], t["tools"], add_generation_prompt=True))
               for _, t in flat]
    t0 = time.time()
    outs = greedy(model, prompts, device, max_new, batch_tokens)
    texts = [tok.decode(o) for o in outs]
    results = {"plus_minus": [], "times": [], "tool_call": [], "followup": []}
    samples = {k: [] for k in results}
    for (kind, t), text in zip(flat, texts):
        if kind == "arith":
            key, ok = ("times" if t["op"] == "*" else "plus_minus"), tasks.grade_arith(t, text)
        elif kind == "tool":
            key, ok = "tool_call", tasks.grade_tool_call(t, tasks.parse_tool_calls(text))
        else:
            key, ok = "followup", tasks.grade_followup(t, text)
        results[key].append(ok)
        if len(samples[key]) < 4 or (not ok and len(samples[key]) < 8):
            samples[key].append({"prompt": t["messages"][0]["content"], "output": text, "ok": ok})
    figures, passed = tasks.bar(results)
    for k, f in figures.items():
        log(f"bar {k:10s}: {f['correct']:3d}/{f['total']:3d} = {f['rate'] * 100:5.1f} % "
            f"(need {f['need'] * 100:.0f} %)")
    log(f"eval: {len(prompts)} prompts in {time.time() - t0:.1f} s; bar {'MET' if passed else 'NOT met'}")
    return figures, passed, samples


# --- main --------------------------------------------------------------------------------------

def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=SHIPPED, help="export folder (default models/myriad-tiny)")
    ap.add_argument("--report", help="folder for eval.json and train_log.txt (default --out)")
    ap.add_argument("--minutes", type=float, default=6.8, help="training-loop wall time")
    ap.add_argument("--examples", type=int, default=3_000_000, help="training pool size")
    ap.add_argument("--text-share", type=float, default=0.03,
                    help="plain English tokens as a share of the chat tokens")
    ap.add_argument("--batch-tokens", type=int, default=98_304)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--final-lr", type=float, default=0.05, help="end of the cosine, times --lr")
    ap.add_argument("--warmup-steps", type=int, default=300, help="linear lr warm-up steps")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--bias-rate", type=float, default=1e-3, help="router bias update speed")
    ap.add_argument("--max-steps", type=int, help="stop after N steps (0: time only; default 0, "
                    "--quick 300)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--workers", type=int, default=0, help="data processes (0: all cores)")
    ap.add_argument("--graphs", action=argparse.BooleanOptionalAction, default=True,
                    help="capture each length bucket's training step as a CUDA graph (CUDA "
                         "only; falls back to eager steps if capturing fails)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model body (inside the CUDA graphs on CUDA); not yet "
                         "measured on the GPU")
    ap.add_argument("--first-shards", type=int, default=24,
                    help="data shards (2,000 conversations each) to wait for before training")
    ap.add_argument("--amp", action=argparse.BooleanOptionalAction,
                    help="bf16 autocast in training (default: on with CUDA; --amp on the CPU "
                         "tries the CUDA run's precision)")
    ap.add_argument("--eval-arith", type=int, default=200)
    ap.add_argument("--eval-tool", type=int, default=200)
    ap.add_argument("--eval-max-new", type=int, default=96)
    ap.add_argument("--eval-batch-tokens", type=int, default=400_000)
    ap.add_argument("--quick", action="store_true",
                    help="CPU smoke run: small pool, a few hundred steps, small eval; the bar "
                         "does not decide the exit status")
    ap.add_argument("--eval-only", metavar="DIR", help="check and evaluate an existing export")
    args = ap.parse_args()
    if args.quick:
        args.examples = min(args.examples, 6000)
        args.batch_tokens = min(args.batch_tokens, 4096)
        args.max_steps = 300 if args.max_steps is None else args.max_steps
        args.minutes = min(args.minutes, 10.0)
        args.eval_arith, args.eval_tool, args.eval_max_new = 10, 6, 40
        args.eval_batch_tokens = min(args.eval_batch_tokens, 20_000)
        args.warmup_steps = min(args.warmup_steps, 20)
    args.max_steps = args.max_steps or 0
    out = args.eval_only or args.out
    report = args.report or out
    os.makedirs(report, exist_ok=True)
    LOG = open(os.path.join(report, "train_log.txt"), "w", encoding="utf-8")
    t_start = time.time()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    log(f"train_tiny: {' '.join(sys.argv[1:])}")
    log(f"device {device} ({torch.cuda.get_device_name(0) if device.type == 'cuda' else 'cpu'}), "
        f"torch {torch.__version__}, {os.cpu_count()} cores")
    with open(os.path.join(SHIPPED, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    tok = Tokenizer(SHIPPED)
    template = chat.ChatTemplate(SHIPPED)
    log(f"tokenizer backend: {tok.backend}")
    info = {}
    if args.eval_only:
        model = load_export(out, cfg).to(device)
    else:
        feed = DataFeed(args, tok)
        model, info = train(args, cfg, feed, device)
        export(model.cpu(), cfg, out)
        model.to(device)
    ev = tasks.make_eval_tasks(EVAL_SEED, n_arith=4, n_tool=3)
    check_prompts = [tok.encode(template.render(t["messages"], t["tools"], add_generation_prompt=True))
                     for k in ("arith", "tool", "followup") for t in ev[k][:2]]
    hf_ok, hf_err = check_transformers(out, cfg, check_prompts)
    # The bar is measured on the exported (BF16-rounded) weights, as myriad will run them.
    model = load_export(out, cfg).to(device)
    figures, passed, samples = evaluate(model, tok, template, device, args.eval_arith,
                                        args.eval_tool, args.eval_max_new, args.eval_batch_tokens)
    total = time.time() - t_start
    result = {"bar_met": passed, "figures": figures, "transformers_max_logit_diff": hf_err,
              "transformers_check": hf_ok, "training": info, "total_seconds": round(total, 1),
              "device": str(device), "args": vars(args), "samples": samples}
    with open(os.path.join(report, "eval.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
        f.write("\n")
    log(f"total {total:.1f} s; eval.json in {report}")
    if not hf_ok:
        log("FAILED: transformers does not reproduce the compact model's logits")
        return 1
    if not passed and not args.quick:
        log("FAILED: the quality bar is not met")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
