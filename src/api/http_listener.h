// The HTTP/1.1 transport under the API: Boost.Beast's parser on Boost.Asio, one event-loop
// thread for accepts, reads, writes and every connection's timer, so a slow or idle client costs
// a socket and a buffer, never a thread. Per request: a deadline for its headers and body
// together however its bytes trickle, header and URL size limits, the body limit on the decoded
// body (chunked or not, never buffered past it), ambiguous framing refused; per connection:
// keep-alive with an idle timeout, pipelined requests answered in order (read, handle, write, then
// the next); a cap on connections that drops the oldest still sending a request when a new one
// comes. Handlers run on a HandlerPool, never on the loop; streams go out chunked.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/reply.h"
#include "api/request_headers.h"

namespace myriad::api {

struct HttpLimits {
    size_t max_body_bytes = size_t{32} << 20;  // the decoded body: 413 past it
    size_t max_url_bytes = 8192;               // the request target: 414 past it
    size_t max_header_bytes = 32768;           // request line and header fields: 431 past it
    size_t max_connections = 1024;             // open connections; the oldest reading one goes
    std::chrono::milliseconds request_read_timeout{30000};  // headers and body of one request
    std::chrono::milliseconds keep_alive_timeout{5000};     // idle between requests
    std::chrono::milliseconds write_timeout{30000};         // a write the client takes no byte of
    size_t max_unsent_bytes = size_t{1} << 20;  // a stream's unread output before it pauses
    size_t request_threads = 64;                // handlers of requests that need the model
    size_t probe_threads = 8;                   // and of probes, beside them
};

// A request as the handler sees it.
struct HttpRequest {
    std::string method;
    std::string path;  // the target without its query
    const RequestHeaders* headers = nullptr;
    std::string body;
};

// What the transport asks of the layer above (HttpServer: routes, keys, error shapes).
class HttpHandler {
  public:
    virtual ~HttpHandler() = default;
    enum class Kind { Unknown, Probe, Request };
    // On the event loop, once the headers are in (body empty, not read yet): whether a route
    // takes the method and path, and, with `refusal` set, the answer to send instead of reading
    // the body (a missing API key). Must not block.
    virtual Kind route(const HttpRequest& head, std::optional<Reply>& refusal) = 0;
    // On a handler thread, with the whole body: the reply. Must not throw.
    virtual Reply handle(const HttpRequest& request) = 0;
    // An error the transport found (limits, framing, no route, busy) in the API's JSON shape
    // for that path (the path may be empty: not known yet). Must not block.
    virtual Reply error(int status, const std::string& message, std::string_view path) = 0;
};

class HttpListener {
  public:
    HttpListener(HttpHandler& handler, HttpLimits limits);
    ~HttpListener();
    HttpListener(const HttpListener&) = delete;
    HttpListener& operator=(const HttpListener&) = delete;

    // Binds host:port (bad input naming --host and --port when it cannot); returns the port.
    int bind(const std::string& host, int port);
    // Runs the event loop until stop() and the connections in a handler have finished.
    void run();
    // From any thread: closes the listener and every connection not in a handler at once; those
    // in a handler close once their reply is written (a few seconds at most).
    void stop();

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace myriad::api
