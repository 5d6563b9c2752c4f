// Python string semantics over UTF-8: the Jinja interpreter's strings are std::string holding
// valid UTF-8, but lengths, indices and slices count code points as Python's str does, and
// whitespace, case and repr follow Python's rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myriad::jinja::text {

// True when `s` is valid UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
bool valid_utf8(std::string_view s);
bool is_ascii(std::string_view s);

// Decodes the code point at s[i] (valid UTF-8 assumed) and advances i past it.
char32_t next_cp(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);
std::vector<char32_t> code_points(std::string_view s);
size_t length(std::string_view s);  // in code points
// Byte offset of code point `index` (0..length); s.size() when index == length.
size_t byte_offset(std::string_view s, size_t index);
// Byte offsets of every code point plus s.size() at the end (for repeated indexing).
std::vector<size_t> offsets(std::string_view s);

// Python's str.isspace() for one code point (also what `\s` matches in Python's re).
bool is_space(char32_t cp);
// Python's str.isprintable() for one code point (approximated outside the common ranges).
bool is_printable(char32_t cp);

char32_t to_upper(char32_t cp);
char32_t to_lower(char32_t cp);
bool is_cased(char32_t cp);
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);   // str.capitalize
std::string py_title(std::string_view s);     // str.title
std::string jinja_title(std::string_view s);  // the `title` filter

// str.strip/lstrip/rstrip: `chars` absent strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split / str.rsplit; `sep` absent splits on whitespace runs; maxsplit < 0 is unlimited.
// These three fail once they would pass the render's max_list_items() (item_limit.h).
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// str.replace; count < 0 replaces all.
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
// str.find / rfind as code-point indices, -1 when absent.
int64_t find(std::string_view s, std::string_view sub, bool reverse);
int64_t count(std::string_view s, std::string_view sub);

// Python's repr() of a str: quotes chosen as Python does, escapes for the unprintable.
std::string repr(std::string_view s);

}  // namespace myriad::jinja::text
