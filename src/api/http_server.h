// The HTTP front of the API: the route table (http_server.cpp) of the OpenAI- and
// Anthropic-compatible API, /health, /metrics, /tokenize and /detokenize; API-key checks before a
// body is read; errors in the API's JSON shapes. Under it, HttpListener (Boost.Beast on
// Boost.Asio) holds the connections, the limits and the handler threads. Handlers read the
// request's headers through current_request_headers() (request_headers.h) and its connection
// through current_client() (client_connection.h).
#pragma once

#include <memory>
#include <string>

#include "api/http_listener.h"
#include "api/server_state.h"

namespace myriad::api {

class HttpServer : private HttpHandler {
  public:
    explicit HttpServer(ServerState& state);
    ~HttpServer() override;
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds host:port (bad input naming both when it cannot); returns the port (for port 0).
    int bind(const std::string& host, int port);
    // Serves until stop(); returns once the listener closed and the handlers finished.
    void run();
    // Closes the listener and every connection not in a handler (idle or half-read) at once.
    void stop();

  private:
    Kind route(const HttpRequest& head, std::optional<Reply>& refusal) override;
    Reply handle(const HttpRequest& request) override;
    Reply error(int status, const std::string& message, std::string_view path) override;

    ServerState& state_;
    std::unique_ptr<HttpListener> listener_;
};

// The limits of the HTTP layer for these options (--max-connections 0: sized from
// --max-num-seqs and --max-queue).
HttpLimits http_limits(const ServerOptions& o);

}  // namespace myriad::api
