// A regular expression (JSON Schema's `pattern`, ECMA-262 syntax) as the grammar of a JSON
// string's contents: literals, classes, ., \d \w \s, groups, |, * + ? {n,m}; unanchored ends
// match any text, as a search does. Backreferences, lookarounds and flags are refused.
#pragma once

#include <string>
#include <string_view>

#include "grammar/grammar.h"

namespace myriad::grammar {

// `where` names the schema location in errors ("pattern at /properties/id").
Element regex_grammar(GrammarBuilder& b, std::string_view pattern, const std::string& where);

}  // namespace myriad::grammar
