// Jinja lexer: template text -> tokens, with jinja2's whitespace rules (trim_blocks,
// lstrip_blocks, `{%-`/`-%}`/`+` markers), comments and raw blocks resolved here, so the
// parser sees only data, tag delimiters and expression tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace myriad::jinja {

enum class Tok : uint8_t {
    Data,        // literal text (value)
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,        // identifier (value)
    String,      // string literal, escapes decoded (value)
    Integer,     // int_value
    Float,       // float_value
    Op,          // operator or punctuation (value), e.g. "+", "//", "==", "(", "|"
    Eof,
};

struct Token {
    Tok type = Tok::Eof;
    std::string value;
    int64_t int_value = 0;
    double float_value = 0;
    Pos pos;
};

struct LexOptions {
    bool trim_blocks = true;    // drop the newline after a block tag
    bool lstrip_blocks = true;  // drop spaces before a block tag at the start of a line
};

// Tokens of `source` (valid UTF-8), ending with Eof. Newlines are normalized to "\n" and one
// trailing newline is dropped, as jinja2 does. Syntax errors throw TemplateError.
std::vector<Token> tokenize(std::string_view source, const LexOptions& options = {});

std::string describe(const Token& t);  // for messages: "'+'", "end of print statement", ...

}  // namespace myriad::jinja
