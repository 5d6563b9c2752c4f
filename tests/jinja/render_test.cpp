// Rendering semantics as jinja2 defines them: scopes, loops, macros, undefined values, errors
// with line and column, and the limits that end runaway templates.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <ctime>

#include "test_util.h"

namespace myriad::testing {
namespace {

TEST(JinjaRender, ScopesFollowJinja2) {
    // A loop iteration is its own scope: sets do not leak out, nor into the next iteration.
    EXPECT_EQ(render("{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 2 %}{{ x }}"
                     "{% endfor %}{{ x }}"),
              "12121");
    EXPECT_EQ(render("{% for i in range(3) %}{% if i == 0 %}{% set y = 'a' %}{% endif %}"
                     "[{{ y }}]{% endfor %}"),
              "[a][][]");
    // `if` is not a scope.
    EXPECT_EQ(render("{% if true %}{% set w = 1 %}{% endif %}{{ w }}"), "1");
    // Namespaces carry state out of loops.
    EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
                     "{% endfor %}{{ ns.n }}"),
              "6");
    // Macros read the template's variables when called, not when defined.
    EXPECT_EQ(render("{% macro m() %}{{ z }}{% endmacro %}{% set z = 3 %}{{ m() }}{% set z = 4 %}"
                     "{{ m() }}"),
              "34");
    EXPECT_EQ(render("{% with a = 1 %}{{ a }}{% endwith %}[{{ a }}]"), "1[]");
}

TEST(JinjaRender, LoopVariables) {
    EXPECT_EQ(render("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}"
                     "{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}"
                     "{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}"),
              "1032TrueFalse3b;2121FalseFalse3ac;3210FalseTrue3b;");
    EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ loop.index }}/{{ loop.length }}:"
                     "{{ x }} {% endfor %}"),
              "1/2:2 2/2:4 ");
    EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
    // As jinja2 compiles it, `else` also runs when no iteration reached the end of the body.
    EXPECT_EQ(render("{% for x in [1, 2] %}{{ x }}{% break %}{% else %}E{% endfor %}"), "1E");
    EXPECT_EQ(render("{% for x in [1, 2] %}{% continue %}{% else %}E{% endfor %}"), "E");
    EXPECT_EQ(render("{% for x in [1, 2] %}{% if x == 2 %}{% break %}{% endif %}{% else %}E"
                     "{% endfor %}"),
              "");
    EXPECT_EQ(render("{{ 3 is odd }}{{ 0.5 is odd }}{{ 4.0 is even }}{{ 7 is divisibleby 7 }}"),
              "TrueFalseTrueTrue");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
              "a=1;b=2;");
    EXPECT_EQ(render("{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}"
                     "{% if i == 3 %}{% break %}{% endif %}{% endfor %}"),
              "023");
    EXPECT_EQ(render("{% for i in range(2) %}{% for j in 'ab' %}{{ loop.index }}{{ i }}{{ j }} "
                     "{% endfor %}{% endfor %}"),
              "10a 20b 11a 21b ");
    EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}"
                     "{{ loop.changed(x > 1) }}{% endfor %}"),
              "aTruebTrueaFalse");
    EXPECT_EQ(render("{% for n in [[1, [2]], 3] recursive %}<{% if n is iterable %}"
                     "{{ loop(n) }}{% else %}{{ n }}@{{ loop.depth }}{% endif %}>{% endfor %}"),
              "<<1@2><<2@3>>><3@1>");
    // A list appended to while iterated is read live, as in Python.
    EXPECT_EQ(render("{% set l = [1, 2] %}{% for x in l %}{{ x }}"
                     "{% if l|length < 4 %}{% set _ = l.append(0) %}{% endif %}{% endfor %}"),
              "1200");
}

TEST(JinjaRender, Macros) {
    EXPECT_EQ(
        render("{% macro f(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ f(1) }} {{ f(1, 5) }} "
               "{{ f(b=3, a=2) }}"),
        "1,2 1,5 2,3");
    EXPECT_EQ(render("{% macro f() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, k=3) }}"),
              "(1, 2){'k': 3}");
    EXPECT_EQ(render("{% macro f(a) %}[{{ a }}]{% endmacro %}{{ f() }}|{{ f }}"), "[]|<Macro 'f'>");
    EXPECT_EQ(render("{% macro wrap(t) %}<{{ t }}>{{ caller(t) }}</{{ t }}>{% endmacro %}"
                     "{% call(x) wrap('b') %}in {{ x }}{% endcall %}"),
              "<b>in b</b>");
    EXPECT_EQ(render("{% macro fact(n) %}{{ 1 if n <= 1 else n * fact(n - 1)|int }}{% endmacro %}"
                     "{{ fact(10) }}"),
              "3628800");
    EXPECT_EQ(render_error("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}"),
              "line 1, column 34: macro 'f' takes not more than 1 argument(s)");
    EXPECT_EQ(render_error("{% macro f(a) %}{% endmacro %}{{ f(b=1) }}"),
              "line 1, column 34: macro 'f' takes no keyword argument 'b'");
}

TEST(JinjaRender, LazyFiltersReturnSinglePassGenerators) {
    // select, map, ... return generators in jinja2: always true, no len(), consumed once.
    EXPECT_EQ(render("{{ 'yes' if []|select else 'no' }}"), "yes");
    EXPECT_EQ(render("{% set g = [1, 2, 3]|select('odd') %}{{ g|list }}{{ g|list }}"), "[1, 3][]");
    EXPECT_EQ(render("{{ [1, 2]|map('string')|list|length }}"), "2");
    EXPECT_EQ(render_error("{{ [1]|map('string')|length }}"),
              "line 1, column 22: object of type 'generator' has no len() (in filter 'length')");
    // An error while producing one surfaces where it is consumed.
    EXPECT_EQ(render("{{ (5|select) is iterable }}"), "True");
    EXPECT_EQ(render_error("{{ 5|select|list }}"),
              "line 1, column 13: 'int' object is not iterable (in filter 'list')");
    EXPECT_EQ(render("{{ [3, 1]|reverse|list }}{{ 'ab'|reverse }}"), "[1, 3]ba");
}

TEST(JinjaRender, ViewsAndSlicesAsPython) {
    nlohmann::ordered_json vars = {{"d", {{"a", 1}}}, {"n", 5}};
    EXPECT_EQ(render("{{ d.keys()|list }}{{ d.items() }}{{ range(1, 10, 3) }}{{ range(5)[1:] }}"
                     "[{{ d.keys()[0] }}]",
                     vars),
              "['a']dict_items([('a', 1)])range(1, 10, 3)range(1, 5)[]");
    // Slices bypass jinja2's item fallbacks: Python's errors surface.
    EXPECT_EQ(render_error("{{ d[:2] }}", vars), "line 1, column 5: unhashable type: 'slice'");
    EXPECT_EQ(render_error("{{ n[1:] }}", vars),
              "line 1, column 5: 'int' object is not subscriptable");
}

TEST(JinjaRender, BlockSetFilterAndGeneration) {
    EXPECT_EQ(render("{% set s %}a {{ 1 }}{% endset %}[{{ s }}]"), "[a 1]");
    EXPECT_EQ(render("{% set s | upper | trim %} a {% endset %}[{{ s }}]"), "[A]");
    EXPECT_EQ(render("{% filter upper %}x{{ 'y' }}{% endfilter %}"), "XY");
    EXPECT_NE(render_error("{% filter length %}abc{% endfilter %}").find("expected str instance"),
              std::string::npos);  // jinja2 joins a filter block's result as it is
    EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
}

TEST(JinjaRender, UndefinedValuesFollowJinja2Default) {
    nlohmann::ordered_json vars = {{"m", {{"role", "user"}, {"content", nullptr}}}};
    EXPECT_EQ(render("[{{ x }}][{{ m.name }}][{{ m['name'] }}][{{ x|default('d') }}]"
                     "[{{ m.content|default('d') }}][{{ x is defined }}][{{ m.content is none }}]"
                     "[{{ x|length }}][{{ x in [1] }}][{{ not x }}]{% for i in x %}no{% endfor %}",
                     vars),
              "[][][][d][None][False][True][0][False][True]");
    EXPECT_EQ(render_error("{{ x.y }}"), "line 1, column 5: 'x' is undefined");
    EXPECT_EQ(render_error("\n  {{ m.name.upper() }}", vars),
              "line 2, column 12: 'dict object' has no attribute 'name'");
    EXPECT_EQ(render_error("{{ m.content.strip() }}", vars),
              "line 1, column 13: 'None' has no attribute 'strip'");
    EXPECT_EQ(render_error("{{ x + 1 }}"), "line 1, column 6: 'x' is undefined");  // at the +
    EXPECT_NE(render_error("{{ (1 if false).x }}").find("evaluated to false and no else section"),
              std::string::npos);
}

TEST(JinjaRender, RaiseExceptionAndRuntimeErrorsNamePlace) {
    EXPECT_EQ(render_error("ok\n{% if true %}{{ raise_exception('Only user and assistant roles') }}"
                           "{% endif %}"),
              "line 2, column 17: Only user and assistant roles");
    EXPECT_EQ(render_error("{{ 'a' + 1 }}"),
              "line 1, column 8: can only concatenate str (not \"int\") to str");
    EXPECT_EQ(render_error("{{ 1 // 0 }}"), "line 1, column 6: integer division or modulo by zero");
    EXPECT_EQ(render_error("{% for x in 5 %}{% endfor %}"),
              "line 1, column 4: 'int' object is not iterable");
    EXPECT_EQ(render_error("{% set x = 1 %}{% set x.a = 2 %}"),
              "line 1, column 19: cannot assign attribute on non-namespace object");
    EXPECT_EQ(render_error("{% set a, b = [1] %}"),
              "line 1, column 4: not enough values to unpack (expected 2, got 1)");
}

TEST(JinjaRender, StrftimeNowReadsTheRenderClock) {
    jinja::RenderOptions o;
    o.now = 86400 * 365;  // 1971-01-01 (UTC)
    setenv("TZ", "UTC", 1);
    tzset();
    EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %b') }}", nlohmann::ordered_json::object(), o),
              "1971-01-01 Jan");
}

TEST(JinjaRender, LimitsEndRunawayTemplates) {
    jinja::RenderOptions o;
    o.limits.max_output_bytes = 150'000;  // range(2000), a list, counts 2000 * 64 bytes
    o.limits.max_loop_iterations = 5000;
    o.limits.max_macro_depth = 20;
    auto vars = nlohmann::ordered_json::object();
    EXPECT_NE(render_error("{% for i in range(2000) %}{{ 'x' * 100 }}{% endfor %}", vars, o)
                  .find("longer than the limit of 150000 bytes"),
              std::string::npos);
    EXPECT_NE(render_error("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}"
                           "{% endfor %}",
                           vars, o)
                  .find("more than 5000 loop iterations"),
              std::string::npos);
    EXPECT_NE(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", vars, o)
                  .find("macro calls nested deeper than 20"),
              std::string::npos);
    EXPECT_NE(render_error("{{ 'x' * 200000 }}", vars, o).find("past the limit"),
              std::string::npos);
    EXPECT_NE(render_error("{% set ns = namespace(s='ab') %}{% for i in range(30) %}"
                           "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                           vars, o)
                  .find("past the limit"),
              std::string::npos);
    EXPECT_NE(render_error("{{ range(200000)|length }}").find("range too big"), std::string::npos);
    // The same template within the limits renders.
    EXPECT_EQ(render("{% for i in range(3) %}x{% endfor %}", vars, o), "xxx");
}

// The limit counts bytes: a list of one-letter strings counts what its items take, so a 60 MB
// string turned into a list, or split into lines, fails before it takes gigabytes (it took
// 5.7 and 7.2 GB when the limit counted items).
TEST(JinjaRender, ListsCountTheirItemsBytes) {
    auto peak_kb = [] {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return u.ru_maxrss;
    };
    const long before = peak_kb();
    for (const char* t :
         {"{{ ('a' * 60000000)|list|length }}", "{{ ('\n' * 60000000).splitlines()|length }}",
          "{{ ('a ' * 30000000).split()|length }}", "{% for c in 'a' * 60000000 %}{% endfor %}"}) {
        std::string err = render_error(t);
        EXPECT_NE(err.find("past the limit of 67108864 bytes (64 bytes an item)"),
                  std::string::npos)
            << t << ": " << err;
    }
    EXPECT_LT(peak_kb() - before, 1L << 20) << "KiB: more than 1 GiB taken on the way";
    // Lists within the limit still build.
    EXPECT_EQ(render("{{ ('a' * 100000)|list|length }}"), "100000");
    EXPECT_EQ(render("{{ ('x\n' * 100000).splitlines()|length }}"), "100000");
}

}  // namespace
}  // namespace myriad::testing
