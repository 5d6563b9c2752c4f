// Characters inside JSON strings as grammar: sets of code points become UTF-8 byte sequences,
// in the canonical JSON form (controls, '"' and '\' escaped, everything else raw UTF-8).
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar.h"

namespace myriad::grammar {

struct CodeRange {
    uint32_t lo, hi;  // inclusive
};
// Sorted, disjoint, merged ranges of Unicode scalar values (no surrogates).
using CodeSet = std::vector<CodeRange>;

CodeSet normalize(CodeSet set);
CodeSet complement(const CodeSet& set);
CodeSet subtract(const CodeSet& a, const CodeSet& b);

// One character of `set` in canonical JSON form; an element that derives nothing when empty.
Element json_char_class(GrammarBuilder& b, const CodeSet& set);
// One code point in canonical JSON form.
std::vector<Element> json_char(GrammarBuilder& b, uint32_t cp);
// Any one character of a JSON string, raw or escaped (\" \\ \/ \b \f \n \r \t \uXXXX but no
// surrogate escapes, so each counts as one code point for minLength/maxLength).
Element any_json_string_char(GrammarBuilder& b);

}  // namespace myriad::grammar
