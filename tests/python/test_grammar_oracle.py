#!/usr/bin/env python3
"""The grammar module (src/grammar) against the `jsonschema` package, over the schema corpus in
tests/data/schemas (tools/make_schema_corpus.py).

For every case: its own expectations agree with jsonschema; schemas the grammar refuses fail to
compile with exit status 2 and a message naming the keyword; for the others, random documents
sampled from the grammar (a seeded walk over the allowed bytes, through tests/grammar/grammar_tool)
all validate, formats included; every listed valid document (compact, schema order) is accepted
and every invalid one refused; and no mutation of a sample that the matcher accepts is invalid.
Token-level walks over the o200k_base vocabulary (fill_mask) validate too.

Run: MYRIAD_GRAMMAR_TOOL=build/tests/grammar_tool build/venv/bin/python tests/python/test_grammar_oracle.py
"""

import glob
import json
import os
import random
import subprocess
import sys

import jsonschema
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.environ.get("MYRIAD_GRAMMAR_TOOL", os.path.join(REPO, "build", "tests", "grammar_tool"))
TOKENIZERS = os.environ.get("MYRIAD_TOKENIZER_DIR", os.path.join(REPO, "build", "tokenizers"))
CASES = sorted(glob.glob(os.path.join(REPO, "tests", "data", "schemas", "*.json")))
SAMPLES = 25


def compact(doc):
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def validator(schema):
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def tool(*args, stdin=None):
    return subprocess.run([TOOL, *args], input=stdin, capture_output=True, text=True, timeout=300)


def mutations(samples, rng):
    alphabet = '{}[],:"0189a-.eE tn\\'
    out = []
    for s in samples:
        for _ in range(4):
            if not s:
                break
            i = rng.randrange(len(s))
            op = rng.randrange(3)
            if op == 0:
                out.append(s[:i] + s[i + 1:])
            elif op == 1:
                out.append(s[:i] + rng.choice(alphabet) + s[i:])
            else:
                out.append(s[:i] + rng.choice(alphabet) + s[i + 1:])
    return out


def load_case(path, tmp_path):
    with open(path, encoding="utf-8") as f:
        case = json.load(f)
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(case["schema"], ensure_ascii=False), encoding="utf-8")
    return case, str(schema_file)


def test_corpus_is_large_enough():
    kinds = [("error" in json.load(open(c, encoding="utf-8"))) for c in CASES]
    supported, refused = kinds.count(False), kinds.count(True)
    assert supported >= 200 and refused >= 20, (supported, refused)


@pytest.mark.parametrize("path", CASES, ids=[os.path.basename(c)[:-5] for c in CASES])
def test_schema_case(path, tmp_path):
    case, schema_file = load_case(path, tmp_path)
    if "error" in case:
        r = tool("compile", schema_file)
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert case["error"] in r.stderr, r.stderr
        return
    v = validator(case["schema"])
    for d in case["valid"]:
        assert v.is_valid(d), ("the case's valid document is not valid", d)
    for d in case["invalid"]:
        assert not v.is_valid(d), ("the case's invalid document is valid", d)

    r = tool("sample", schema_file, "7", str(SAMPLES))
    assert r.returncode == 0, r.stderr
    samples = r.stdout.split("\n")[:-1]
    assert len(samples) == SAMPLES
    for s in samples:
        doc = json.loads(s)
        errors = [e.message for e in v.iter_errors(doc)]
        assert not errors, (s, errors)

    valid = [compact(d) for d in case["valid"]]
    invalid = [compact(d) for d in case["invalid"]]
    mutated = mutations(samples, random.Random(path))
    docs = valid + invalid + mutated
    r = tool("check", schema_file, stdin="".join(d + "\n" for d in docs))
    assert r.returncode == 0, r.stderr
    verdicts = r.stdout.split()
    assert len(verdicts) == len(docs)
    for d, ok in zip(valid, verdicts):
        assert ok == "1", ("a valid document was refused", d)
    for d, ok in zip(invalid, verdicts[len(valid):]):
        assert ok == "0", ("an invalid document was accepted", d)
    for d, ok in zip(mutated, verdicts[len(valid) + len(invalid):]):
        if ok == "1":
            doc = json.loads(d)
            assert v.is_valid(doc), ("the matcher accepted an invalid document", d)


TOKEN_CASES = [c for c in CASES if os.path.basename(c).startswith(
    ("agent_", "mcp_", "tool_S", "ref_tree", "pattern_0", "format_"))]


@pytest.mark.parametrize("path", TOKEN_CASES, ids=[os.path.basename(c)[:-5] for c in TOKEN_CASES])
def test_token_walk_o200k(path, tmp_path):
    case, schema_file = load_case(path, tmp_path)
    if "error" in case:
        pytest.skip("a schema the grammar refuses")
    r = tool("tokens", schema_file, os.path.join(TOKENIZERS, "o200k_base"), "3", "4")
    assert r.returncode == 0, r.stderr
    v = validator(case["schema"])
    for s in r.stdout.split("\n")[:-1]:
        doc = json.loads(s)
        assert v.is_valid(doc), (s, [e.message for e in v.iter_errors(doc)])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
