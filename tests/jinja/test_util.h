// Helpers for the Jinja interpreter tests: render a template with JSON variables, or get the
// error it raises.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "jinja/renderer.h"

namespace myriad::testing {

inline std::string render(const std::string& source,
                          const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                          const jinja::RenderOptions& options = {}) {
    return jinja::Template(source).render(vars, options);
}

// The message of the TemplateError that parsing or rendering raises ("" when none does).
inline std::string render_error(
    const std::string& source,
    const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
    const jinja::RenderOptions& options = {}) {
    try {
        jinja::Template(source).render(vars, options);
    } catch (const jinja::TemplateError& e) {
        return e.what();
    }
    return "";
}

}  // namespace myriad::testing
