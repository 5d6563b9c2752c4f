#!/usr/bin/env python3
"""The grammar module's token masks against llguidance (PyPI), configured to the same grammar:
compact whitespace, "," and ":" separators. Token walks over the DeepSeek-V3 vocabulary
(tests/grammar/grammar_tool masks) give, at every step, our allowed-token set; llguidance fed the
same prefix computes its own. They must be equal, except where llguidance knows the next bytes
are forced: there it allows only the canonical tokenization of those bytes (a subset of ours),
and every token we allow beyond it must still spell a piece of the forced bytes.

The schemas are the corpus cases whose forms both engines write alike (no free-text strings,
where escapes differ, and no additional properties, where the key forms differ); past 4096
allowed ids both sides are compared by count and sum. Left out as well: numbers with two
exclusive bounds, where llguidance (1.9.1) refuses valid fractions ending in 0 ("0.50" for
0 < x < 1), which we allow.

Run: MYRIAD_GRAMMAR_TOOL=build/tests/grammar_tool build/venv/bin/python tests/python/test_grammar_llguidance.py
"""

import json
import os
import subprocess
import sys

import llguidance
import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.environ.get("MYRIAD_GRAMMAR_TOOL", os.path.join(REPO, "build", "tests", "grammar_tool"))
TOKENIZERS = os.environ.get("MYRIAD_TOKENIZER_DIR", os.path.join(REPO, "build", "tokenizers"))
DEEPSEEK = os.path.join(TOKENIZERS, "deepseek_v3")
SCHEMAS = os.path.join(REPO, "tests", "data", "schemas")

CASES = ["type_integer", "type_boolean", "type_null", "type_array_int_bool", "integer_-10_10",
         "integer_10_99", "integer_123_4567", "integer_-100_-50", "integer_0_None", "integer_None_100",
         "integer_exclusive", "integer_999_1001", "number_-1_1_00", "number_2_10_01", "type_number",
         "array_count_0_3", "array_count_3_6", "array_count_1_None", "array_count_2_2",
         "enum_strings", "enum_mixed", "enum_size_20", "enum_size_100", "const_object",
         "object_all_required", "object_nested", "ref_tree", "ref_linked_list", "nested_depth_07", "allof_bounds",
         "oneof_consts", "format_date", "format_uuid", "format_ipv4", "format_ipv6", "format_duration",
         "pattern_01", "pattern_08"]


@pytest.fixture(scope="module")
def tokenizer():
    return llguidance.LLTokenizer(os.path.join(DEEPSEEK, "tokenizer.json"))


@pytest.mark.parametrize("name", CASES)
def test_masks_agree_with_llguidance(name, tokenizer, tmp_path):
    with open(os.path.join(SCHEMAS, name + ".json"), encoding="utf-8") as f:
        schema = json.load(f)["schema"]
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(schema), encoding="utf-8")
    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        schema, defaults={"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"})
    r = subprocess.run([TOOL, "masks", str(schema_file), DEEPSEEK, "5", "4"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    steps = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(steps) >= 4
    n = tokenizer.vocab_size
    for step in steps:
        m = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        assert m.consume_tokens(step["ids"]), ("llguidance refuses our prefix",
                                               tokenizer.decode_str(step["ids"]), m.get_error())
        # Bit i of the bitmask (little-endian within each byte) allows token i.
        bits = np.unpackbits(np.frombuffer(bytes(m.compute_bitmask()), np.uint8), bitorder="little")
        theirs = np.flatnonzero(bits[:n]).tolist()
        where = tokenizer.decode_str(step["ids"])
        if "allowed" not in step:
            assert (len(theirs), sum(theirs)) == (step["count"], step["sum"]), where
            continue
        ours = step["allowed"]
        if theirs == ours:
            continue
        forced = bytes(m.compute_ff_bytes())
        only_ours = set(ours) - set(theirs)
        assert forced and set(theirs) <= set(ours), (
            where, "llguidance only:", tokenizer.dbg_tokens(sorted(set(theirs) - set(ours))[:20]),
            "ours only:", tokenizer.dbg_tokens(sorted(only_ours)[:20]))
        for t in only_ours:
            b = tokenizer.decode_bytes([t])
            assert forced.startswith(b) or b.startswith(forced), (where, forced, b)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
