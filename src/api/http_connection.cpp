#include "api/http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>

#include <condition_variable>
#include <mutex>

#include "api/client_connection.h"
#include "util/log.h"

namespace myriad::api {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// After an answer that closes the connection, what the client still sends is read and dropped
// for this long (or this much), so closing does not reset the connection before the client has
// read the answer.
constexpr std::chrono::milliseconds kLinger{2000};
constexpr size_t kLingerBytes = size_t{4} << 20;
constexpr size_t kReadChunk = 65536;

long long seconds(std::chrono::milliseconds d) {
    return static_cast<long long>((d.count() + 500) / 1000);
}

// "HTTP/1.1 200 OK\r\n" and the fields every reply carries.
std::string status_head(int status, bool keep_alive) {
    const http::status known = http::int_to_status(static_cast<unsigned>(status));
    const std::string_view reason = known == http::status::unknown
                                        ? std::string_view("Unknown")
                                        : std::string_view(http::obsolete_reason(known));
    std::string head = fmt::format("HTTP/1.1 {} {}\r\n", status, reason);
    if (!keep_alive) head += "Connection: close\r\n";
    return head;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The target's path without its query, percent-decoded (RFC 3986 §2.1: "%2F" in a model name is
// the name's "/"); nullopt for a "%" not followed by two hex digits, or an encoded NUL.
std::optional<std::string> path_of(std::string_view target) {
    const std::string_view raw = target.substr(0, target.find('?'));
    std::string path;
    path.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '%') {
            path += raw[i];
            continue;
        }
        if (i + 2 >= raw.size()) return std::nullopt;
        const int hi = hex_digit(raw[i + 1]), lo = hex_digit(raw[i + 2]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return std::nullopt;
        path += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return path;
}

}  // namespace

// One part of a stream handed from the handler thread to the event loop, and its outcome.
struct HttpConnection::StreamWrite {
    std::string bytes;
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false, ok = false;
    void finish(bool success) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            done = true;
            ok = success;
        }
        cv.notify_all();
    }
};

HttpConnection::HttpConnection(ConnectionContext& ctx, asio::ip::tcp::socket socket,
                               std::string remote_addr, int remote_port)
    : ctx_(ctx),
      socket_(std::move(socket)),
      fd_(socket_.native_handle()),
      remote_addr_(std::move(remote_addr)),
      remote_port_(remote_port),
      peer_(fmt::format("{}:{}", remote_addr_, remote_port_)),
      timer_(ctx.io),
      buffer_(ctx.limits.max_header_bytes + kReadChunk),
      headers_([this](std::string_view name) {
          if (!parser_) return std::string();
          const auto& req = parser_->get();
          auto it = req.find(name);
          return it == req.end() ? std::string() : std::string(it->value());
      }) {}

void HttpConnection::start() {
    in_open_ = ctx_.open.insert(ctx_.open.end(), this);
    set_state(State::Reading);
    arm(ctx_.limits.request_read_timeout);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(ctx_.limits.max_header_bytes));
    parser_->body_limit(ctx_.limits.max_body_bytes);
    read();
}

void HttpConnection::set_state(State s) {
    state_ = s;
    since_ = Clock::now();
}

void HttpConnection::arm(std::chrono::milliseconds after) {
    const uint64_t generation = ++timer_generation_;
    timer_.expires_after(after);
    timer_.async_wait([self = shared_from_this(), generation](error_code ec) {
        if (!ec && generation == self->timer_generation_) self->on_timer();
    });
}

void HttpConnection::on_timer() {
    const HttpLimits& l = ctx_.limits;
    switch (state_) {
        case State::Reading: {
            error_code ignored;
            socket_.cancel(ignored);  // the pending read: the answer goes out instead
            log::warn(
                "client {} did not send a whole request within {} s (--request-read-timeout): "
                "connection closed",
                peer_, seconds(l.request_read_timeout));
            write_error(408,
                        fmt::format("the request was not received whole within {} s "
                                    "(--request-read-timeout)",
                                    seconds(l.request_read_timeout)),
                        false);
            return;
        }
        case State::Idle:
        case State::Closing:
            close();
            return;
        case State::Writing:
            log::warn(
                "client {} took none of its reply for {} s (--stream-write-timeout): "
                "connection closed",
                peer_, seconds(l.write_timeout));
            close();
            return;
        case State::Handling: {
            // A stream part the client takes nothing of: the pending write fails, the handler
            // ends the stream; the socket stays open (its descriptor is the handler's) till then.
            log::warn(
                "client {} took none of its stream for {} s (--stream-write-timeout): "
                "its request is cancelled",
                peer_, seconds(l.write_timeout));
            broken_ = true;
            error_code ignored;
            socket_.shutdown(asio::socket_base::shutdown_both, ignored);
            socket_.cancel(ignored);
            return;
        }
        case State::Closed:
            return;
    }
}

void HttpConnection::read() {
    const size_t room = buffer_.max_size() - buffer_.size();
    if (room == 0) {  // cannot happen: the parser fails at the header limit first
        close();
        return;
    }
    socket_.async_read_some(
        buffer_.prepare(std::min(room, kReadChunk)),
        [self = shared_from_this()](error_code ec, size_t n) { self->on_read(ec, n); });
}

void HttpConnection::on_read(error_code ec, size_t n) {
    if (state_ == State::Closed || state_ == State::Writing) return;  // cancelled for an answer
    if (state_ == State::Closing) {
        discard(ec, n);
        return;
    }
    if (ec) {  // the client went away (or stop() closed it)
        close();
        return;
    }
    buffer_.commit(n);
    if (state_ == State::Idle) {  // the next request begins: its deadline starts now
        set_state(State::Reading);
        arm(ctx_.limits.request_read_timeout);
    }
    parse();
}

void HttpConnection::parse() {
    while (buffer_.size() > 0) {
        error_code ec;
        const size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == http::error::need_more) break;
        if (ec) {
            on_parse_error(ec);
            return;
        }
        if (!header_checked_ && parser_->is_header_done()) {
            header_checked_ = true;
            if (!on_header()) return;
        }
        if (parser_->is_done()) {
            on_request();
            return;
        }
        if (used == 0) break;
    }
    read();
}

bool HttpConnection::on_header() {
    const HttpLimits& l = ctx_.limits;
    const auto& req = parser_->get();
    const bool body_follows = parser_->chunked() || parser_->content_length().value_or(0) > 0;
    request_ = HttpRequest{};
    request_.method = std::string(req.method_string());
    request_.headers = &headers_;
    if (req.target().size() > l.max_url_bytes) {
        write_error(414, fmt::format("the request's URL is longer than {} bytes", l.max_url_bytes),
                    false);
        return false;
    }
    std::optional<std::string> path = path_of(req.target());
    if (!path) {
        write_error(400,
                    "the request's URL has a '%' not followed by two hex digits (or an encoded "
                    "NUL): percent-encode '%' itself as %25",
                    false);
        return false;
    }
    request_.path = std::move(*path);
    // Framing a proxy in front could read differently from us (request smuggling): two equal
    // Content-Length fields (unequal ones, and Content-Length beside Transfer-Encoding, the
    // parser refuses itself), or a transfer coding that is not chunked.
    if (req.count(http::field::content_length) > 1) {
        write_error(400, "the request has more than one Content-Length header; send exactly one",
                    false);
        return false;
    }
    if (req.count(http::field::transfer_encoding) > 0 && !parser_->chunked()) {
        write_error(400,
                    "the request's Transfer-Encoding does not end in chunked: send a chunked body "
                    "or a Content-Length",
                    false);
        return false;
    }
    std::optional<Reply> refusal;
    probe_ = ctx_.handler.route(request_, refusal) == HttpHandler::Kind::Probe;
    if (refusal) {
        // The body is not read: the connection cannot go on past it.
        write_reply(*refusal, req.keep_alive() && !body_follows && !ctx_.stopping);
        return false;
    }
    const auto expect = req[http::field::expect];
    if (body_follows && req.version() >= 11 && boost::beast::iequals(expect, "100-continue")) {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        asio::async_write(socket_, asio::buffer(kContinue),
                          [self = shared_from_this()](error_code ec, size_t) {
                              // Not reading any more: the deadline struck, its answer is out.
                              if (self->state_ != State::Reading) return;
                              if (ec) {
                                  self->close();
                                  return;
                              }
                              self->parse();
                          });
        return false;
    }
    return true;
}

void HttpConnection::on_parse_error(error_code ec) {
    const HttpLimits& l = ctx_.limits;
    if (ec == http::error::body_limit) {
        write_error(413,
                    fmt::format("the request body is larger than {} bytes (--max-request-bytes)",
                                l.max_body_bytes),
                    false);
    } else if (ec == http::error::header_limit) {
        // The parser takes the request line as soon as it is whole: no target yet means the
        // line alone ran past the limit (a URL too long: 414); else the fields are too large.
        const size_t target = parser_->get().target().size();
        if (target == 0 || target > l.max_url_bytes)
            write_error(414,
                        fmt::format("the request's URL is longer than {} bytes", l.max_url_bytes),
                        false);
        else
            write_error(431,
                        fmt::format("the request's header fields are larger than {} bytes",
                                    l.max_header_bytes),
                        false);
    } else if (ec == http::error::multiple_content_length) {
        write_error(400,
                    "the request has more than one Content-Length header, with different values; "
                    "send exactly one",
                    false);
    } else if (ec == http::error::bad_transfer_encoding || ec == http::error::bad_content_length) {
        write_error(400,
                    "the request's framing is ambiguous or invalid (Content-Length beside "
                    "Transfer-Encoding, two Transfer-Encoding headers, or a Content-Length that is "
                    "not a number); send exactly one of Content-Length and Transfer-Encoding: "
                    "chunked",
                    false);
    } else {
        write_error(400, fmt::format("the request is not valid HTTP/1.1: {}", ec.message()), false);
    }
}

void HttpConnection::on_request() {
    set_state(State::Handling);
    ++timer_generation_;  // no read deadline while a handler has it
    timer_.cancel();
    keep_alive_ = parser_->get().keep_alive() && !ctx_.stopping;
    http10_ = parser_->get().version() < 11;
    request_.body = std::move(parser_->get().body());
    auto job = [self = shared_from_this()]() mutable { run_handler(std::move(self)); };
    if (!ctx_.pool.try_run(std::move(job), probe_)) {
        write_error(probe_ ? 503 : 429,
                    probe_ ? "the server is answering too many probes at once; retry"
                           : fmt::format("the server is busy: {} requests are being handled "
                                         "(--max-num-seqs + --max-queue); retry later",
                                         ctx_.limits.request_threads),
                    keep_alive_);
    }
}

void HttpConnection::run_handler(std::shared_ptr<HttpConnection> self) {
    HttpConnection& c = *self;
    ClientConnection client(c.fd_, c.remote_addr_, c.remote_port_);
    ScopedClient scoped(client);
    Reply reply = c.ctx_.handler.handle(c.request_);
    if (!reply.stream) {
        asio::post(c.ctx_.io, [self = std::move(self), reply = std::move(reply)]() mutable {
            self->write_reply(reply, self->keep_alive_);
        });
        return;
    }
    const size_t max_unsent = c.ctx_.limits.max_unsent_bytes;
    const auto timeout = c.ctx_.limits.write_timeout;
    // An HTTP/1.0 client knows no chunked coding (RFC 9112 §7.1): its stream is the bare body,
    // ended by closing the connection.
    const bool chunked = !c.http10_;
    if (!chunked) c.keep_alive_ = false;
    bool alive = true, head_sent = false;
    const StreamWriter write = [&](std::string_view s) {
        if (!alive) return false;
        if (s.empty()) return true;  // an empty chunk would end the stream
        if (!client.wait_for_reader(s.size(), max_unsent, timeout)) return alive = false;
        std::string part = head_sent ? std::string() : c.stream_head(reply);
        head_sent = true;
        if (chunked) part += fmt::format("{:x}\r\n", s.size());
        part += s;
        if (chunked) part += "\r\n";
        return alive = c.send_from_handler(std::move(part));
    };
    reply.stream(write);
    if (alive && (chunked || !head_sent)) {
        std::string tail = head_sent ? std::string() : c.stream_head(reply);
        if (chunked) tail += "0\r\n\r\n";
        alive = c.send_from_handler(std::move(tail));
    }
    asio::post(c.ctx_.io, [self = std::move(self), alive] { self->after_stream(alive); });
}

std::string HttpConnection::stream_head(const Reply& r) const {
    return status_head(r.status, keep_alive_) +
           fmt::format("Content-Type: {}\r\nCache-Control: no-cache\r\n{}\r\n", r.content_type,
                       http10_ ? "" : "Transfer-Encoding: chunked\r\n");
}

bool HttpConnection::send_from_handler(std::string bytes) {
    auto w = std::make_shared<StreamWrite>();
    w->bytes = std::move(bytes);
    asio::post(ctx_.io, [self = shared_from_this(), w] { self->write_stream_part(w); });
    std::unique_lock<std::mutex> lock(w->mutex);
    while (!w->done) {
        if (ctx_.loop_ended) return false;  // the loop was stopped: nobody will write it
        w->cv.wait_for(lock, std::chrono::milliseconds(100));
    }
    return w->ok;
}

void HttpConnection::write_stream_part(const std::shared_ptr<StreamWrite>& w) {
    if (broken_ || state_ == State::Closed) {
        w->finish(false);
        return;
    }
    arm(ctx_.limits.write_timeout);
    asio::async_write(socket_, asio::buffer(w->bytes),
                      [self = shared_from_this(), w](error_code ec, size_t) {
                          ++self->timer_generation_;
                          self->timer_.cancel();
                          if (ec) self->broken_ = true;
                          w->finish(!ec);
                      });
}

void HttpConnection::after_stream(bool alive) {
    if (!alive || broken_ || !keep_alive_ || ctx_.stopping) {
        close();
        return;
    }
    next_request();
}

void HttpConnection::write_reply(const Reply& r, bool keep_alive) {
    if (state_ == State::Closed) return;
    if (broken_) {
        close();
        return;
    }
    keep_alive_ = keep_alive && !ctx_.stopping;
    out_ = status_head(r.status, keep_alive_);
    out_ += fmt::format("Content-Type: {}\r\nContent-Length: {}\r\n\r\n", r.content_type,
                        r.body.size());
    out_ += r.body;
    set_state(State::Writing);
    arm(ctx_.limits.write_timeout);
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](error_code ec, size_t) {
                          if (self->state_ != State::Writing) return;  // closed meanwhile
                          if (ec) {
                              self->close();
                              return;
                          }
                          self->out_.clear();
                          if (self->keep_alive_ && !self->ctx_.stopping)
                              self->next_request();
                          else
                              self->linger();
                      });
}

void HttpConnection::write_error(int status, const std::string& message, bool keep_alive) {
    const std::string path = request_.path;
    write_reply(ctx_.handler.error(status, message, path), keep_alive);
}

void HttpConnection::next_request() {
    if (ctx_.stopping) {
        close();
        return;
    }
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(ctx_.limits.max_header_bytes));
    parser_->body_limit(ctx_.limits.max_body_bytes);
    header_checked_ = false;
    request_ = HttpRequest{};
    if (buffer_.size() > 0) {  // pipelined: the next request is here already
        set_state(State::Reading);
        arm(ctx_.limits.request_read_timeout);
        parse();
    } else {
        set_state(State::Idle);
        arm(ctx_.limits.keep_alive_timeout);
        read();
    }
}

void HttpConnection::linger() {
    if (ctx_.stopping) {
        close();
        return;
    }
    set_state(State::Closing);
    error_code ignored;
    socket_.shutdown(asio::socket_base::shutdown_send, ignored);
    buffer_.clear();
    discarded_ = 0;
    arm(kLinger);
    read();
}

void HttpConnection::discard(error_code ec, size_t n) {
    discarded_ += n;
    if (ec || discarded_ > kLingerBytes) {
        close();
        return;
    }
    buffer_.clear();
    read();
}

void HttpConnection::close_unless_handling() {
    if (state_ == State::Handling) {
        keep_alive_ = false;  // closes once its reply is out
        return;
    }
    if (state_ == State::Writing) {
        keep_alive_ = false;  // the reply goes out (its write timeout holds), then it closes
        return;
    }
    close();
}

void HttpConnection::close() {
    if (state_ == State::Closed) return;
    set_state(State::Closed);
    ++timer_generation_;
    timer_.cancel();
    error_code ignored;
    socket_.shutdown(asio::socket_base::shutdown_both, ignored);
    socket_.close(ignored);
    ctx_.open.erase(in_open_);
    if (ctx_.on_closed) ctx_.on_closed();
}

}  // namespace myriad::api
