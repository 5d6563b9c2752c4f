// One accepted HTTP/1.1 connection, driven by the event loop: read a request (Beast's parser over
// our own buffer, so every byte that arrives is seen and the deadline holds however they
// trickle), hand it to a handler thread, write its reply (or its stream, chunk by chunk, each
// written by the loop while the handler thread waits), then the next request from the same
// buffer: pipelined requests are answered in order. Only the event loop touches the socket,
// but for the handler's non-blocking looks at it (ClientConnection); while a handler runs the
// socket may be shut down, never closed, so its descriptor stays the handler's.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "api/handler_pool.h"
#include "api/http_listener.h"

namespace myriad::api {

class HttpConnection;

// What a listener's connections share. Event-loop thread only, but `loop_ended`.
struct ConnectionContext {
    ConnectionContext(HttpHandler& h, const HttpLimits& l, HandlerPool& p,
                      boost::asio::io_context& i)
        : handler(h), limits(l), pool(p), io(i) {}
    HttpHandler& handler;
    const HttpLimits& limits;
    HandlerPool& pool;
    boost::asio::io_context& io;
    std::list<HttpConnection*> open;  // every open connection, oldest first
    bool stopping = false;
    std::function<void()> on_closed;      // after a connection left `open`
    std::atomic<bool> loop_ended{false};  // handler threads stop waiting for writes
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
  public:
    using Clock = std::chrono::steady_clock;
    enum class State {
        Reading,   // a request (from accept, or its first byte on a kept-alive connection)
        Idle,      // kept alive, waiting for the next request's first byte
        Handling,  // in a handler (a stream too): the socket is the handler's to look at
        Writing,   // a whole reply going out
        Closing,   // answered with Connection: close; reading what the client still sends
        Closed,
    };

    HttpConnection(ConnectionContext& ctx, boost::asio::ip::tcp::socket socket,
                   std::string remote_addr, int remote_port);
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    void start();
    State state() const { return state_; }
    Clock::time_point since() const { return since_; }  // when the state began
    const std::string& peer() const { return peer_; }
    // Closes now, unless a handler holds it (then it closes once its reply is out).
    void close_unless_handling();

  private:
    using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;
    struct StreamWrite;

    void set_state(State s);
    void arm(std::chrono::milliseconds after);
    void on_timer();
    void read();
    void on_read(boost::system::error_code ec, size_t n);
    void parse();
    bool on_header();  // false: answered or waiting; parse() stops
    void on_parse_error(boost::system::error_code ec);
    void on_request();
    static void run_handler(std::shared_ptr<HttpConnection> self);
    bool send_from_handler(std::string bytes);
    void write_stream_part(const std::shared_ptr<StreamWrite>& w);
    void after_stream(bool alive);
    void write_reply(const Reply& r, bool keep_alive);
    void write_error(int status, const std::string& message, bool keep_alive);
    void next_request();
    void linger();
    void discard(boost::system::error_code ec, size_t n);
    void close();
    std::string stream_head(const Reply& r) const;

    ConnectionContext& ctx_;
    boost::asio::ip::tcp::socket socket_;
    const int fd_;
    std::string remote_addr_;
    int remote_port_;
    std::string peer_;  // "addr:port" for log lines
    std::list<HttpConnection*>::iterator in_open_;
    boost::asio::steady_timer timer_;
    uint64_t timer_generation_ = 0;
    State state_ = State::Reading;
    Clock::time_point since_;
    boost::beast::flat_buffer buffer_;
    std::optional<Parser> parser_;
    bool header_checked_ = false;
    std::atomic<bool> keep_alive_{true};  // read by a stream's handler thread too
    bool probe_ = false;
    bool http10_ = false;  // the request is HTTP/1.0: a stream goes out unchunked, then closes
    bool broken_ = false;  // a write failed or timed out: no further reply on it
    size_t discarded_ = 0;
    RequestHeaders headers_;
    HttpRequest request_;
    std::string out_;  // the bytes being written (a whole reply, or one stream part)
};

}  // namespace myriad::api
