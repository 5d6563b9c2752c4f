// JSON Schema `format` values the grammar enforces, each as a regular expression over the
// string's contents: date-time, date, time, duration, uuid, email, ipv4, ipv6, uri.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace myriad::grammar {

// The anchored pattern for a format; nullopt for a format this module does not enforce.
std::optional<std::string> format_pattern(std::string_view format);

}  // namespace myriad::grammar
