#include "api/auth.h"

namespace myriad::api {

bool Auth::protects(std::string_view path) {
    return path != "/health" && path != "/metrics" && path != "/ping" && path != "/version";
}

bool Auth::accepts(std::string_view authorization) const {
    if (!enabled()) return true;
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.substr(0, kBearer.size()) != kBearer) return false;
    return accepts_api_key(authorization.substr(kBearer.size()));
}

bool Auth::accepts_api_key(std::string_view given) const {
    if (!enabled()) return true;
    // Constant time in the key's length: no early exit on the first differing byte.
    unsigned diff = given.size() == key_.size() ? 0u : 1u;
    for (size_t i = 0; i < key_.size(); ++i)
        diff |= static_cast<unsigned char>(key_[i]) ^
                static_cast<unsigned char>(i < given.size() ? given[i] : 0);
    return diff == 0;
}

}  // namespace myriad::api
