#!/usr/bin/env python3
"""Writes the JSON Schema corpus of the grammar tests into tests/data/schemas/ (one case a file).

A case is {"schema": S, "valid": [...], "invalid": [...]} or, for a schema the grammar must
refuse, {"schema": S, "error": KEYWORD}. "valid" documents are written compact and in schema
property order (the form the grammar generates), so the matcher must accept each; "invalid" ones
must be refused. tests/python/test_grammar_oracle.py checks every expectation against the
`jsonschema` package first, so a wrong expectation here fails the test instead of hiding a bug.

Sources: hand-written edge cases; cases in the manner of the JSON Schema test suite (one keyword
at a time, then in combination), generated below; the function parameters of every tool list in
tests/data/kimi_k25_tools/examples.json (real tool declarations from Moonshot's fixtures).

Run: python3 tools/make_schema_corpus.py
"""

import json
import os
import shutil

import jsonschema

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "data", "schemas")

cases = {}


def case(name, schema, valid=(), invalid=(), error=None):
    assert name not in cases, name
    c = {"schema": schema}
    if error:
        c["error"] = error
    else:
        c["valid"] = list(valid)
        c["invalid"] = list(invalid)
    cases[name] = c


# --- one keyword at a time (test-suite style) ---------------------------------------------
for t, ok, bad in [("null", [None], [0, "", False]), ("boolean", [True, False], [0, None]),
                   ("string", ["", "a"], [1, None]), ("integer", [0, -7, 12], [1.5, "1"]),
                   ("number", [0, 1.5, -2e3], ["1", None]), ("array", [[], [1, "a"]], [{}]),
                   ("object", [{}, {"a": 1}], [[], "x"])]:
    case(f"type_{t}", {"type": t}, ok, bad)
case("type_array_string_null", {"type": ["string", "null"]}, ["x", None], [1, []])
case("type_array_int_bool", {"type": ["integer", "boolean"]}, [3, True], [1.5, "x"])
case("true_schema", True, [1, "a", None, {"k": [1]}], [])
case("empty_schema", {}, [1, "a", [None]], [])

for lo, hi in [(0, 0), (0, 1), (1, 1), (2, 5), (3, None), (None, 4), (10, 12), (0, 30)]:
    s = {"type": "string"}
    if lo is not None:
        s["minLength"] = lo
    if hi is not None:
        s["maxLength"] = hi
    ok = ["a" * (lo or 0)] + (["é" * hi] if hi else [])
    bad = (["a" * (lo - 1)] if lo else []) + (["a" * (hi + 1)] if hi is not None else [])
    case(f"string_length_{lo}_{hi}", s, ok, bad)

patterns = [
    ("^[a-z]+$", ["abc"], ["", "aB"]), ("^\\d{3}-\\d{4}$", ["555-1234"], ["5551234"]),
    ("^(foo|bar)+$", ["foobar"], ["fo"]), ("ab", ["xaby"], ["ba"]), ("^a", ["abc"], ["ba"]),
    ("z$", ["xyz"], ["zx"]), ("^[^\"\\\\]*$", ["plain"], ["a\"b"]),
    ("^\\w+@\\w+\\.com$", ["a@b.com"], ["a@b.org"]), ("^[A-Z]{2}[0-9]{2,4}$", ["AB12"], ["AB1"]),
    ("^https?://[a-z.]+(/[a-z]*)*$", ["http://a.b/c"], ["ftp://a"]),
    ("^\\s*$", ["", "  "], ["a"]), ("^.{2}$", ["ab", "é!"], ["abc"]),
    ("^[\\u00e0-\\u00ff]+$", ["éè"], ["e"]), ("^(a|b)?c*$", ["", "bccc"], ["ab"]),
    ("^[0-9a-f]{8}$", ["deadbeef"], ["DEADBEEF"]), ("^-?[0-9]+(\\.[0-9]+)?$", ["-1.5"], ["1."]),
    ("^\\$[0-9]+$", ["$5"], ["5"]), ("^a{2,}$", ["aaa"], ["a"]), ("^(?:x|y){1,3}$", ["xyx"], ["xyxy"]),
    ("^[\\w.-]+$", ["a.b-c_d"], ["a b"]), ("^\\S+$", ["ab"], ["a b"]), ("^[a-c\\d]+$", ["a1c"], ["d"]),
    ("^\\t\\n$", ["\t\n"], ["tn"]), ("^\\\\$", ["\\"], ["/"]), ("^\\.\\*\\+$", [".*+"], ["a"]),
]
for i, (p, ok, bad) in enumerate(patterns):
    case(f"pattern_{i:02d}", {"type": "string", "pattern": p}, ok, bad)

for f, ok, bad in [("date", ["2024-02-28", "1999-12-31"], ["2024-13-01"]),
                   ("time", ["23:59:59Z", "08:30:00.25+02:00"], ["24:00:00Z"]),
                   ("date-time", ["2024-01-01T00:00:00Z"], ["2024-01-01 00:00"]),
                   ("uuid", ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567"]),
                   ("email", ["a.b@example.com"], ["no-at-sign"]),
                   ("ipv4", ["192.168.0.1"], ["256.1.1.1"])]:
    case(f"format_{f}", {"type": "string", "format": f}, ok, bad)

int_bounds = [(0, None), (1, None), (-5, None), (None, 0), (None, -1), (None, 100), (0, 9),
              (10, 99), (-10, 10), (-100, -50), (7, 7), (0, 1000000), (123, 4567), (-1, 0),
              (999, 1001), (None, None)]
for lo, hi in int_bounds:
    s = {"type": "integer"}
    if lo is not None:
        s["minimum"] = lo
    if hi is not None:
        s["maximum"] = hi
    ok = [v for v in [lo, hi, 0] if v is not None and (lo is None or v >= lo) and (hi is None or v <= hi)]
    bad = ([lo - 1] if lo is not None else []) + ([hi + 1] if hi is not None else [])
    case(f"integer_{lo}_{hi}", s, ok, bad)
case("integer_exclusive", {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}, [1, 9], [0, 10])
case("integer_fractional_bounds", {"type": "integer", "minimum": 0.5, "maximum": 3.5}, [1, 3], [0, 4])

for lo, hi, exlo, exhi in [(0, None, False, False), (None, 0, False, True), (-1, 1, False, False),
                           (0, 1, True, True), (2, 10, False, True), (-10, -2, True, False),
                           (100, None, True, False), (None, 5, False, False), (-3, 3, True, True),
                           (0, 0, False, False)]:
    s = {"type": "number"}
    if lo is not None:
        s["exclusiveMinimum" if exlo else "minimum"] = lo
    if hi is not None:
        s["exclusiveMaximum" if exhi else "maximum"] = hi
    bad = ([lo - 0.5] if lo is not None else []) + ([hi + 0.5] if hi is not None else [])
    ok = [] if lo is None or exlo else [lo]
    case(f"number_{lo}_{hi}_{int(exlo)}{int(exhi)}", s, ok, bad)

for lo, hi in [(0, 0), (1, None), (0, 3), (2, 2), (None, 1), (3, 6)]:
    s = {"type": "array", "items": {"type": "integer"}}
    if lo is not None:
        s["minItems"] = lo
    if hi is not None:
        s["maxItems"] = hi
    ok = [[1] * (lo or 0)]
    bad = ([[1] * (lo - 1)] if lo else []) + ([[1] * (hi + 1)] if hi is not None else [])
    case(f"array_count_{lo}_{hi}", s, ok, bad)
case("array_prefix_open", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}]},
     [[], ["a"], ["a", True, 3]], [[1], ["a", 1]])
case("array_prefix_closed", {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
     [[], ["a"]], [["a", "b"]])
case("array_prefix_items", {"type": "array", "prefixItems": [{"const": 1}],
                            "items": {"type": "string"}, "minItems": 2}, [[1, "a"]], [[1], [1, 2]])
case("array_draft7_tuple", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                            "items": [{"type": "integer"}], "additionalItems": False}, [[1]], [[1, 2]])
case("array_of_arrays", {"type": "array", "items": {"type": "array", "items": {"type": "null"},
                                                    "maxItems": 2}}, [[[None], []]], [[[None] * 3]])
case("array_items_false", {"type": "array", "items": False}, [[]], [[1]])

# --- objects -------------------------------------------------------------------------------
case("object_required_only", {"type": "object", "required": ["a"]}, [{"a": 1}], [{}])
case("object_closed", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                       "additionalProperties": False}, [{}, {"a": 1}, {"a": 1, "b": "x"}, {"b": "x"}],
     [{"c": 1}, {"a": "x"}])
case("object_all_required", {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                             "required": ["x", "y"], "additionalProperties": False},
     [{"x": 1, "y": 2.5}], [{"x": 1}, {"y": 1}])
case("object_additional_schema", {"type": "object", "properties": {"id": {"type": "integer"}},
                                  "additionalProperties": {"type": "string"}},
     [{"id": 1, "name": "x"}, {"other": "y"}], [{"id": 1, "n": 2}])
case("object_open", {"type": "object", "properties": {"a": {"type": "boolean"}}},
     [{"a": True}, {"a": False, "zz": [1, {"q": None}]}], [{"a": 1}])
case("object_unicode_keys", {"type": "object", "properties": {"名前": {"type": "string"},
                                                              "a\"b": {"type": "integer"}},
                             "required": ["名前"], "additionalProperties": False},
     [{"名前": "x", "a\"b": 1}], [{"a\"b": 1}])
case("object_empty_properties", {"type": "object", "properties": {}, "additionalProperties": False},
     [{}], [{"a": 1}])
case("object_false_property", {"type": "object", "properties": {"a": False, "b": {"type": "null"}}},
     [{"b": None}], [{"a": 1}])
case("object_nested", {"type": "object", "properties": {"outer": {"type": "object", "properties": {
    "inner": {"type": "array", "items": {"type": "object", "properties": {"v": {"enum": [1, 2]}},
                                         "required": ["v"], "additionalProperties": False}}},
    "required": ["inner"], "additionalProperties": False}}, "required": ["outer"],
    "additionalProperties": False}, [{"outer": {"inner": [{"v": 1}, {"v": 2}]}}], [{"outer": {"inner": [{"v": 3}]}}])
for n in range(1, 9):
    props = {f"p{i}": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}][i % 3] for i in range(n)}
    req = [f"p{i}" for i in range(n) if i % 2 == 0]
    doc = {f"p{i}": ["s", 1, True][i % 3] for i in range(n)}
    case(f"object_mixed_required_{n}", {"type": "object", "properties": props, "required": req,
                                        "additionalProperties": False},
         [doc, {k: doc[k] for k in req}], [{f"p{n}": 1}])

# --- enum, const, combinators ----------------------------------------------------------------
case("enum_strings", {"enum": ["red", "green", "blue"]}, ["red"], ["Red"])
case("enum_mixed", {"enum": [1, "1", None, [1], {"a": 1}, True]}, [1, "1", None, [1], {"a": 1}], [2, False])
case("enum_typed", {"type": "string", "enum": ["a", 1]}, ["a"], [1])
case("enum_escapes", {"enum": ["line\nbreak", "quote\"", "tab\t", "é"]}, ["line\nbreak", "é"], ["x"])
case("const_object", {"const": {"k": [1, 2], "b": None}}, [{"k": [1, 2], "b": None}], [{"k": [1]}])
case("const_number", {"const": 2.5}, [2.5], [2])
case("anyof_types", {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]},
     ["ab", 10], ["abc", 9])
case("anyof_objects", {"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
                                  "required": ["a"], "additionalProperties": False},
                                 {"type": "object", "properties": {"b": {"type": "string"}},
                                  "required": ["b"], "additionalProperties": False}]},
     [{"a": 1}, {"b": "x"}], [{"c": 1}])
case("anyof_with_siblings", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                             "additionalProperties": False, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
     [{"a": 1}, {"b": 2}, {"a": 1, "b": 2}], [{}])
case("oneof_disjoint_types", {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
     ["x", 1, None], [1.5])
case("oneof_consts", {"oneOf": [{"const": "a"}, {"const": "b"}]}, ["a", "b"], ["c"])
case("allof_bounds", {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 10}, {"minimum": 3}]},
     [3, 10], [2, 11])
case("allof_objects", {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                                 {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
     [{"a": "x", "b": 1}], [{"a": "x"}])
case("allof_enums", {"allOf": [{"enum": [1, 2, 3]}, {"enum": [2, 3, 4]}]}, [2, 3], [1, 4])
case("allof_strings", {"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 3}]}, ["ab"], ["a", "abcd"])
case("nullable_via_anyof", {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
     ["2020-01-01", None], ["x"])

# --- $ref and recursion ------------------------------------------------------------------------
case("ref_defs", {"$defs": {"pos": {"type": "integer", "minimum": 1}},
                  "type": "object", "properties": {"a": {"$ref": "#/$defs/pos"}, "b": {"$ref": "#/$defs/pos"}},
                  "additionalProperties": False}, [{"a": 1, "b": 2}], [{"a": 0}])
case("ref_definitions", {"definitions": {"s": {"type": "string"}}, "type": "array", "items": {"$ref": "#/definitions/s"}},
     [["a", "b"]], [[1]])
case("ref_tree", {"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
                                                                      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                                     "required": ["value"], "additionalProperties": False}},
                  "$ref": "#/$defs/node"},
     [{"value": 1, "children": [{"value": 2, "children": []}]}], [{"value": 1, "children": [{}]}])
case("ref_root_recursion", {"type": "object", "properties": {"name": {"type": "string"},
                                                             "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
                            "required": ["name", "next"], "additionalProperties": False},
     [{"name": "a", "next": {"name": "b", "next": None}}], [{"name": "a"}])
case("ref_linked_list", {"$defs": {"list": {"anyOf": [{"type": "null"}, {"type": "array", "prefixItems": [
    {"type": "integer"}, {"$ref": "#/$defs/list"}], "items": False, "minItems": 2}]}}, "$ref": "#/$defs/list"},
     [None, [1, None], [1, [2, None]]], [[1]])
case("ref_json_value", {"$defs": {"v": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "array", "items": {"$ref": "#/$defs/v"}}]}},
                        "$ref": "#/$defs/v"}, ["x", [1, ["y"]]], [None])
case("ref_with_sibling", {"$defs": {"o": {"type": "object", "properties": {"a": {"type": "integer"}}}},
                          "$ref": "#/$defs/o", "required": ["a"]}, [{"a": 1}], [{}])
case("ref_pointer_escape", {"$defs": {"a/b": {"const": 1}, "c~d": {"const": 2}},
                            "type": "array", "prefixItems": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"}],
                            "items": False, "minItems": 2}, [[1, 2]], [[2, 1]])

for d in range(1, 11):
    inner, doc = {"type": "integer", "maximum": d}, d
    for level in range(d):
        if level % 2:
            inner, doc = {"type": "array", "items": inner, "minItems": 1, "maxItems": 2}, [doc]
        else:
            inner, doc = {"type": "object", "properties": {f"l{level}": inner}, "required": [f"l{level}"],
                          "additionalProperties": False}, {f"l{level}": doc}
    case(f"nested_depth_{d:02d}", inner, [doc], [d + 1])
for n in [1, 2, 5, 20, 100]:
    values = [f"v{i}" for i in range(n)]
    case(f"enum_size_{n}", {"type": "object", "properties": {"choice": {"enum": values}},
                            "required": ["choice"], "additionalProperties": False},
         [{"choice": values[-1]}], [{"choice": f"v{n}"}])
for lo, hi in [(1, 3), (0, 8), (5, 5), (2, 40), (0, 1)]:
    case(f"object_string_lengths_{lo}_{hi}", {"type": "object", "properties": {
        "s": {"type": "string", "minLength": lo, "maxLength": hi}, "t": {"type": "string"}},
        "required": ["s"], "additionalProperties": False}, [{"s": "x" * lo}], [{"s": "x" * (hi + 1)}])

# --- unsupported: a clear error, never a looser grammar ----------------------------------------
for kw, val in [("not", {"type": "null"}), ("uniqueItems", True), ("patternProperties", {"^a": {}}),
                ("if", {"type": "string"}), ("multipleOf", 2), ("contains", {"type": "integer"}),
                ("propertyNames", {"maxLength": 3}), ("dependentRequired", {"a": ["b"]}),
                ("minProperties", 1), ("maxProperties", 2), ("unevaluatedProperties", False),
                ("dependentSchemas", {"a": {}}), ("minContains", 1)]:
    case(f"unsupported_{kw}", {"type": "object", kw: val}, error=kw)
case("unsupported_remote_ref", {"$ref": "https://example.com/s.json"}, error="$ref")
case("unsupported_lookahead", {"type": "string", "pattern": "^(?=a)"}, error="pattern")
case("unsupported_backreference", {"type": "string", "pattern": "(a)\\1"}, error="pattern")
case("unsupported_format", {"type": "string", "format": "hostname"}, error="format")
case("unsupported_pattern_and_length", {"type": "string", "pattern": "a", "maxLength": 3}, error="maxLength")
case("unsupported_oneof_overlap", {"oneOf": [{"type": "integer"}, {"type": "number"}]}, error="oneOf")
case("unsupported_number_fraction_bound", {"type": "number", "minimum": 0.5}, error="minimum")
case("unsupported_left_recursion", {"anyOf": [{"$ref": "#"}, {"type": "null"}]}, error="recurses")

# --- real tool declarations (function parameters) ------------------------------------------------
examples = json.load(open(os.path.join(REPO, "tests", "data", "kimi_k25_tools", "examples.json")))
seen = set()
for ex in examples["encoder"]:
    try:
        tools = json.loads(ex["input"])
    except (ValueError, TypeError):
        continue
    for t in tools if isinstance(tools, list) else []:
        fn = t.get("function", {}) if isinstance(t, dict) else {}
        params = fn.get("parameters")
        if not isinstance(params, dict):
            continue
        key = json.dumps(params, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        name = f"tool_{ex['id']}_{fn.get('name', 'fn')}"
        try:
            jsonschema.validators.validator_for(params).check_schema(params)
        except jsonschema.exceptions.SchemaError as e:
            # Not a valid JSON Schema (the fixtures test the encoder on such input): the grammar
            # must refuse it, naming the keyword.
            case(name, params, error=str(list(e.path)[-1]))
            continue
        case(name, params)

# Agent tools in the shape coding agents declare them (written here, OpenAI strict style).
agent_tools = {
    "read_file": {"path": {"type": "string"}, "offset": {"type": ["integer", "null"], "minimum": 0},
                  "limit": {"type": ["integer", "null"], "minimum": 1}},
    "edit_file": {"path": {"type": "string"}, "old_string": {"type": "string"},
                  "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}},
    "bash": {"command": {"type": "string"}, "timeout_ms": {"type": ["integer", "null"], "maximum": 600000},
             "description": {"type": "string", "maxLength": 80}},
    "grep": {"pattern": {"type": "string"}, "path": {"type": ["string", "null"]},
             "output_mode": {"enum": ["content", "files_with_matches", "count"]},
             "-i": {"type": "boolean"}, "head_limit": {"type": ["integer", "null"]}},
    "todo_write": {"todos": {"type": "array", "items": {"type": "object", "properties": {
        "content": {"type": "string", "minLength": 1}, "status": {"enum": ["pending", "in_progress", "completed"]},
        "id": {"type": "string"}}, "required": ["content", "status", "id"], "additionalProperties": False}}},
    "web_fetch": {"url": {"type": "string", "pattern": "^https?://"}, "prompt": {"type": "string"}},
    "get_weather": {"location": {"type": "string"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", None]}},
    "create_event": {"title": {"type": "string"}, "start": {"type": "string", "format": "date-time"},
                     "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 5}},
}
for name, props in agent_tools.items():
    case(f"agent_{name}", {"type": "object", "properties": props, "required": list(props),
                           "additionalProperties": False})
    case(f"agent_{name}_optional", {"type": "object", "properties": props, "required": list(props)[:1]})


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for name, c in cases.items():
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(c, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print(f"{len(cases)} cases in {OUT}")
