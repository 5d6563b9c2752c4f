#!/usr/bin/env python3
"""Extracts the worked examples of ../shared/docs/kimi-k25-tools.md into
tests/data/kimi_k25_tools/examples.json, so that no input or expected output is typed by hand:

* "encoder": S1-S13 (§3.1, the public golden fixtures) and D1-D12 (§3.2), each with the input
  JSON text verbatim, whether the encoder gets it key-sorted (D6b, D7b: "the encoder receives
  the recursively key-sorted version") and the expected text (the markdown block plus the final
  newline the document says every output ends with). The document also says that for the
  tokenizer path only D6/D7 change under the key sort: every other example is emitted a second
  time as a sorted variant with the same expected text.
* "errors": the rows of the §2.8 table, each turned into a one-tool list (the row's fragment
  inside a root object `{"type":"object","properties":...}`), with the exception text.
* "prompts": P1-P4 (§3.4): the tools, the messages, `thinking` (false where the heading says
  `thinking=False`, else left out) and the rendered prompt (the Python string literal, read with
  ast.literal_eval).

Run: python3 tools/extract_kimi_ts_examples.py [path/to/kimi-k25-tools.md]
"""

import ast
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DOC = os.path.join(os.path.dirname(REPO), "shared", "docs", "kimi-k25-tools.md")
OUT = os.path.join(REPO, "tests", "data", "kimi_k25_tools", "examples.json")

HEADING = re.compile(r"^#### ([SDP]\d+[ab]?)\. (.*)$")
FENCE = re.compile(r"^```(\w*)\s*$")
SORT_RULE = "only D6/D7 change, shown as the \"b\" variants"


def sections(lines):
    """(id, title, body lines) for every '#### S1.'-style heading, body up to the next heading."""
    out = []
    for i, line in enumerate(lines):
        m = HEADING.match(line)
        if not m:
            continue
        end, in_block = i + 1, False
        while end < len(lines) and (in_block or not lines[end].startswith("#")):
            in_block ^= lines[end].startswith("```")  # "# Tools" inside a block is no heading
            end += 1
        out.append((m.group(1), m.group(2), lines[i + 1:end]))
    return out


def blocks(body):
    """[(language, text, prose before the block)] of the fenced blocks in `body`."""
    out, prose, i = [], [], 0
    while i < len(body):
        m = FENCE.match(body[i])
        if not m:
            prose.append(body[i])
            i += 1
            continue
        j = i + 1
        while not body[j].startswith("```"):
            j += 1
        out.append((m.group(1), "\n".join(body[i + 1:j]), "\n".join(prose)))
        prose, i = [], j + 1
    return out


def encoder_examples(secs):
    examples = []
    for ident, title, body in secs:
        if ident[0] not in "SD":
            continue
        bs = blocks(body)
        inputs = [b for b in bs if b[0] == "json"]
        outputs = [b for b in bs if b[0] == "text"]
        if len(inputs) != 1 or len(outputs) != 1:
            sys.exit(f"{ident}: expected one json and one text block, found {len(inputs)}, "
                     f"{len(outputs)}")
        text, prose = inputs[0][1], inputs[0][2]
        json.loads(text)  # must be valid JSON
        examples.append({
            "id": ident,
            "title": title,
            "input": text,
            "sorted": "key-sorted version" in prose,
            "expected": outputs[0][1] + "\n",
        })
    ids = {e["id"] for e in examples}
    variants = []
    for e in examples:
        if e["sorted"] or e["id"].endswith("a"):
            continue  # the "b" example is the sorted variant of an "a" one
        variants.append(dict(e, id=e["id"] + " sorted", sorted=True))
    for e in examples:
        if e["id"].endswith("a") and e["id"][:-1] + "b" not in ids:
            sys.exit(f"{e['id']}: no sorted variant {e['id'][:-1]}b in the document")
    return examples + variants


def error_rows(lines):
    rows = []
    for line in lines:
        m = re.match(r"^\| `properties` = `(.*?)`.*\| (\w+): (.*) \|$", line)
        r = re.match(r"^\| root `(.*?)` \| (\w+): (.*) \|$", line)
        if m:
            # Some fragments carry a remark in the same backticks: `{...}  (no type)`.
            fragment = re.sub(r"\s+\([^()]*\)$", "", m.group(1))
            params = '{"type":"object","properties":' + fragment + "}"
            kind, message = m.group(2), m.group(3)
        elif r:
            params = '{"type":"object","properties":{"a":{"type":"string"}},' + r.group(1) + "}"
            kind, message = r.group(2), r.group(3)
        else:
            continue
        tools = '[{"type":"function","function":{"name":"f","parameters":' + params + "}}]"
        json.loads(tools)
        rows.append({"input": tools, "exception": kind,
                     # The text is compared for the module's ValueErrors only.
                     "message": message if kind == "ValueError" else None})
    return rows


def prompts(secs, lines):
    tools_line = next(line for line in lines if line.startswith("Tools used in all four:"))
    tools = re.search(r"`(\[.*\])`", tools_line).group(1)
    json.loads(tools)
    out = []
    for ident, title, body in secs:
        if ident[0] != "P":
            continue
        bs = blocks(body)
        messages = next(b[1] for b in bs if b[0] == "json")
        rendered = next(b[1] for b in bs if b[0] == "text")
        json.loads(messages)
        out.append({
            "id": ident,
            "title": title,
            "tools": tools,
            "messages": messages,
            "thinking": False if "`thinking=False`" in title else None,
            "expected": ast.literal_eval(rendered.strip()),
        })
    return out


def main():
    doc = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DOC
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if not any(SORT_RULE in line for line in lines):
        sys.exit(f"{doc}: the rule for sorted variants ('{SORT_RULE}') is gone; revisit the script")
    secs = sections(lines)
    data = {
        "source": "kimi-k25-tools.md (written by tools/extract_kimi_ts_examples.py)",
        "encoder": encoder_examples(secs),
        "errors": error_rows(lines),
        "prompts": prompts(secs, lines),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{OUT}: {len(data['encoder'])} encoder examples, {len(data['errors'])} errors, "
          f"{len(data['prompts'])} prompts")


if __name__ == "__main__":
    main()
