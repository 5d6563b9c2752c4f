"""GGUF against the `gguf` Python package (llama.cpp's gguf-py) and other real oracles.

* every tensor type myriad reads dequantises bit for bit as gguf.quants.dequantize does, on
  several hundred random blocks per type written with gguf.GGUFWriter (gguf_dump prints ours);
* the GGUF vocabulary tokenizes as HF `tokenizers` does with the checkpoint's tokenizer.json;
* the chat template renders as jinja2 renders it;
* the Q8_0 model split in three files generates exactly what the same model merged into one
  file (by gguf.GGUFWriter) generates, and inspect reports its formats;
* malformed files and a missing split exit 2 with a message naming them.

Needs MYRIAD_BINARY, MYRIAD_GGUF_DUMP and MYRIAD_GGUF_GOLDENS (set by ctest).
"""

import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

MYRIAD = os.environ.get("MYRIAD_BINARY", "build/myriad")
DUMP = os.environ.get("MYRIAD_GGUF_DUMP", "build/tests/gguf_dump")
GOLDENS = os.environ.get("MYRIAD_GGUF_GOLDENS", "build/goldens_gguf")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "goldens_gguf")
F32 = os.path.join(GOLDENS, "f32", "tiny-F32.gguf")
SPLIT = os.path.join(GOLDENS, "q8_0_split", "tiny-Q8_0-00001-of-00003.gguf")

# type -> (block elements, block bytes, byte offsets of f16 scale fields inside a block)
BLOCKS = {
    T.Q8_0: (32, 34, [0]),
    T.Q4_0: (32, 18, [0]),
    T.Q4_K: (256, 144, [0, 2]),
    T.Q5_K: (256, 176, [0, 2]),
    T.Q6_K: (256, 210, [208]),
}


def run(*args, stdin=None):
    return subprocess.run([MYRIAD, *args], capture_output=True, text=True, input=stdin, timeout=300)


def random_blocks(rng, qtype, rows, cols):
    """Random raw bytes for rows x cols elements, with finite f16 scales."""
    if qtype in (T.F32, T.F16, T.BF16):
        x = rng.standard_normal((rows, cols)) * 3
        if qtype == T.F32:
            return x.astype(np.float32)
        if qtype == T.F16:
            return x.astype(np.float16).view(np.uint8).reshape(rows, cols * 2)
        bits = x.astype(np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).view(np.uint8).reshape(rows, cols * 2)
    be, bb, scale_at = BLOCKS[qtype]
    nb = rows * cols // be
    raw = rng.integers(0, 256, size=(nb, bb), dtype=np.uint8)
    for off in scale_at:
        scales = (rng.uniform(1e-3, 2.0, nb) * rng.choice([-1, 1], nb)).astype(np.float16)
        raw[:, off:off + 2] = scales.view(np.uint8).reshape(nb, 2)
    return raw.reshape(rows, cols // be * bb)


def test_dequantisers_match_gguf_package_bit_for_bit(tmp_path):
    rng = np.random.default_rng(20261215)
    path = str(tmp_path / "blocks.gguf")
    w = gguf.GGUFWriter(path, "test")
    expected = []
    for qtype in (T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_K, T.Q5_K, T.Q6_K):
        cols = 512 if BLOCKS.get(qtype, (1,))[0] == 256 else 256
        rows = 300 * BLOCKS.get(qtype, (1,))[0] // cols if qtype in BLOCKS else 4
        raw = random_blocks(rng, qtype, rows, cols)
        if qtype == T.F32:
            w.add_tensor(qtype.name, raw)
        else:
            w.add_tensor(qtype.name, raw, raw_dtype=qtype)   # raw bytes [rows, row bytes]
        expected.append((qtype.name, np.asarray(dequantize(raw, qtype), np.float32).reshape(-1)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    out = str(tmp_path / "ours.f32")
    subprocess.run([DUMP, path, out], check=True, timeout=60)
    ours = np.fromfile(out, dtype=np.float32)
    reader = gguf.GGUFReader(path)
    at = 0
    for t in reader.tensors:   # the file's order
        name, ref = next((n, r) for n, r in expected if n == t.name)
        got = ours[at:at + ref.size]
        at += ref.size
        assert got.size == ref.size, name
        diff = np.flatnonzero(got.view(np.uint32) != ref.view(np.uint32))
        assert diff.size == 0, f"{name}: {diff.size} of {ref.size} values differ, first at {diff[0]}: " \
                               f"{got[diff[0]]} vs {ref[diff[0]]}"
    assert at == ours.size


def hf_tokenizer():
    from tokenizers import Tokenizer
    with lzma.open(os.path.join(SRC, "hf_tokenizer", "tokenizer.json.xz"), "rt", encoding="utf-8") as f:
        return Tokenizer.from_str(f.read())


def test_gguf_vocabulary_tokenizes_as_hf_tokenizers():
    hf = hf_tokenizer()
    texts = ["Hello world", "The quick brown fox jumps over 12345 lazy dogs.\n\n  x = y + 1;",
             "naïve café, 東京 and ひらがな カタカナ", "<｜User｜>hi<｜Assistant｜><think>ok</think>",
             "  leading spaces\tand\ttabs\r\n", "emoji 🦙🦙 and ünïcödé"]
    r = run("tokenize", F32, "--jsonl", stdin="\n".join(json.dumps(t) for t in texts) + "\n")
    assert r.returncode == 0, r.stderr
    ours = [json.loads(line) for line in r.stdout.splitlines()]
    for text, ids in zip(texts, ours):
        assert ids == hf.encode(text, add_special_tokens=False).ids, text
        d = subprocess.run([MYRIAD, "detokenize", F32, ",".join(map(str, ids))], capture_output=True,
                           timeout=60)   # bytes: keep \r\n as printed
        assert d.returncode == 0, d.stderr
        want = hf.decode(ids, skip_special_tokens=False).encode()
        assert d.stdout in (want, want + b"\n"), text


def test_chat_template_renders_as_jinja2(tmp_path):
    import jinja2
    reader = gguf.GGUFReader(F32)
    template = reader.fields["tokenizer.chat_template"].contents()
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    bos = tokens[reader.fields["tokenizer.ggml.bos_token_id"].contents()]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "2+2?"}]
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"messages": messages}))
    r = run("chat-template", F32, "--request", str(req))
    assert r.returncode == 0, r.stderr
    want = jinja2.Environment().from_string(template).render(
        messages=messages, bos_token=bos, add_generation_prompt=True)
    assert r.stdout == want or r.stdout.rstrip("\n") == want


def merge_splits(first, out):
    """The split model as one file, written by gguf.GGUFWriter from the splits' contents."""
    files = [first.replace("00001-of", f"0000{i}-of") for i in (1, 2, 3)]
    readers = [gguf.GGUFReader(f) for f in files]
    w = gguf.GGUFWriter(out, arch=readers[0].fields["general.architecture"].contents())
    for key, field in readers[0].fields.items():
        if key.startswith("GGUF.") or key.startswith("split.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, field.contents(), vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, field.contents(), vtype)
    for r in readers:
        for t in r.tensors:
            w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_split_model_generates_as_the_merged_file(tmp_path):
    merged = str(tmp_path / "merged.gguf")
    merge_splits(SPLIT, merged)
    assert len(gguf.GGUFReader(merged).tensors) == 34
    args = ["--prompt-ids", "5,17,200,33,9", "--max-tokens", "6", "--ids", "--temperature", "0"]
    a = run("generate", SPLIT, *args)
    b = run("generate", merged, *args)
    assert a.returncode == 0, a.stderr
    assert b.returncode == 0, b.stderr
    assert a.stdout == b.stdout and a.stdout.strip()
    for tp in ("1", "2"):
        i = run("inspect", SPLIT, "--tp", tp)
        assert i.returncode == 0, i.stderr
        assert "in 3 GGUF file(s)" in i.stdout
        assert "gguf Q8_0" in i.stdout


def rewritten(src, out, changes):
    """`src` written again by gguf.GGUFWriter with the metadata `changes` (key -> value)."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(out, arch=r.fields["general.architecture"].contents())
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        value = changes.get(key, field.contents())
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, value, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, value, vtype)
    for t in r.tensors:
        w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_huge_counts_exit_2_naming_the_key(tmp_path):
    """A billion blocks or experts is refused naming the key, before anything is sized by it
    (it used to end in bad_alloc after taking gigabytes); a count the file's bytes cannot hold
    is refused the same way."""
    for key, value, expect in [
            ("deepseek2.block_count", 1_000_000_000, "is more than 1024"),
            ("deepseek2.expert_count", 1_000_000_000, "is more than 16384"),
            ("deepseek2.block_count", 1000, "needs at least"),
            ("deepseek2.rope.freq_base", 1e38, "is more than 1e+12")]:
        path = str(tmp_path / "bad.gguf")
        rewritten(F32, path, {key: value})
        r = run("inspect", path)
        assert r.returncode == 2, (key, r.stderr)
        assert f"metadata {key} = " in r.stderr and expect in r.stderr, r.stderr


def test_malformed_and_missing_split_exit_2(tmp_path):
    data = open(F32, "rb").read()
    cases = {
        "truncated.gguf": (data[:len(data) // 2], "runs past the end"),
        "header.gguf": (data[:100], "more than the file can hold"),
        "magic.gguf": (b"GGML" + data[4:], "not a GGUF file"),
    }
    for name, (content, expect) in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        r = run("generate", str(p), "--prompt-ids", "1")
        assert r.returncode == 2, (name, r.stderr)
        assert r.stderr.startswith("myriad: error:") and expect in r.stderr and name in r.stderr, r.stderr
    lonely = tmp_path / "tiny-Q8_0-00001-of-00003.gguf"
    shutil.copy(SPLIT, lonely)
    r = run("generate", str(lonely), "--prompt-ids", "1")
    assert r.returncode == 2 and "split 2 of 3 is missing" in r.stderr, r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
