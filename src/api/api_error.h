// ApiError: a request the server refuses, with the HTTP status and the JSON field at fault, sent
// in OpenAI's error shape {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace myriad::api {

class ApiError : public std::runtime_error {
  public:
    ApiError(int status, std::string param, std::string message)
        : std::runtime_error(std::move(message)), status_(status), param_(std::move(param)) {}
    int status() const { return status_; }
    const std::string& param() const { return param_; }

  private:
    int status_;
    std::string param_;  // empty: no field
};

template <typename... Args>
[[noreturn]] void fail(int status, std::string param, fmt::format_string<Args...> f,
                       Args&&... args) {
    throw ApiError(status, std::move(param), fmt::format(f, std::forward<Args>(args)...));
}

// The error's type string for a status (OpenAI's names).
const char* error_type(int status);
// {"error": {...}} for a status, message and field (empty: null).
nlohmann::json error_json(int status, const std::string& message, const std::string& param = "");
// JSON text that never throws on invalid UTF-8 (it is replaced by U+FFFD).
std::string dump(const nlohmann::json& j);
std::string dump(const nlohmann::ordered_json& j);

}  // namespace myriad::api
