// Whether the client of a non-streaming request has gone away. A stream notices a closed
// connection when a write fails; a non-streaming reply writes nothing until generation ends, so
// the handler asks instead: the request's socket (the HTTP layer reads nothing from it while the
// handler runs) is peeked without blocking; a peer that closed reads as end of file. An agent
// that times out and retries then frees its sequence at once instead of leaving it to run to
// max_tokens.
// It also applies back-pressure to a stream: while the client leaves more than --max-unsent-bytes
// of it unread (the socket's send queue), the request's sequences are paused; a client that reads
// nothing for the stream write timeout gets its request cancelled.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"

namespace myriad::api {

class ClientConnection {
  public:
    // `fd`: the request's socket, open while the handler runs (the HTTP layer only shuts it
    // down meanwhile, never closes it); the peer names the client in log lines.
    ClientConnection(int fd, std::string remote_addr, int remote_port);
    ClientConnection(const ClientConnection&) = delete;
    ClientConnection& operator=(const ClientConnection&) = delete;
    // True once the peer has closed (or reset) the connection. Looks at most every 50 ms, and
    // only after the request has run 100 ms (short requests never pay for the lookup).
    bool closed();

    // The request's sequences (Generation adds them), paused together by wait_for_reader.
    void hold(std::shared_ptr<RequestHandle> handle) { handles_.push_back(std::move(handle)); }
    // Before `next` more bytes of a stream: waits while the unsent output (what the socket has
    // not delivered) passes `max_unsent` or the socket takes no more, pausing the sequences
    // meanwhile. False (logged) once the client went away or read nothing for `timeout`.
    bool wait_for_reader(size_t next, size_t max_unsent, std::chrono::milliseconds timeout);

  private:
    void pause(bool on);

    int fd_;
    std::string remote_addr_;
    int remote_port_;
    bool closed_ = false;
    bool told_paused_ = false;  // logged once per request
    std::chrono::steady_clock::time_point start_, next_check_;
    std::vector<std::shared_ptr<RequestHandle>> handles_;
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
