// HTTP for the hub, over libcurl: one request at a time per call (curl handles are not shared, so
// any number of threads may call at once), redirects followed, every request under a timeout,
// transient failures (connection errors, timeouts, 429, 5xx) retried with exponential backoff.
//
// Environment (tests set them short):
//   MYRIAD_HUB_TIMEOUT   seconds a request may go without receiving a byte (default 30); also
//                        the connect timeout and, for small requests, the total timeout
//   MYRIAD_HUB_RETRIES   retries after the first attempt (default 5)
//   MYRIAD_HUB_BACKOFF   seconds before the first retry, doubling each time up to 60 (default 1)
//   HF_TOKEN             sent as "Authorization: Bearer" to the hub (not to redirect targets)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace myriad::hub {

struct HttpSettings {
    double timeout_s = 30;
    int retries = 5;
    double backoff_s = 1;
    std::string token;
    static HttpSettings from_env();  // bad input names a malformed variable
};

struct HttpRequest {
    std::string url;
    bool head = false;
    std::optional<std::pair<uint64_t, uint64_t>> range;  // inclusive bytes [first, last]
    // Receives the body in pieces; returns false to abort. Unset: the body is collected (up to
    // max_body bytes, then the request fails).
    std::function<bool(const char*, size_t)> sink;
    size_t max_body = size_t{64} << 20;
    bool small = true;  // a small request: the timeout also bounds the whole transfer
};

struct HttpResponse {
    long status = 0;                             // 0 when no response came
    std::map<std::string, std::string> headers;  // of the final response, names lowercase
    std::string body;
    std::string url;               // after redirects
    std::string error;             // transport error (curl's words); empty when a response came
    bool transient() const;        // worth retrying
    std::string describe() const;  // "HTTP 500" or the transport error
};

// One attempt.
HttpResponse http_once(const HttpRequest& request, const HttpSettings& settings);

// Attempts until a non-transient answer or the retries are spent; before each retry `on_retry`
// (when set) may reset state (e.g. a partial body). Returns the last response.
HttpResponse http_with_retries(const HttpRequest& request, const HttpSettings& settings,
                               const std::function<void()>& on_retry = {});

// Sleeps the backoff before retry `attempt` (1-based): backoff * 2^(attempt-1), at most 60 s.
void backoff_sleep(const HttpSettings& settings, int attempt);

// Percent-encodes everything but unreserved characters and, when keep_slash, '/'.
std::string url_encode(std::string_view s, bool keep_slash);

}  // namespace myriad::hub
