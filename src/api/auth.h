// API key check: with a key configured, /v1/* (and tokenize/detokenize) need
// `Authorization: Bearer <key>` (the scheme in any case; or Anthropic's `x-api-key: <key>`);
// /health and /metrics stay open for probes and scrapers.
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
    // Whether an `x-api-key` header value (Anthropic's SDKs) is the key.
    bool accepts_api_key(std::string_view key) const;

  private:
    std::string key_;
};

}  // namespace myriad::api
