#include <gtest/gtest.h>

#include "api/marker_lexer.h"

namespace myriad::api {
namespace {

std::string show(const std::vector<MarkerLexer::Piece>& pieces) {
    std::string out;
    for (const auto& p : pieces)
        out += p.marker < 0 ? "[" + p.text + "]" : "{" + std::to_string(p.marker) + "}";
    return out;
}

TEST(MarkerLexer, SplitsTextAndMarkers) {
    MarkerLexer lexer({"<think>", "</think>"});
    std::vector<MarkerLexer::Piece> out;
    lexer.feed("a<think>b</think><think>", out);
    lexer.finish(out);
    EXPECT_EQ(show(out), "[a]{0}[b]{1}{0}");
}

TEST(MarkerLexer, HoldsAMarkerCutByTheChunkEnd) {
    MarkerLexer lexer({"<think>", "</think>"});
    std::vector<MarkerLexer::Piece> out;
    lexer.feed("ab</thi", out);
    EXPECT_EQ(show(out), "[ab]");
    lexer.feed("nk>c<", out);
    EXPECT_EQ(show(out), "[ab]{1}[c]");
    lexer.feed("x", out);  // "<x" starts no marker
    EXPECT_EQ(show(out), "[ab]{1}[c][<x]");
    lexer.feed("</th", out);
    lexer.finish(out);  // a cut marker at the end is text
    EXPECT_EQ(show(out), "[ab]{1}[c][<x][</th]");
}

TEST(MarkerLexer, TheLongestMarkerWinsAcrossACut) {
    MarkerLexer lexer({"<a>", "<a>b>"});
    std::vector<MarkerLexer::Piece> out;
    lexer.feed("<a>", out);
    EXPECT_EQ(show(out), "");  // "<a>b>" may still come
    lexer.feed("b>", out);
    lexer.feed("<a>c", out);
    EXPECT_EQ(show(out), "{1}{0}[c]");
}

TEST(MarkerLexer, TextIsWholeValidCharacters) {
    MarkerLexer lexer({"<｜tool▁sep｜>"});
    std::vector<MarkerLexer::Piece> out;
    lexer.feed("\xe6\xbc", out);  // half of 漢
    EXPECT_EQ(show(out), "");
    lexer.feed("\xa2<\xef\xbd", out);  // ends inside the marker's second character
    EXPECT_EQ(show(out), "[漢]");
    lexer.feed("\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>\xff", out);
    lexer.finish(out);
    EXPECT_EQ(show(out), "[漢]{0}[\xEF\xBF\xBD]");
}

}  // namespace
}  // namespace myriad::api
