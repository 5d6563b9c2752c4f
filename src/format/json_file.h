// JSON read from files and byte buffers, with errors that name the source (a bad-input Error,
// never a nlohmann exception), and text made safe for one-line messages.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace myriad {

// Parses `text`; invalid JSON is a bad-input Error "<source>: not valid JSON: <where and why>".
nlohmann::ordered_json parse_json(std::string_view text, const std::string& source);

// Reads and parses the file at `path`; a file that cannot be read is bad input naming it.
nlohmann::ordered_json read_json_file(const std::string& path);

// The same with plain (sorted) objects: ordered_json inserts a key in O(n), too slow for objects
// of 10^5 keys such as the weight_map of a sharded checkpoint's index.
nlohmann::json read_json_file_unordered(const std::string& path);

// The bytes of the file at `path`; bad input naming it when it cannot be read.
std::string read_text_file(const std::string& path);

// nlohmann's description of a parse failure, trimmed to "line L, column C: reason", printable.
std::string json_error_text(const nlohmann::json::exception& e);

// `s` with control characters and bytes that are not valid UTF-8 written as \xNN, so that text
// from a file (a tensor name, a JSON token) keeps an error message on one printable line.
std::string printable(std::string_view s);

}  // namespace myriad
