#include "api/auth.h"

#include <cctype>

namespace myriad::api {

bool Auth::protects(std::string_view path) {
    return path != "/health" && path != "/metrics" && path != "/ping" && path != "/version";
}

bool Auth::accepts(std::string_view authorization) const {
    if (!enabled()) return true;
    // RFC 7235: the scheme is case-insensitive, then one or more spaces before the token.
    constexpr std::string_view kBearer = "bearer";
    if (authorization.size() <= kBearer.size()) return false;
    for (size_t i = 0; i < kBearer.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(authorization[i])) != kBearer[i]) return false;
    std::string_view given = authorization.substr(kBearer.size());
    if (given.front() != ' ') return false;
    while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
    return accepts_api_key(given);
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
