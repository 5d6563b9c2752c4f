// JSON numbers as grammar: any integer or number, and integers or numbers within bounds
// (inclusive or exclusive), built from decimal digit ranges.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/grammar.h"

namespace myriad::grammar {

struct Bound {
    int64_t value;
    bool exclusive;
};

// -?(0|[1-9][0-9]*), within [min, max] when given.
Element integer_grammar(GrammarBuilder& b, std::optional<int64_t> min, std::optional<int64_t> max);
// Any JSON number when unbounded; with bounds (integer-valued), numbers without an exponent.
Element number_grammar(GrammarBuilder& b, std::optional<Bound> min, std::optional<Bound> max);

}  // namespace myriad::grammar
