// Template values with Python's semantics: how floats and containers print, equality and
// ordering, and JSON both ways (request JSON in with order and int/float kept; tojson out as
// Python's json.dumps writes it).
#include <gtest/gtest.h>

#include "jinja/json.h"
#include "jinja/value.h"
#include "test_util.h"

namespace myriad::testing {
namespace {

using jinja::float_repr;

TEST(JinjaValue, FloatsPrintAsPythonRepr) {
    EXPECT_EQ(float_repr(1.0), "1.0");
    EXPECT_EQ(float_repr(0.1), "0.1");
    EXPECT_EQ(float_repr(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(float_repr(1e-05), "1e-05");
    EXPECT_EQ(float_repr(0.0001), "0.0001");
    EXPECT_EQ(float_repr(1e16), "1e+16");
    EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
    EXPECT_EQ(float_repr(123456789.125), "123456789.125");
    EXPECT_EQ(float_repr(-2.5e-300), "-2.5e-300");
    EXPECT_EQ(float_repr(-0.0), "-0.0");
    EXPECT_EQ(float_repr(1.0 / 0.0), "inf");
    EXPECT_EQ(render("{{ 1/3 }} {{ 2.0 * 3 }} {{ 10 / 4 }}"), "0.3333333333333333 6.0 2.5");
}

TEST(JinjaValue, ContainersPrintAsPythonRepr) {
    EXPECT_EQ(render("{{ ['it\\'s', 'a\"b', 'q', 'x\\ny\\x01\\u00a0é'] }}"),
              "[\"it's\", 'a\"b', 'q', 'x\\ny\\x01\\xa0é']");
    EXPECT_EQ(render("{{ {'a': [none, true, 1.0], 'b': (1,)} }}"),
              "{'a': [None, True, 1.0], 'b': (1,)}");
    EXPECT_EQ(render("{{ namespace(a=1) }}"), "<Namespace {'a': 1}>");
    // A list that holds itself prints as Python does, and cannot leak or recurse forever.
    EXPECT_EQ(render("{% set l = [1] %}{% set _ = l.append(l) %}{{ l }}"), "[1, [...]]");
}

TEST(JinjaValue, EqualityAndOrdering) {
    EXPECT_EQ(
        render("{{ 1 == 1.0 }}{{ true == 1 }}{{ 'a' == 'a' }}{{ [1, 2] == [1, 2] }}"
               "{{ (1,) == [1] }}{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}{{ none == none }}"),
        "TrueTrueTrueTrueFalseTrueTrue");
    EXPECT_EQ(render("{{ 'a' < 'b' }}{{ [1, 2] < [1, 3] }}{{ 2 > 1.5 }}{{ 'é' > 'z' }}"),
              "TrueTrueTrueTrue");
    EXPECT_EQ(render_error("{{ 1 < 'a' }}"),
              "line 1, column 4: '<' not supported between instances of 'int' and 'str'");
    EXPECT_EQ(render("{{ {1: 'a'}[1.0] }}{{ {true: 'b'}[1] }}"), "ab");  // dict keys as Python
}

TEST(JinjaValue, JsonInKeepsOrderAndNumberKinds) {
    nlohmann::ordered_json vars = nlohmann::ordered_json::parse(
        R"({"d": {"z": 1, "a": 2.0, "m": [1e-05, 0.5, 12345678901234, -0.0, null, true]}})");
    EXPECT_EQ(render("{{ d }}", vars),
              "{'z': 1, 'a': 2.0, 'm': [1e-05, 0.5, 12345678901234, -0.0, None, True]}");
    EXPECT_EQ(render("{{ d|tojson }}", vars),
              R"({"z": 1, "a": 2.0, "m": [1e-05, 0.5, 12345678901234, -0.0, null, true]})");
    EXPECT_EQ(render("{{ d.m[1] is float }}{{ d.z is integer }}", vars), "TrueTrue");
    nlohmann::ordered_json big = nlohmann::ordered_json::parse(R"({"n": 18446744073709551615})");
    EXPECT_THROW(render("{{ n }}", big), Error);
}

TEST(JinjaValue, TojsonWritesAsPythonJsonDumps) {
    nlohmann::ordered_json vars = nlohmann::ordered_json::parse(
        R"({"t": {"name": "f", "desc": "é \"q\" \\ \n\t\u0001 😀", "p": {"b": [], "a": {}}}})");
    EXPECT_EQ(render("{{ t|tojson }}", vars),
              R"({"name": "f", "desc": "é \"q\" \\ \n\t\u0001 😀", "p": {"b": [], "a": {}}})");
    EXPECT_EQ(
        render("{{ t|tojson(ensure_ascii=true) }}", vars),
        R"({"name": "f", "desc": "\u00e9 \"q\" \\ \n\t\u0001 \ud83d\ude00", "p": {"b": [], "a": {}}})");
    EXPECT_EQ(render("{{ t.p|tojson(separators=(',', ':')) }}", vars), R"({"b":[],"a":{}})");
    EXPECT_EQ(render("{{ t.p|tojson(sort_keys=true) }}", vars), R"({"a": {}, "b": []})");
    EXPECT_EQ(render("{{ {'a': [1, {'b': none}], 'c': []}|tojson(indent=2) }}"),
              "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": []\n}");
    EXPECT_EQ(render("{{ [1]|tojson(indent='\\t') }}"), "[\n\t1\n]");
    EXPECT_EQ(render("{{ {1: 2, none: 3, 1.5: 4, false: 5}|tojson }}"),
              R"({"1": 2, "null": 3, "1.5": 4, "false": 5})");
    EXPECT_EQ(render("{{ 'x'|tojson }}{{ 1.0|tojson }}{{ (1, 2)|tojson }}"), "\"x\"1.0[1, 2]");
    EXPECT_NE(
        render_error("{{ x|tojson }}").find("Object of type Undefined is not JSON serializable"),
        std::string::npos);
    EXPECT_NE(
        render_error("{% set l = [] %}{% set _ = l.append(l) %}{{ l|tojson }}").find("Circular"),
        std::string::npos);
}

}  // namespace
}  // namespace myriad::testing
