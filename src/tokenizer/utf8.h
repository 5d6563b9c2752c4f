// UTF-8 as the tokenizers see it: validation, replacement of invalid bytes by U+FFFD (Python's
// errors="replace" and Rust's from_utf8_lossy: one U+FFFD per maximal invalid subpart), and the
// split point of a byte stream that may end inside a character.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace myriad::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid character at s[i] (1..4), or 0 when the bytes there are not one.
size_t char_length(std::string_view s, size_t i);

// Length of the maximal subpart at s[i]: the longest prefix of a valid character (at least 1)
// when s[i] does not start a valid character, as the replacing decoders count it.
size_t invalid_length(std::string_view s, size_t i);

bool is_valid(std::string_view s);

// `s` with every maximal invalid subpart replaced by U+FFFD.
std::string replace_invalid(std::string_view s);

// The length of the longest prefix of `s` that a replacing decoder can finish now: everything
// except a trailing incomplete (but so far valid) character, which more bytes may complete.
size_t complete_prefix(std::string_view s);

// The code point of the valid character at s[i] (which must be one); `length` gets its size.
uint32_t decode(std::string_view s, size_t i, size_t* length);

// Appends the UTF-8 form of code point `cp` (which must be a scalar value).
void append(std::string& out, uint32_t cp);

}  // namespace myriad::utf8
