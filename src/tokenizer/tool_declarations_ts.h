// Kimi-K2.5's tool declarations: an OpenAI tools list written as the TypeScript-style text the
// model was trained on (../shared/docs/kimi-k25-tools.md §2, with the corrections of §2.9),
// byte for byte as the Python module shipped with the model writes it. Python shows through:
// True/False/None spellings, float repr (1.0, 1e-05), ints apart from floats, and the key
// order of the request (parse it with nlohmann::ordered_json).
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace myriad {

// A tools list the format cannot express (the model's module raises): the caller falls back
// to JSON for the whole list. what() is the module's message where it has one, e.g.
// "Invalid JSON Schema object: {'oneOf': [...]}".
class ToolDeclarationError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The declaration of every {"type": "function", "function": {...}} entry of `tools`:
//
//     # Tools
//
//     ## functions
//     namespace functions {
//     ...one block per function...
//     }
//
// and a final newline; "" when `tools` is null, empty or holds no function. Throws
// ToolDeclarationError on any construct of §2.8/§2.9 (oneOf alone, an unknown $ref, ...).
std::string encode_tools_typescript(const nlohmann::ordered_json& tools);

}  // namespace myriad
