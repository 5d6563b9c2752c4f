#!/usr/bin/env python3
"""Writes the JSON Schema corpus of the grammar tests into tests/data/schemas/ (one case a file).

A case is {"schema": S, "valid": [...], "invalid": [...]} or, for a schema the grammar must
refuse, {"schema": S, "error": KEYWORD}. "valid" documents are written compact and in schema
property order (the form the grammar generates), so the matcher must accept each; "invalid" ones
must be refused. tests/python/test_grammar_oracle.py checks every expectation against the
`jsonschema` package first, so a wrong expectation here fails the test instead of hiding a bug.

Sources: hand-written edge cases; cases in the manner of the JSON Schema test suite (one keyword
at a time, then in combination), generated below; the function parameters of every tool list in
tests/data/kimi_k25_tools/examples.json (real tool declarations from Moonshot's fixtures); tool
parameters written here in the shapes coding agents and MCP servers declare them (agent_*, mcp_*:
file reads, globs, todo lists, SQL, git, calendars, issue trackers, ...), with listed documents.

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

for f, ok, bad in [("date", ["2024-02-28", "1999-12-31", "2024-02-29", "2000-02-29", "0004-02-29"],
                    ["2024-13-01", "2023-02-29", "1900-02-29", "2024-02-30"]),
                   ("time", ["23:59:59Z", "08:30:00.25+02:00"], ["24:00:00Z"]),
                   ("date-time", ["2024-01-01T00:00:00Z", "2096-02-29T12:00:00Z"],
                    ["2024-01-01 00:00", "2100-02-29T12:00:00Z"]),
                   ("uuid", ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567"]),
                   ("email", ["a.b@example.com"], ["no-at-sign"]),
                   ("ipv4", ["192.168.0.1"], ["256.1.1.1"]),
                   ("ipv6", ["::1", "2001:db8::8a2e:370:7334", "::ffff:192.0.2.1", "fe80::",
                             "1:2:3:4:5:6:7:8"], ["1:2:3:4:5:6:7:8:9", "2001:db8:::1", "::g",
                                                  "::ffff:256.0.0.1"]),
                   ("duration", ["P1D", "P3Y6M4DT12H30M5S", "PT36H", "P4W", "PT0S"],
                    ["P", "PT", "1D", "P1DT", "P1H"]),
                   ("uri", ["https://example.com/a/b?c=d#e", "mailto:a@b.c", "urn:isbn:0451450523",
                            "file:///etc/hosts", "http://u:p@host:8080/p%20q"],
                    ["//example.com", "http://a b", "no-scheme", "http://x/%zz", "1http://x"])]:
    case(f"format_{f}", {"type": "string", "format": f}, ok, bad)
case("format_uri_in_tool", {"type": "object", "properties": {"url": {"type": "string", "format": "uri"},
                                                            "prompt": {"type": "string"}},
                            "required": ["url", "prompt"], "additionalProperties": False},
     [{"url": "https://docs.example.org/guide?x=1", "prompt": "summarize"}],
     [{"url": "docs.example.org", "prompt": "p"}, {"url": "https://a", "prompt": 1}])

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

# --- more keyword combinations (test-suite style) -------------------------------------------------
case("ref_mutual_recursion", {"$defs": {
    "expr": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/op"}]},
    "op": {"type": "object", "properties": {"op": {"enum": ["+", "*"]},
                                            "args": {"type": "array", "items": {"$ref": "#/$defs/expr"},
                                                     "minItems": 2, "maxItems": 3}},
           "required": ["op", "args"], "additionalProperties": False}}, "$ref": "#/$defs/expr"},
     [7, {"op": "+", "args": [1, 2]}, {"op": "*", "args": [{"op": "+", "args": [1, {"op": "*", "args": [2, 3]}]}, 4, 5]}],
     [{"op": "+", "args": [1]}, {"op": "-", "args": [1, 2]}, {"op": "+", "args": [1, [2]]}, 1.5])
case("ref_chain", {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"},
                             "c": {"type": "string", "maxLength": 3}},
                   "type": "array", "items": {"$ref": "#/$defs/a"}}, [[], ["abc", ""]], [["abcd"], [1]])
case("ref_properties_pointer", {"type": "object", "properties": {
    "a": {"type": "integer", "minimum": 3}, "b": {"$ref": "#/properties/a"}}, "additionalProperties": False},
     [{"a": 3, "b": 4}, {"b": 100}], [{"b": 2}, {"a": "3"}])
case("ref_percent_encoded", {"$defs": {"x y": {"const": "sp"}, "p%c": {"const": "pc"}}, "type": "array",
                             "prefixItems": [{"$ref": "#/$defs/x%20y"}, {"$ref": "#/$defs/p%25c"}],
                             "items": False}, [[], ["sp"], ["sp", "pc"]], [["pc"], ["sp", "pc", "sp"]])
case("ref_nullable_object", {"$defs": {"pt": {"type": "object", "properties": {"x": {"type": "number"},
                                                                               "y": {"type": "number"}},
                                              "required": ["x", "y"], "additionalProperties": False}},
                             "type": "object", "properties": {"from": {"$ref": "#/$defs/pt"},
                                                              "to": {"anyOf": [{"$ref": "#/$defs/pt"}, {"type": "null"}]}},
                             "required": ["from", "to"], "additionalProperties": False},
     [{"from": {"x": 0, "y": -2.5}, "to": None}, {"from": {"x": 1, "y": 2}, "to": {"x": 3e2, "y": 4}}],
     [{"from": None, "to": None}, {"from": {"x": 1}, "to": None}])
case("ref_deep_tree", {"$defs": {"t": {"type": "object", "properties": {
    "k": {"type": "string", "enum": ["leaf", "node"]},
    "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}, "maxItems": 2}},
    "required": ["k"], "additionalProperties": False}}, "$ref": "#/$defs/t"},
     [{"k": "node", "kids": [{"k": "node", "kids": [{"k": "node", "kids": [{"k": "node", "kids": [
         {"k": "node", "kids": [{"k": "leaf"}]}]}]}]}, {"k": "leaf"}]}],
     [{"k": "node", "kids": [{"k": "node", "kids": [{"k": "node", "kids": [{"k": "tree"}]}]}]},
      {"k": "node", "kids": [{"k": "leaf"}, {"k": "leaf"}, {"k": "leaf"}]}])
case("allof_ref_extend", {"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}},
                                             "required": ["id"]}},
                          "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"extra": {"type": "boolean"}}}]},
     [{"id": 1, "extra": True}, {"id": 1}], [{"extra": True}, {"id": 1, "extra": 1}])
case("allof_closed_and_open", {"allOf": [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "additionalProperties": False},
    {"properties": {"a": {"minimum": 0}}, "required": ["a"]}]},
     [{"a": 0}, {"a": 5, "b": "x"}], [{"a": -1}, {"b": "x"}, {"a": 1, "c": 2}])
case("array_tuple_exact", {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}, {"type": "string"}],
                           "items": False, "minItems": 3}, [[1, 2.5, "m"]], [[1, 2], [1, 2, "m", 3], [1, "2", "m"]])
case("array_prefix_then_schema_max", {"type": "array", "prefixItems": [{"enum": ["cmd"]}],
                                      "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
     [[], ["cmd"], ["cmd", "-v", "x"]], [["cmd", "-v", "x", "y"], ["run"], ["cmd", "toolong"]])
case("array_draft7_additional_schema", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                                        "items": [{"type": "string"}, {"type": "integer"}],
                                        "additionalItems": {"type": "boolean"}},
     [[], ["a", 1], ["a", 1, True, False]], [["a", 1, 2], [1]])
case("array_nullable_items", {"type": "array", "items": {"type": ["integer", "null"], "minimum": 0},
                              "minItems": 1, "maxItems": 4}, [[None], [0, None, 3]], [[], [-1], [1.5]])
case("enum_filtered_by_types", {"type": ["integer", "string"], "enum": [1, "a", 2.5, None, True, [1]]},
     [1, "a"], [2.5, None, True, [1]])
case("enum_numbers_typed", {"type": "number", "enum": [0, -1, 2.5, 1e3, "0"]}, [0, -1, 2.5], ["0", 3])
case("const_array", {"const": [1, "two", None, [3]]}, [[1, "two", None, [3]]], [[1, "two", None], [1, "two", None, [4]]])
case("const_null", {"const": None}, [None], [0, False, "null"])
case("const_unicode_string", {"const": "naïve \"quoted\"\n\u00e9"}, ["naïve \"quoted\"\n\u00e9"], ["naive"])
case("const_in_object", {"type": "object", "properties": {"version": {"const": 2},
                                                          "meta": {"const": {"source": "api", "tags": []}}},
                         "required": ["version", "meta"], "additionalProperties": False},
     [{"version": 2, "meta": {"source": "api", "tags": []}}],
     [{"version": 1, "meta": {"source": "api", "tags": []}}, {"version": 2, "meta": {"source": "api"}}])
case("anyof_required_differences", {"anyOf": [
    {"type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer", "minimum": 1}},
     "required": ["path", "line"], "additionalProperties": False},
    {"type": "object", "properties": {"path": {"type": "string"}, "symbol": {"type": "string"}},
     "required": ["symbol"], "additionalProperties": False}]},
     [{"path": "a.c", "line": 3}, {"symbol": "main"}, {"path": "a.c", "symbol": "main"}],
     [{"path": "a.c"}, {"path": "a.c", "line": 0}, {"line": 3, "symbol": "x"}])
case("anyof_nested", {"anyOf": [{"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                                {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "integer", "maximum": -1}]}]},
     [True, None, "a", -3], ["ab", 0, []])
case("oneof_scalar_or_list", {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1},
                                        {"type": "null"}]}, ["x", ["a", "b"], None], [[], 1, [1]])
case("type_object_or_null", {"type": ["object", "null"], "properties": {"a": {"type": "integer"}},
                             "required": ["a"], "additionalProperties": False},
     [None, {"a": 1}], [{}, {"a": 1, "b": 2}, 0])
case("object_required_meets_additional", {"type": "object", "properties": {"a": {"type": "string"}},
                                          "required": ["a", "n"], "additionalProperties": {"type": "integer"}},
     [{"a": "x", "n": 1}, {"a": "x", "n": 1, "m": 2}], [{"a": "x"}, {"a": "x", "n": "1"}, {"a": "x", "n": 1, "m": "2"}])
case("object_noop_keywords", {"type": "object", "title": "T", "description": "no-op keywords and annotations",
                              "minProperties": 0, "$comment": "c", "examples": [{"xs": [1]}],
                              "properties": {"xs": {"type": "array", "uniqueItems": False, "items": {"type": "integer"},
                                                    "default": [], "deprecated": True}},
                              "additionalProperties": False}, [{}, {"xs": [1, 1]}], [{"xs": ["1"]}, {"ys": []}])
case("integer_exclusive_fractional", {"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 9.5},
     [1, 9], [0, 10, 5.5])
case("integer_exclusive_negative", {"type": "integer", "exclusiveMinimum": -3.5, "exclusiveMaximum": -0.5},
     [-3, -1], [-4, 0])
case("integer_min_and_exclusive", {"type": "integer", "minimum": 2, "exclusiveMinimum": 4, "maximum": 10,
                                   "exclusiveMaximum": 8}, [5, 7], [4, 8, 2])
case("integer_draft4_exclusive", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
                                  "minimum": 0, "exclusiveMinimum": True, "maximum": 10, "exclusiveMaximum": True},
     [1, 9], [0, 10])
case("number_draft4_exclusive", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number",
                                 "minimum": 0, "exclusiveMinimum": True, "maximum": 5},
     [0.5, 5, 5.0], [0, 5.01, -1])
case("number_negative_exclusive", {"type": "number", "minimum": -2, "exclusiveMaximum": -1},
     [-2, -2.0, -1.5, -1.01], [-1, -1.0, -2.5, 0])
case("number_integer_bounds_mixed", {"type": ["number", "null"], "minimum": -1, "maximum": 1},
     [None, -1, 0.25, 1], [1.5, -1.5])
case("format_nullable_datetime_array", {"type": "array", "items": {"anyOf": [{"type": "string", "format": "date-time"},
                                                                            {"type": "null"}]}, "maxItems": 3},
     [["2024-06-01T12:00:00Z", None, "2024-06-01t12:00:00.5+05:30"]], [["2024-06-01"], ["x"]])
case("format_uuid_keys", {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
                                                           "parent": {"type": ["string", "null"], "format": "uuid"}},
                          "required": ["id", "parent"], "additionalProperties": False},
     [{"id": "00000000-0000-0000-0000-000000000000", "parent": None},
      {"id": "A987FBC9-4BED-3078-CF07-9141BA07C9F3", "parent": "a987fbc9-4bed-3078-cf07-9141ba07c9f3"}],
     [{"id": "not-a-uuid", "parent": None}, {"id": "00000000-0000-0000-0000-000000000000"}])
for i, (p, ok, bad) in enumerate([
        ("^(ab|a)c$", ["ac", "abc"], ["abbc", "c"]), ("^a*?b+?$", ["b", "aab"], ["a", "ba"]),
        ("^[\\-a]{2}$", ["-a", "aa"], ["ab", "-"]), ("^(a|)$", ["", "a"], ["aa"]),
        ("^[^a-z]$", ["é", "A"], ["a", "AB"]), ("^\\u00e9+x?$", ["é", "ééx"], ["e", "x"]),
        ("^x{0}y$", ["y"], ["xy"]), ("^v\\d+\\.\\d+\\.\\d+(-[a-z]+)?$", ["v1.2.3", "v10.0.0-rc"], ["1.2.3", "v1.2"]),
        ("^[A-Z][a-z]+(?: [A-Z][a-z]+)*$", ["Ada Lovelace"], ["ada", "Ada  L"]),
        ("^(?:[01]\\d|2[0-3]):[0-5]\\d$", ["09:30", "23:59"], ["24:00", "9:30"])]):
    case(f"pattern_{len(patterns) + i:02d}", {"type": "string", "pattern": p}, ok, bad)

# --- tool declarations in the shapes coding agents and MCP servers declare them -------------------
def tool_case(name, props, required, valid, invalid, **extra):
    case(f"mcp_{name}", {"type": "object", "properties": props, "required": required,
                         "additionalProperties": False, **extra}, valid, invalid)


D = "description"
tool_case("read_file", {"file_path": {"type": "string", D: "Absolute path of the file to read"},
                        "offset": {"type": "integer", "minimum": 1, D: "Line to start from"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 2000, D: "Lines to read"}},
          ["file_path"], [{"file_path": "/src/a.py"}, {"file_path": "/a", "offset": 10, "limit": 2000}],
          [{"offset": 1}, {"file_path": "/a", "limit": 0}, {"file_path": "/a", "offset": 1.5}, {"file_path": "/a", "lines": 3}])
tool_case("glob", {"pattern": {"type": "string", "minLength": 1, D: "Glob such as **/*.ts"},
                   "path": {"type": "string", D: "Directory to search (default: the working directory)"}},
          ["pattern"], [{"pattern": "**/*.rs"}, {"pattern": "*", "path": "/repo"}],
          [{"pattern": ""}, {"path": "/repo"}, {"pattern": 3}])
tool_case("web_fetch", {"url": {"type": "string", "pattern": "^https?://[^\\s/]+(/\\S*)?$", D: "URL to fetch"},
                        "prompt": {"type": "string", D: "What to extract from the page"},
                        "max_length": {"type": "integer", "minimum": 1, "maximum": 100000}},
          ["url", "prompt"], [{"url": "https://example.com/a?b=1", "prompt": "summarize"},
                              {"url": "http://x.org", "prompt": "", "max_length": 5000}],
          [{"url": "ftp://x.org", "prompt": "p"}, {"url": "https://a b", "prompt": "p"}, {"url": "https://x.org"}])
tool_case("todo_write", {"todos": {"type": "array", "minItems": 1, "items": {
    "type": "object", "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"}, "content": {"type": "string", "minLength": 1},
        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
        "priority": {"type": "string", "enum": ["high", "medium", "low"]}},
    "required": ["id", "content", "status"], "additionalProperties": False}}},
          ["todos"], [{"todos": [{"id": "1", "content": "write tests", "status": "in_progress", "priority": "high"},
                                 {"id": "2", "content": "x", "status": "pending"}]}],
          [{"todos": []}, {"todos": [{"id": "1", "content": "x", "status": "done"}]},
           {"todos": [{"id": "a", "content": "x", "status": "pending"}]}, {"todos": [{"id": "1", "content": "", "status": "pending"}]}])
tool_case("notebook_edit", {"notebook_path": {"type": "string"}, "cell_id": {"type": "string"},
                            "new_source": {"type": "string"},
                            "cell_type": {"type": "string", "enum": ["code", "markdown"]},
                            "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]}},
          ["notebook_path", "new_source"],
          [{"notebook_path": "/n.ipynb", "new_source": "print(1)"},
           {"notebook_path": "/n.ipynb", "cell_id": "c3", "new_source": "# T", "cell_type": "markdown", "edit_mode": "insert"}],
          [{"notebook_path": "/n.ipynb"}, {"notebook_path": "/n.ipynb", "new_source": "", "cell_type": "raw"},
           {"notebook_path": "/n.ipynb", "new_source": "", "edit_mode": "append"}])
tool_case("sql_query", {"database": {"type": "string", "enum": ["analytics", "billing"]},
                        "query": {"type": "string", "minLength": 1, D: "A single SELECT statement"},
                        "params": {"type": "array", "items": {"type": ["string", "number", "boolean", "null"]}},
                        "max_rows": {"type": "integer", "minimum": 1, "maximum": 10000}},
          ["database", "query"],
          [{"database": "billing", "query": "SELECT 1"},
           {"database": "analytics", "query": "SELECT * FROM t WHERE a = ? AND b = ?", "params": ["x", 2.5, None, True], "max_rows": 100}],
          [{"database": "prod", "query": "SELECT 1"}, {"database": "billing", "query": ""},
           {"database": "billing", "query": "q", "params": [[1]]}, {"database": "billing", "query": "q", "max_rows": 10001}])
tool_case("git_commit", {"message": {"type": "string", "minLength": 1, "maxLength": 200},
                         "files": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                         "amend": {"type": "boolean"},
                         "author": {"type": "object", "properties": {"name": {"type": "string"},
                                                                     "email": {"type": "string", "format": "email"}},
                                    "required": ["name", "email"], "additionalProperties": False}},
          ["message"],
          [{"message": "grammar: fix the key trie"}, {"message": "m", "files": ["a.c", "b.h"], "amend": False,
                                                       "author": {"name": "A. B.", "email": "ab@example.org"}}],
          [{"message": ""}, {"message": "m", "files": []}, {"message": "m", "author": {"name": "x", "email": "nope"}},
           {"message": "m", "amend": "yes"}])
tool_case("calendar_create_event", {
    "summary": {"type": "string", "minLength": 1}, "start": {"type": "string", "format": "date-time"},
    "end": {"type": "string", "format": "date-time"}, "all_day_date": {"type": ["string", "null"], "format": "date"},
    "attendees": {"type": "array", "maxItems": 10, "items": {
        "type": "object", "properties": {"email": {"type": "string", "format": "email"}, "optional": {"type": "boolean"}},
        "required": ["email"], "additionalProperties": False}},
    "reminders_minutes": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 40320}, "maxItems": 5},
    "visibility": {"enum": ["default", "public", "private"]}},
    ["summary", "start", "end"],
    [{"summary": "Standup", "start": "2025-03-10T09:00:00+01:00", "end": "2025-03-10T09:15:00+01:00"},
     {"summary": "Offsite", "start": "2025-06-01T00:00:00Z", "end": "2025-06-02T00:00:00Z", "all_day_date": "2025-06-01",
      "attendees": [{"email": "a@corp.example.com", "optional": True}], "reminders_minutes": [10, 1440], "visibility": "private"}],
    [{"summary": "x", "start": "2025-03-10 09:00", "end": "2025-03-10T09:15:00Z"},
     {"summary": "x", "start": "2025-03-10T09:00:00Z", "end": "2025-03-10T09:15:00Z", "reminders_minutes": [-5]},
     {"summary": "x", "start": "2025-03-10T09:00:00Z", "end": "2025-03-10T09:15:00Z", "attendees": [{"email": "x"}]},
     {"summary": "x", "start": "2025-03-10T09:00:00Z"}])
tool_case("github_create_issue", {
    "owner": {"type": "string", "pattern": "^[A-Za-z0-9-]+$"}, "repo": {"type": "string", "pattern": "^[A-Za-z0-9._-]+$"},
    "title": {"type": "string", "minLength": 1}, "body": {"type": "string"},
    "labels": {"type": "array", "items": {"type": "string"}}, "assignees": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
    "milestone": {"type": ["integer", "null"], "minimum": 1}},
    ["owner", "repo", "title"],
    [{"owner": "octo", "repo": "hello.world", "title": "Crash on start"},
     {"owner": "octo", "repo": "r", "title": "t", "body": "steps:\n1. run", "labels": ["bug", "p1"], "assignees": [],
      "milestone": None},
     {"owner": "octo", "repo": "r", "title": "t", "milestone": 3}],
    [{"owner": "octo cat", "repo": "r", "title": "t"}, {"owner": "o", "repo": "r", "title": "t", "milestone": 0},
     {"owner": "o", "repo": "r", "title": "t", "labels": "bug"}, {"owner": "o", "repo": "r", "title": ""}])
tool_case("github_list_issues", {
    "state": {"type": "string", "enum": ["open", "closed", "all"]},
    "sort": {"type": "string", "enum": ["created", "updated", "comments"]},
    "direction": {"type": "string", "enum": ["asc", "desc"]}, "since": {"type": "string", "format": "date-time"},
    "per_page": {"type": "integer", "minimum": 1, "maximum": 100}, "page": {"type": "integer", "minimum": 1}},
    [], [{}, {"state": "all", "sort": "updated", "direction": "desc", "since": "2024-01-01T00:00:00Z", "per_page": 100, "page": 2}],
    [{"state": "merged"}, {"per_page": 101}, {"page": 0}, {"since": "yesterday"}])
tool_case("send_email", {"to": {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1, "maxItems": 20},
                         "cc": {"type": "array", "items": {"type": "string", "format": "email"}},
                         "subject": {"type": "string", "maxLength": 120}, "body": {"type": "string"},
                         "html": {"type": "boolean"}},
          ["to", "subject", "body"],
          [{"to": ["ops@example.com"], "subject": "Report", "body": "All green."},
           {"to": ["a@b.io", "c.d@e.co.uk"], "cc": [], "subject": "", "body": "", "html": True}],
          [{"to": [], "subject": "s", "body": "b"}, {"to": ["not an email"], "subject": "s", "body": "b"},
           {"to": ["a@b.io"], "subject": "s"}])
tool_case("web_search", {"query": {"type": "string", "minLength": 1, "maxLength": 400},
                         "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
                         "recency": {"type": ["string", "null"], "enum": ["day", "week", "month", "year", None]},
                         "domains": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9.-]+\\.[a-z]{2,}$"}}},
          ["query", "recency"],
          [{"query": "llguidance", "recency": None}, {"query": "q", "max_results": 5, "recency": "week", "domains": ["docs.rs", "github.com"]}],
          [{"query": "q"}, {"query": "q", "recency": "hour"}, {"query": "q", "recency": None, "domains": ["localhost"]},
           {"query": "", "recency": None}])
tool_case("multi_edit", {"file_path": {"type": "string"}, "edits": {"type": "array", "minItems": 1, "items": {
    "type": "object", "properties": {"old_string": {"type": "string"}, "new_string": {"type": "string"},
                                     "replace_all": {"type": "boolean", "default": False}},
    "required": ["old_string", "new_string"], "additionalProperties": False}}},
          ["file_path", "edits"],
          [{"file_path": "/a.c", "edits": [{"old_string": "int", "new_string": "long", "replace_all": True},
                                           {"old_string": "\t", "new_string": "    "}]}],
          [{"file_path": "/a.c", "edits": []}, {"file_path": "/a.c", "edits": [{"old_string": "x"}]},
           {"file_path": "/a.c", "edits": [{"old_string": "x", "new_string": "y", "count": 2}]}])
tool_case("run_command", {"command": {"type": "string", "minLength": 1}, "cwd": {"type": ["string", "null"]},
                          "env": {"type": "object", "additionalProperties": {"type": "string"}},
                          "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
                          "background": {"type": "boolean"}},
          ["command", "cwd"],
          [{"command": "ls -la", "cwd": None}, {"command": "make", "cwd": "/repo", "env": {"CC": "clang", "V": "1"},
                                                 "timeout_s": 0.5, "background": False}],
          [{"command": "ls"}, {"command": "ls", "cwd": None, "timeout_s": 0}, {"command": "ls", "cwd": None, "env": {"N": 1}},
           {"command": "ls", "cwd": None, "timeout_s": 601}])
tool_case("http_request", {"method": {"type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE"]},
                           "url": {"type": "string", "pattern": "^https://"},
                           "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                           "body": {"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]}},
          ["method", "url"],
          [{"method": "GET", "url": "https://api.example.com/v1/items"},
           {"method": "POST", "url": "https://h/x", "headers": {"Content-Type": "application/json"}, "body": {"a": [1]}},
           {"method": "DELETE", "url": "https://h/x/1", "body": None}],
          [{"method": "get", "url": "https://h"}, {"method": "GET", "url": "http://h"},
           {"method": "GET", "url": "https://h", "body": 1}])
tool_case("k8s_scale", {"namespace": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "default": "default"},
                        "deployment": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 100}},
          ["deployment", "replicas"],
          [{"deployment": "web", "replicas": 0}, {"namespace": "prod-eu", "deployment": "api-v2", "replicas": 12}],
          [{"deployment": "Web", "replicas": 1}, {"deployment": "web-", "replicas": 1}, {"deployment": "web", "replicas": 101},
           {"deployment": "web", "replicas": -1}])
tool_case("weather_forecast", {"latitude": {"type": "number", "minimum": -90, "maximum": 90},
                               "longitude": {"type": "number", "minimum": -180, "maximum": 180},
                               "days": {"type": "integer", "minimum": 1, "maximum": 16},
                               "units": {"type": "string", "enum": ["metric", "imperial"]}},
          ["latitude", "longitude"],
          [{"latitude": 48.8566, "longitude": 2.3522}, {"latitude": -90, "longitude": 180, "days": 16, "units": "imperial"}],
          [{"latitude": 91, "longitude": 0}, {"latitude": 0, "longitude": -180.5}, {"latitude": 0, "longitude": 0, "days": 0},
           {"latitude": "48.8", "longitude": 2}])
tool_case("memory_create_entities", {"entities": {"type": "array", "items": {
    "type": "object", "properties": {"name": {"type": "string"}, "entityType": {"type": "string"},
                                     "observations": {"type": "array", "items": {"type": "string"}}},
    "required": ["name", "entityType", "observations"], "additionalProperties": False}}},
          ["entities"],
          [{"entities": []}, {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote notes on the engine"]}]}],
          [{"entities": [{"name": "Ada", "entityType": "person"}]}, {"entities": [{"name": "A", "entityType": "p", "observations": [1]}]}])
tool_case("slack_post_message", {"channel": {"type": "string", "pattern": "^[CDG][A-Z0-9]{8,10}$"},
                                 "text": {"type": "string", "minLength": 1, "maxLength": 4000},
                                 "thread_ts": {"anyOf": [{"type": "string", "pattern": "^[0-9]+\\.[0-9]{6}$"}, {"type": "null"}]},
                                 "unfurl_links": {"type": "boolean"}},
          ["channel", "text", "thread_ts"],
          [{"channel": "C01234ABCD", "text": "deploy done", "thread_ts": None},
           {"channel": "D12345678", "text": "ok", "thread_ts": "1712345678.123456", "unfurl_links": False}],
          [{"channel": "#general", "text": "x", "thread_ts": None}, {"channel": "C01234ABCD", "text": "", "thread_ts": None},
           {"channel": "C01234ABCD", "text": "x", "thread_ts": "1712345678"}])
tool_case("jira_transition", {"issue_key": {"type": "string", "pattern": "^[A-Z][A-Z0-9]+-[1-9][0-9]*$"},
                              "transition": {"type": "string", "enum": ["To Do", "In Progress", "Done"]},
                              "assignee": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
                              "comment": {"type": "string"}},
          ["issue_key", "transition", "assignee"],
          [{"issue_key": "PROJ-42", "transition": "In Progress", "assignee": "jdoe"},
           {"issue_key": "AB1-7", "transition": "Done", "assignee": None, "comment": "fixed in #12"}],
          [{"issue_key": "proj-42", "transition": "Done", "assignee": None}, {"issue_key": "PROJ-0", "transition": "Done", "assignee": None},
           {"issue_key": "PROJ-1", "transition": "Closed", "assignee": None}, {"issue_key": "PROJ-1", "transition": "Done", "assignee": ""}])
tool_case("search_files_by_date", {"query": {"type": "string"}, "modified_after": {"type": "string", "format": "date"},
                                   "modified_before": {"type": "string", "format": "date"},
                                   "file_types": {"type": "array", "items": {"enum": ["pdf", "docx", "txt", "md"]}, "uniqueItems": False}},
          ["query"],
          [{"query": "invoice"}, {"query": "q", "modified_after": "2024-01-31", "modified_before": "2024-12-01", "file_types": ["pdf", "md"]}],
          [{"query": "q", "modified_after": "2024-02-30"}, {"query": "q", "modified_after": "01/02/2024"},
           {"query": "q", "file_types": ["exe"]}])
tool_case("get_order", {"order_id": {"type": "string", "format": "uuid"},
                        "include": {"type": "array", "items": {"type": "string", "enum": ["items", "customer", "payments"]}, "maxItems": 3}},
          ["order_id"], [{"order_id": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "include": ["items", "payments"]}],
          [{"order_id": "3fa85f64"}, {"order_id": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "include": ["refunds"]}])
tool_case("ip_lookup", {"ip": {"type": "string", "format": "ipv4"}, "fields": {"type": "array", "items": {"type": "string"}}},
          ["ip"], [{"ip": "8.8.8.8"}, {"ip": "10.0.0.1", "fields": ["asn", "country"]}],
          [{"ip": "8.8.8"}, {"ip": "300.1.1.1"}, {"ip": "8.8.8.8", "fields": "asn"}])
tool_case("set_reminder", {"text": {"type": "string", "minLength": 1}, "at": {"type": "string", "format": "time"},
                           "days": {"type": "array", "items": {"enum": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]},
                                    "minItems": 1, "maxItems": 7}},
          ["text", "at"],
          [{"text": "stretch", "at": "15:00:00Z"}, {"text": "standup", "at": "09:00:00+02:00", "days": ["mon", "wed", "fri"]}],
          [{"text": "x", "at": "15:00"}, {"text": "x", "at": "25:00:00Z"}, {"text": "x", "at": "15:00:00Z", "days": []}])
tool_case("create_pull_request", {
    "title": {"type": "string", "minLength": 1}, "head": {"type": "string"}, "base": {"type": "string"},
    "draft": {"type": "boolean"}, "reviewers": {"type": "array", "items": {"type": "string"}, "maxItems": 15},
    "merge_method": {"type": ["string", "null"], "enum": ["merge", "squash", "rebase", None]}},
    ["title", "head", "base"],
    [{"title": "Add corpus", "head": "wip/schemas", "base": "main"},
     {"title": "t", "head": "h", "base": "b", "draft": True, "reviewers": ["octocat"], "merge_method": None}],
    [{"title": "t", "head": "h"}, {"title": "t", "head": "h", "base": "b", "merge_method": "ff"},
     {"title": "t", "head": "h", "base": "b", "draft": None}])

# More schemas the grammar must refuse (with the keyword its 400 names).
case("unsupported_format_uri_reference", {"type": "object", "properties": {
    "url": {"type": "string", "format": "uri-reference"}}, "required": ["url"]}, error="format")
case("unsupported_format_idn_hostname", {"type": "string", "format": "idn-hostname"}, error="format")
case("unsupported_word_boundary", {"type": "string", "pattern": "\\bword\\b"}, error="pattern")
case("unsupported_allof_two_patterns", {"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "b$"}]}, error="pattern")
case("unsupported_oneof_discriminated", {"oneOf": [
    {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
    {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}]}, error="oneOf")
case("unsupported_const_with_bound", {"type": "integer", "const": 3, "minimum": 1}, error="minimum")
case("unsupported_anchor_ref", {"$defs": {"a": {"$anchor": "x", "type": "string"}}, "$ref": "#x"}, error="anchors")
case("unsupported_dynamic_ref", {"$dynamicRef": "#meta"}, error="$dynamicRef")
case("unsupported_format_with_length", {"type": "string", "format": "email", "maxLength": 64}, error="maxLength")


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for name, c in cases.items():
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(c, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print(f"{len(cases)} cases in {OUT}")
