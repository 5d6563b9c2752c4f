#include "api/http_listener.h"

#include <sys/resource.h>

#include <cerrno>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "api/http_connection.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::api {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

// Descriptors kept free of connections: model files, the engine's, a few for logs and pipes.
constexpr size_t kSpareDescriptors = 256;
// Connections still writing their last reply when stop() came get this long before the loop ends.
constexpr std::chrono::seconds kStopGrace{5};
// Warnings about refused or dropped connections: at most one per this, with a count.
constexpr std::chrono::seconds kWarnEvery{10};

// The open-file limit, raised from its soft to its hard value (each connection is a descriptor).
size_t open_file_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
    if (r.rlim_cur < r.rlim_max) {
        rlimit raised = r;
        raised.rlim_cur = r.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
    }
    return r.rlim_cur == RLIM_INFINITY ? size_t{1} << 20 : static_cast<size_t>(r.rlim_cur);
}

}  // namespace

struct HttpListener::Impl {
    Impl(HttpHandler& handler, HttpLimits l)
        : limits(l),
          ctx(handler, limits, pool, io),
          pool(l.request_threads, l.probe_threads),
          acceptor(io),
          retry(io),
          stop_timer(io) {}

    void accept();
    void on_accept(error_code ec, tcp::socket socket);
    bool make_room();  // closes the oldest connection not in a handler; false: none
    void refuse(tcp::socket& socket);
    void begin_stop();
    void note(const std::string& what);

    // Destroyed in reverse: the handler threads are joined while the context they use is still
    // there, and the loop (whose pending work holds the connections) goes last.
    HttpLimits limits;
    asio::io_context io{1};
    ConnectionContext ctx;
    HandlerPool pool;
    tcp::acceptor acceptor;
    asio::steady_timer retry, stop_timer;
    std::chrono::steady_clock::time_point last_warning{};
    size_t unwarned = 0;
};

void HttpListener::Impl::accept() {
    acceptor.async_accept(
        [this](error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void HttpListener::Impl::note(const std::string& what) {
    ++unwarned;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_warning < kWarnEvery) return;
    log::warn("{} connections open (--max-connections {}): {} ({} such since the last warning)",
              ctx.open.size(), limits.max_connections, what, unwarned);
    last_warning = now;
    unwarned = 0;
}

bool HttpListener::Impl::make_room() {
    // Half-read requests go first (a slow client's, or an attack's), then kept-alive idle
    // connections; connections in a handler are never dropped. Oldest first in each.
    HttpConnection* victim = nullptr;
    int victim_rank = 3;
    for (HttpConnection* c : ctx.open) {
        int rank = 3;
        switch (c->state()) {
            case HttpConnection::State::Closing:
                rank = 0;
                break;
            case HttpConnection::State::Reading:
                rank = 1;
                break;
            case HttpConnection::State::Idle:
                rank = 2;
                break;
            default:
                break;
        }
        if (rank < victim_rank ||
            (rank == victim_rank && rank < 3 && c->since() < victim->since())) {
            victim = c;
            victim_rank = rank;
        }
    }
    if (!victim) return false;
    note(fmt::format("closed {}, the oldest connection sending a request or idle", victim->peer()));
    victim->close_unless_handling();
    return true;
}

void HttpListener::Impl::refuse(tcp::socket& socket) {
    // Every connection is in a handler: a short answer, written without waiting, and close.
    const Reply r = ctx.handler.error(
        503,
        fmt::format("the server has {} connections open (--max-connections); retry later",
                    ctx.open.size()),
        "");
    const std::string out = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
        "Connection: close\r\n\r\n{}",
        r.content_type, r.body.size(), r.body);
    error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(out), ignored);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
}

void HttpListener::Impl::on_accept(error_code ec, tcp::socket socket) {
    if (ctx.stopping || ec == asio::error::operation_aborted) return;
    if (ec) {
        // Out of descriptors (or another passing failure): make room, try again shortly.
        if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
            ec.value() == ENFILE) {
            note(fmt::format("cannot accept ({}); closing one to make room", ec.message()));
            make_room();
        }
        retry.expires_after(std::chrono::milliseconds(50));
        retry.async_wait([this](error_code e) {
            if (!e && !ctx.stopping) accept();
        });
        return;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // a stream is many small writes
    const tcp::endpoint peer = socket.remote_endpoint(ignored);
    const std::string addr = peer.address().to_string();
    if (ctx.open.size() >= limits.max_connections && !make_room()) {
        note(fmt::format("refused {}:{}, every connection is in a handler", addr, peer.port()));
        refuse(socket);
    } else {
        std::make_shared<HttpConnection>(ctx, std::move(socket), addr, peer.port())->start();
    }
    accept();
}

void HttpListener::Impl::begin_stop() {
    if (ctx.stopping) return;
    ctx.stopping = true;
    error_code ignored;
    acceptor.close(ignored);
    retry.cancel();
    // close_unless_handling may close (and unlink) the connection: walk a copy.
    const std::vector<HttpConnection*> open(ctx.open.begin(), ctx.open.end());
    for (HttpConnection* c : open) c->close_unless_handling();
    if (ctx.open.empty()) return;
    stop_timer.expires_after(kStopGrace);
    stop_timer.async_wait([this](error_code e) {
        if (e) return;
        log::warn("{} connections still open {} s after stop: closed", ctx.open.size(),
                  kStopGrace.count());
        io.stop();
    });
}

HttpListener::HttpListener(HttpHandler& handler, HttpLimits limits)
    : impl_(std::make_unique<Impl>(handler, limits)) {
    impl_->ctx.on_closed = [impl = impl_.get()] {
        if (impl->ctx.stopping && impl->ctx.open.empty()) impl->stop_timer.cancel();
    };
}

HttpListener::~HttpListener() = default;

int HttpListener::bind(const std::string& host, int port) {
    Impl& m = *impl_;
    const size_t files = open_file_limit();
    const size_t most = files > kSpareDescriptors * 2 ? files - kSpareDescriptors : files / 2;
    if (m.limits.max_connections > most) {
        log::warn(
            "--max-connections {} needs more descriptors than the open-file limit {} leaves: "
            "{} connections (raise the limit: ulimit -n, or LimitNOFILE= under systemd)",
            m.limits.max_connections, files, most);
        m.limits.max_connections = most;
    }
    error_code ec;
    tcp::resolver resolver(m.io);
    const auto found = resolver.resolve(
        host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || found.empty())
        bad_input("cannot listen on {}:{} (--host, --port): {}", host, port,
                  ec ? ec.message() : "the host has no address");
    const tcp::endpoint endpoint = found.begin()->endpoint();
    m.acceptor.open(endpoint.protocol(), ec);
    if (!ec) m.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) m.acceptor.bind(endpoint, ec);
    if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) bad_input("cannot listen on {}:{} (--host, --port): {}", host, port, ec.message());
    m.accept();
    return m.acceptor.local_endpoint().port();
}

void HttpListener::run() {
    impl_->io.run();
    impl_->ctx.loop_ended = true;
}

void HttpListener::stop() {
    asio::post(impl_->io, [impl = impl_.get()] { impl->begin_stop(); });
}

}  // namespace myriad::api
