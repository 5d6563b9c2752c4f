// The headers of the request this thread is handling, for a handler that reads one (the HTTP
// layer sets them around each handler call, as it sets the client connection): handlers keep
// their (ServerState&, body) signature. Names are matched case-insensitively.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace myriad::api {

class RequestHeaders {
  public:
    using Lookup = std::function<std::string(std::string_view name)>;
    explicit RequestHeaders(Lookup lookup) : lookup_(std::move(lookup)) {}
    // The header's value, "" when the request has none.
    std::string get(std::string_view name) const { return lookup_(name); }

  private:
    Lookup lookup_;
};

// The current request's headers, or null outside a handler call.
const RequestHeaders* current_request_headers();

class ScopedRequestHeaders {
  public:
    explicit ScopedRequestHeaders(const RequestHeaders& h);
    ~ScopedRequestHeaders();
    ScopedRequestHeaders(const ScopedRequestHeaders&) = delete;
    ScopedRequestHeaders& operator=(const ScopedRequestHeaders&) = delete;

  private:
    const RequestHeaders* previous_;
};

}  // namespace myriad::api
