// The Jinja lexer: tokens, string escapes as Python decodes them, and jinja2's whitespace rules
// (trim_blocks, lstrip_blocks, `-` and `+` markers), comments, raw blocks, newlines.
#include <gtest/gtest.h>

#include "jinja/lexer.h"
#include "test_util.h"

namespace myriad::testing {
namespace {

using jinja::Tok;

TEST(JinjaLexer, TokensOfAnExpression) {
    auto toks = jinja::tokenize("a{{ x.y|f(1, 2.5) // 3 ** -1 }}");
    ASSERT_GE(toks.size(), 4u);
    EXPECT_EQ(toks[0].type, Tok::Data);
    EXPECT_EQ(toks[0].value, "a");
    EXPECT_EQ(toks[1].type, Tok::VarBegin);
    std::vector<std::string> ops;
    for (const auto& t : toks)
        if (t.type == Tok::Op) ops.push_back(t.value);
    EXPECT_EQ(ops, (std::vector<std::string>{".", "|", "(", ",", ")", "//", "**", "-"}));
    EXPECT_EQ(toks.back().type, Tok::Eof);
    EXPECT_EQ(toks[toks.size() - 2].type, Tok::VarEnd);
}

TEST(JinjaLexer, NumbersAsPythonReadsThem) {
    EXPECT_EQ(render("{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1E3 }} {{ 2.5e-3 }}"),
              "1000 31 15 5 1000.0 0.0025");
    EXPECT_NE(render_error("{{ 99999999999999999999 }}").find("too large"), std::string::npos);
}

TEST(JinjaLexer, StringEscapesAsPythonDecodesThem) {
    EXPECT_EQ(render(R"({{ "a\tb\n\x41\101\u00e9\U0001F600\\ \d \'" }})"), "a\tb\nAAé😀\\ \\d '");
    // A backslash before a non-ASCII character reads as its \x escape (jinja2 quirk).
    EXPECT_EQ(render("{{ '\\é' }}"), "\\xe9");
    EXPECT_EQ(render(R"({{ 'it''s' "" 'x' }})"), "itsx");  // adjacent literals concatenate
    EXPECT_NE(render_error(R"({{ "\x4" }})").find("truncated"), std::string::npos);
}

TEST(JinjaLexer, TrimBlocksDropsTheNewlineAfterABlockTag) {
    EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
    // Not after a print tag.
    EXPECT_EQ(render("{{ 1 }}\n2"), "1\n2");
    // A comment counts as a block tag.
    EXPECT_EQ(render("{# c #}\nx"), "x");
}

TEST(JinjaLexer, LstripBlocksDropsIndentationBeforeABlockTag) {
    EXPECT_EQ(render("a\n    {% if true %}\n    b\n    {% endif %}\nc"), "a\n    b\nc");
    // Only at the start of a line, and never before a print tag.
    EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");
    EXPECT_EQ(render("\n  {{ 1 }}"), "\n  1");
    // `+` turns it off.
    EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
}

TEST(JinjaLexer, MinusMarkersStripAllWhitespace) {
    EXPECT_EQ(render("a  \n {%- if true -%} \n\n b {%- endif %}"), "ab");
    EXPECT_EQ(render("x {{- 1 -}} \n y"), "x1y");
    EXPECT_EQ(render("A {#- c -#}  B"), "AB");
    // `+%}` keeps the newline trim_blocks would drop.
    EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(JinjaLexer, RawBlocksAndBracesInsideExpressions) {
    EXPECT_EQ(render("{% raw %} {{ x }} {% if %}{% endraw %}"), " {{ x }} {% if %}");
    EXPECT_EQ(render("{{ {'a': {'b': 1}}['a'] }}"), "{'b': 1}");
}

TEST(JinjaLexer, NewlinesNormalizedAndOneTrailingNewlineDropped) {
    EXPECT_EQ(render("a\r\nb\rc\n"), "a\nb\nc");
    EXPECT_EQ(render("a\n\n"), "a\n");
    EXPECT_EQ(render("{{ 'x\r\ny' }}"), "x\ny");  // inside string literals too
}

TEST(JinjaLexer, ErrorsNameLineAndColumn) {
    EXPECT_EQ(render_error("ab\n  {{ x"),
              "line 2, column 3: unexpected end of template: the '{{' tag has no '}}'");
    EXPECT_EQ(render_error("x\n{# never closed"), "line 2, column 1: missing end of comment tag");
    EXPECT_EQ(render_error("{{ a ! b }}"), "line 1, column 6: unexpected char '!'");
    EXPECT_EQ(render_error("{{ 'é' ) }}"), "line 1, column 8: unexpected ')'");
    EXPECT_NE(render_error(std::string("{{ '\xff' }}")).find("not valid UTF-8"), std::string::npos);
}

}  // namespace
}  // namespace myriad::testing
