// The Jinja parser: jinja2's precedence (filters and tests bind tighter than arithmetic, `**`
// is left-associative, comparisons chain), statements, and syntax errors with line and column.
#include <gtest/gtest.h>

#include "jinja/parser.h"
#include "test_util.h"

namespace myriad::testing {
namespace {

TEST(JinjaParser, Precedence) {
    EXPECT_EQ(render("{{ 2 ** 3 ** 2 }}"), "64");  // left-associative, as in jinja2
    EXPECT_EQ(render("{{ -2 ** 2 }}"), "4");
    EXPECT_EQ(render("{{ 1 + 2 * 3 - 4 // 3 % 2 }}"), "6");
    EXPECT_EQ(render("{{ 2 * 3 ~ 4 }} {{ 'a' ~ 2 * 3 }}"), "64 a6");  // ~ between * and +
    EXPECT_EQ(render_error("{{ 'ab' ~ 1 + 2 }}"),
              "line 1, column 13: can only concatenate str (not \"int\") to str");
    EXPECT_EQ(render("{{ '  x '|trim + 'y' }}"), "xy");  // filter before +
    EXPECT_EQ(render("{{ -3|abs }}"), "3");              // unary minus before the filter
    EXPECT_EQ(render("{{ not 1 in [2] }}"), "True");
    EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"), "True False");
    EXPECT_EQ(render("{{ 'a' if false else 'b' if true else 'c' }}"), "b");
    EXPECT_EQ(render("{{ none or 0 or 'z' }} {{ 1 and [] }}"), "z []");
    EXPECT_EQ(render("{{ x is not defined and 1 }}"), "1");
    EXPECT_EQ(render("{{ 6 is divisibleby 3 }} {{ 1 is sameas true }}"), "True False");
}

TEST(JinjaParser, Literals) {
    EXPECT_EQ(render("{{ [1, 'a', none, true, 1.5, {'k': (1,)}, (), (2, 3),] }}"),
              "[1, 'a', None, True, 1.5, {'k': (1,)}, (), (2, 3)]");
    EXPECT_EQ(render("{{ True }} {{ False }} {{ None }}"), "True False None");
    EXPECT_EQ(render("{{ 1, 2 }}"), "(1, 2)");
}

TEST(JinjaParser, SubscriptsAndSlices) {
    nlohmann::ordered_json vars = {{"l", {1, 2, 3, 4, 5}}, {"d", {{"a", {{"b", "c"}}}}}};
    EXPECT_EQ(render("{{ l[1:-1:2] }}{{ l[::-1] }}{{ l[:2] }}{{ l[3:] }}{{ l.0 }}", vars),
              "[2, 4][5, 4, 3, 2, 1][1, 2][4, 5]1");
    EXPECT_EQ(render("{{ d.a.b }}{{ d['a']['b'] }}{{ d['a'].b }}", vars), "ccc");
    EXPECT_EQ(render("{{ 'héllo'[1:3] }}{{ 'abc'[-1] }}"), "élc");
}

TEST(JinjaParser, CallArguments) {
    EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ kwargs }}{% endmacro %}"
                     "{{ m(*[1], **{'b': 3, 'c': 4}) }}"),
              "13{'c': 4}");
    EXPECT_EQ(render("{{ 'a-b'.split('-',) }}"), "['a', 'b']");  // trailing comma
}

TEST(JinjaParser, SyntaxErrorsNameLineAndColumn) {
    EXPECT_EQ(render_error("{% for x in y %}\n{% endif %}"),
              "line 2, column 4: unknown tag 'endif'");
    EXPECT_EQ(render_error("{% if x %}abc"),
              "line 1, column 14: unexpected end of template; looking for the tags 'elif' or "
              "'else' or 'endif'");
    EXPECT_EQ(render_error("{{ 1 +* 2 }}"), "line 1, column 7: unexpected '*'");
    EXPECT_EQ(render_error("{{ }}"),
              "line 1, column 4: expected an expression, got end of print statement");
    EXPECT_EQ(render_error("{% frobnicate %}"), "line 1, column 4: unknown tag 'frobnicate'");
    EXPECT_EQ(render_error("{% break %}"), "line 1, column 4: 'break' outside of a for loop");
    EXPECT_EQ(render_error("{% set 1 = 2 %}"), "line 1, column 8: can't assign to this expression");
    EXPECT_EQ(render_error("{% macro m(a=1, b) %}{% endmacro %}"),
              "line 1, column 18: non-default argument follows default argument");
    EXPECT_EQ(render_error("{{ x is defined is none }}"),
              "line 1, column 17: you cannot chain multiple tests with 'is'");
}

TEST(JinjaParser, UnknownFiltersAndTestsFailAtParseTimeAsInJinja2) {
    // Even in a branch that never runs.
    EXPECT_EQ(render_error("{% if false %}{{ x|nosuch }}{% endif %}"),
              "line 1, column 20: no filter named 'nosuch'");
    EXPECT_EQ(render_error("{{ x is nosuch }}"), "line 1, column 6: no test named 'nosuch'");
}

TEST(JinjaParser, DeepNestingIsAnErrorNotACrash) {
    std::string deep(5000, '(');
    EXPECT_NE(
        render_error("{{ " + deep + "1" + std::string(5000, ')') + " }}").find("nested too deep"),
        std::string::npos);
    std::string sum = "{{ 1";
    for (int i = 0; i < 5000; ++i) sum += " + 1";
    EXPECT_NE(render_error(sum + " }}").find("nested too deeply"), std::string::npos);
    std::string ifs;
    for (int i = 0; i < 500; ++i) ifs += "{% if true %}";
    EXPECT_NE(render_error(ifs).find("nested too deeply"), std::string::npos);
    std::string nots = "{{ ";
    for (int i = 0; i < 5000; ++i) nots += "not ";
    EXPECT_NE(render_error(nots + "1 }}").find("nested too deeply"), std::string::npos);
}

}  // namespace
}  // namespace myriad::testing
