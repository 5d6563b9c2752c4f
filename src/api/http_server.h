// The HTTP front: cpp-httplib's server with a thread pool sized for every admitted request plus a
// few for probes, short keep-alive, the body limit (on the decoded body, chunked or not), refusal
// of ambiguous framing, API-key checks, and the route table (http_server.cpp) of the
// OpenAI-compatible API, /health, /metrics and /tokenize, /detokenize. Handlers read the
// request's headers through current_request_headers() (request_headers.h).
#pragma once

#include <memory>
#include <string>

#include "api/server_state.h"

namespace httplib {
class Server;
}

namespace myriad::api {

class ReadDeadline;

class HttpServer {
  public:
    explicit HttpServer(ServerState& state);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds host:port (bad input naming both when it cannot); returns the port (for port 0).
    int bind(const std::string& host, int port);
    // Serves until stop(); returns once the listener closed and the workers finished.
    void run();
    // Closes the listener and every open connection (idle or half-read) at once.
    void stop();

  private:
    ServerState& state_;
    std::unique_ptr<httplib::Server> server_;
    int port_ = 0;
    std::unique_ptr<ReadDeadline> read_deadline_;
};

}  // namespace myriad::api
