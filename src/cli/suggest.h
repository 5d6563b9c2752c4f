// "Did you mean ...": the nearest of some names to a mistyped one (unknown subcommands and
// flags).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace myriad::cli {

// The candidate closest to `word` by edit distance (insertions, deletions, substitutions and
// swaps of neighbours), when it is close enough to be a typo: at most a third of the word's
// letters, and at least 2. Ties go to the first candidate.
std::optional<std::string> nearest(std::string_view word, const std::vector<std::string>& names);

// A message for argv that `app` cannot parse because of an unknown subcommand or flag, naming
// the nearest known one and where the flags are listed; empty when argv's trouble is another.
std::string explain_unknown(const CLI::App& app, const std::vector<std::string>& argv);

}  // namespace myriad::cli
