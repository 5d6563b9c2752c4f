// API key check: with a key configured, /v1/* (and tokenize/detokenize) need
// `Authorization: Bearer <key>` (the scheme in any case); /health and /metrics stay open for probes and scrapers.
#pragma once

#include <string>
#include <string_view>

namespace myriad::api {

class Auth {
  public:
    explicit Auth(std::string key) : key_(std::move(key)) {}
    bool enabled() const { return !key_.empty(); }
    // Whether `path` needs the key.
    static bool protects(std::string_view path);
    // Whether the Authorization header value carries the key (compared in constant time).
    bool accepts(std::string_view authorization) const;

  private:
    std::string key_;
};

}  // namespace myriad::api
