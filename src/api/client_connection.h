// Whether the client of a non-streaming request has gone away. A stream notices a closed
// connection when a write fails; a non-streaming reply writes nothing until generation ends, so
// the handler asks instead: the request's TCP connection is found among the process's sockets by
// its two endpoints (cpp-httplib 0.11 does not hand handlers the socket) and peeked without
// blocking; a peer that closed reads as end of file. An agent that times out and retries then
// frees its sequence at once instead of leaving it to run to max_tokens.
#pragma once

#include <chrono>
#include <string>

namespace myriad::api {

class ClientConnection {
  public:
    ClientConnection(std::string remote_addr, int remote_port, std::string local_addr,
                     int local_port);
    // True once the peer has closed (or reset) the connection. Looks at most every 50 ms, and
    // only after the request has run 100 ms (short requests never pay for the lookup).
    bool closed();

  private:
    int find_socket() const;

    std::string remote_addr_, local_addr_;
    int remote_port_, local_port_;
    int fd_ = -2;  // -2: not looked up yet; -1: not found
    bool closed_ = false;
    std::chrono::steady_clock::time_point start_, next_check_;
};

// The connection of the request this thread is handling (set by the HTTP server around a
// handler call), or null.
ClientConnection* current_client();

class ScopedClient {
  public:
    explicit ScopedClient(ClientConnection& c);
    ~ScopedClient();
    ScopedClient(const ScopedClient&) = delete;
    ScopedClient& operator=(const ScopedClient&) = delete;

  private:
    ClientConnection* previous_;
};

// current_client() && current_client()->closed().
bool client_gone();

}  // namespace myriad::api
