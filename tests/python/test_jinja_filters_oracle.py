#!/usr/bin/env python3
"""Jinja filters items, join, replace, lower, upper, first, last and the test `mapping`, as
`myriad chat-template --template` renders them, against Python jinja2 in HF's environment (the
one test_chat_template_oracle.py builds). Each case is a small template over variables passed
through chat_template_kwargs (and the messages); the outputs must be byte-identical, or both
must fail (myriad: exit status 2 naming line and column).

Run: MYRIAD_BINARY=build/myriad build/venv/bin/python tests/python/test_jinja_filters_oracle.py
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from test_chat_template_oracle import BINARY, TINY, load_model, make_environment, render_jinja2

VARS = {
    "d": {"zeta": 1, "alpha": "two", "mid": True, "none": None},
    "empty_d": {},
    "xs": ["b", "a", "c"],
    "ns": [3, 1, 2],
    "empty": [],
    "users": [{"name": "Ann", "age": 31}, {"name": "Bo", "age": 7}],
    "s": "Hello, World: hello again",
    "u": "ÉCOLE Ünïcode ÀÉÎ ÇA Ñ",
    "n": 42,
}
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]

CASES = {
    # items: insertion order kept, on mappings of every value type, unpacked and not
    "items_unpack": "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}",
    "items_pairs": "{% for p in d|items %}{{ p[0] }}:{{ p[1] }}|{% endfor %}",
    "items_length": "{{ d|items|list|length }} {{ empty_d|items|list|length }}",
    "items_message": "{% for k, v in messages[1]|items %}<{{ k }}:{{ v }}>{% endfor %}",
    # join: default and given separators, numbers, attribute, a string, an empty list
    "join_sep": "{{ xs|join(', ') }}",
    "join_default": "{{ xs|join }}",
    "join_numbers": "{{ ns|join('-') }}",
    "join_attribute": "{{ users|join(' & ', attribute='name') }}",
    "join_string": "{{ 'abc'|join('.') }}",
    "join_empty": "[{{ empty|join(',') }}]",
    # replace: every occurrence, a count, nothing found, the empty needle, a longer replacement
    "replace_all": "{{ s|replace('l', 'L') }}",
    "replace_count": "{{ s|replace('l', 'L', 2) }}",
    "replace_missing": "{{ s|replace('xyz', '!') }}",
    "replace_empty_needle": "{{ 'abc'|replace('', '-') }}",
    "replace_longer": "{{ s|replace('hello', 'goodbye') }}",
    "replace_unicode": "{{ u|replace('É', 'e') }}",
    # lower / upper: ASCII and beyond
    "lower_ascii": "{{ s|lower }}",
    "lower_unicode": "{{ u|lower }}",
    "upper_ascii": "{{ s|upper }}",
    "lower_role": "{{ messages[0].role|upper|lower }}",
    # first / last: lists, strings, messages, an empty list (undefined, renders empty)
    "first_last_list": "{{ xs|first }} {{ xs|last }} {{ ns|first + ns|last }}",
    "first_last_string": "{{ s|first }}{{ s|last }}",
    "first_last_messages": "{{ (messages|first).role }} {{ (messages|last)['content'] }}",
    "first_empty": "[{{ empty|first }}]",
    "first_of_users": "{{ (users|first).name }}",
    # the `mapping` test on every kind of value
    "mapping_kinds": ("{{ d is mapping }} {{ empty_d is mapping }} {{ xs is mapping }} "
                      "{{ s is mapping }} {{ n is mapping }} {{ none is mapping }} "
                      "{{ messages[0] is mapping }} {{ users[0] is mapping }}"),
    "mapping_not": "{% for m in [d, xs, s, users[1]] %}{{ m is not mapping }},{% endfor %}",
    "mapping_content": ("{% for m in messages %}{% if m.content is mapping %}M{% elif m.content "
                        "is string %}S{% endif %}{% endfor %}"),
}


def render_myriad(template, request):
    with tempfile.TemporaryDirectory() as d:
        tpl, req = os.path.join(d, "t.jinja"), os.path.join(d, "r.json")
        with open(tpl, "w", encoding="utf-8") as f:
            f.write(template)
        with open(req, "w", encoding="utf-8") as f:
            json.dump(request, f, ensure_ascii=False)
        p = subprocess.run([BINARY, "chat-template", TINY, "--request", req, "--template", tpl],
                           capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("name", sorted(CASES))
def test_filter_equals_jinja2(name):
    template = CASES[name]
    _, special = load_model(TINY, None)
    request = {"messages": MESSAGES, "chat_template_kwargs": VARS}
    want, err = render_jinja2(make_environment(), template, special, request)
    rc, got, stderr = render_myriad(template, request)
    if err is not None:
        assert rc == 2 and "line " in stderr, (err, rc, got, stderr)
    else:
        assert rc == 0, stderr
        assert got == want


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
