// JSON <-> template values: request JSON becomes values with order kept and integers apart from
// floats; tojson writes values exactly as Python's json.dumps does (", " and ": " separators by
// default, floats as repr prints them, keys in insertion order).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "jinja/value.h"

namespace myriad::jinja {

// Objects become dicts (key order kept), arrays lists. Integers past 64 bits and nesting past
// kMaxNesting fail.
Value from_json(Heap& heap, const nlohmann::ordered_json& j);

struct JsonDumpOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // the string repeated per level; none: one line
    std::optional<std::string> item_separator, key_separator;  // Python's defaults when absent
    bool sort_keys = false;
};

// json.dumps(v, ...); fails for values JSON cannot hold (undefined, namespaces, macros) and for
// output longer than `max_bytes`.
std::string to_json(const Value& v, const JsonDumpOptions& options, size_t max_bytes);

}  // namespace myriad::jinja
