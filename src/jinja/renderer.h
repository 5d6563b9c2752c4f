// A parsed Jinja template and its rendering, in Hugging Face's chat-template environment:
// trim_blocks and lstrip_blocks on, loop controls, jinja2's default Undefined, the sandbox's
// in-place list methods allowed. Rendering is bounded by limits, so a runaway template ends
// with an error instead of exhausting memory or the stack.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "jinja/parser.h"

namespace myriad::jinja {

struct RenderLimits {
    size_t max_output_bytes = size_t{64} << 20;  // also the largest string or list built
    int64_t max_loop_iterations = 1'000'000;     // over the whole render
    int max_macro_depth = 100;                   // nested macro calls (recursion)
    int max_eval_depth = 1000;                   // nested expressions and statements, all told
    size_t max_objects = 4'000'000;              // lists, dicts and other objects created
};

struct RenderOptions {
    RenderLimits limits;
    std::optional<std::time_t> now;  // the clock strftime_now reads; the real time when absent
};

class Template {
  public:
    // Parses `source` (UTF-8). Syntax errors, and filters or tests that do not exist, throw
    // TemplateError naming line and column.
    explicit Template(std::string_view source);

    // Renders with the members of `variables` (a JSON object) as template variables; JSON
    // objects keep their key order. Errors while rendering (raise_exception included) throw
    // TemplateError naming line and column.
    std::string render(const nlohmann::ordered_json& variables,
                       const RenderOptions& options = {}) const;

  private:
    std::shared_ptr<const Body> body_;
};

}  // namespace myriad::jinja
