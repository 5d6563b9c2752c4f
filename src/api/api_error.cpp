#include "api/api_error.h"

namespace myriad::api {

const char* error_type(int status) {
    switch (status) {
        case 400:
        case 411:
        case 413:
        case 414:
        case 431:
            return "invalid_request_error";
        case 401:
            return "authentication_error";
        case 404:
            return "not_found_error";
        case 429:
            return "rate_limit_error";
        case 503:
            return "service_unavailable";
        default:
            return "internal_error";
    }
}

nlohmann::json error_json(int status, const std::string& message, const std::string& param) {
    nlohmann::json e = {{"message", message}, {"type", error_type(status)}, {"code", status}};
    e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
    return {{"error", e}};
}

std::string dump(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string dump(const nlohmann::ordered_json& j) {
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace myriad::api
