#include "api/http_server.h"

#include <algorithm>

#include "api/anthropic_messages.h"
#include "api/api_error.h"
#include "api/chat_handler.h"
#include "api/completions_handler.h"
#include "api/request_headers.h"
#include "api/responses_handler.h"
#include "api/tokenize_handler.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::api {

namespace {

Reply error_reply(int status, const std::string& message, const std::string& param = "",
                  std::string_view path = "") {
    Reply r;
    r.status = status;
    r.body = is_anthropic_path(path) ? dump(anthropic_error_json(status, message))
                                     : dump(error_json(status, message, param));
    return r;
}

Reply health(ServerState& state, std::string_view) {
    nlohmann::ordered_json j;
    Reply r;
    if (state.draining()) {
        r.status = 503;
        j = {{"status", "draining"}};
    } else if (!state.ready()) {
        r.status = 503;
        j = {{"status", "loading"},
             {"phase", state.phase()},
             {"elapsed_s", state.seconds_since_start()}};
    } else {
        j = {{"status", "ok"}};
    }
    r.body = dump(j);
    return r;
}

Reply metrics(ServerState& state, std::string_view) {
    EngineStats st;
    if (state.ready()) st = state.model().engine->stats();
    Reply r;
    r.body = state.metrics().render(st, state.ready());
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return r;
}

Reply models(ServerState& state, std::string_view) {
    nlohmann::ordered_json m = {{"id", state.options().served_model_name},
                                {"object", "model"},
                                {"created", state.started_at()},
                                {"owned_by", "myriad"},
                                {"root", state.options().served_model_name},
                                {"max_model_len", state.ready() ? state.model().max_model_len : 0}};
    Reply r;
    r.body = dump(nlohmann::ordered_json{{"object", "list"}, {"data", {m}}});
    return r;
}

// The routes: method, path, handler, whether it needs the model loaded (503 until then).
struct Route {
    const char* method;
    const char* path;
    Reply (*handler)(ServerState&, std::string_view body);
    bool needs_model;
};

constexpr Route kRoutes[] = {
    {"POST", "/v1/chat/completions", chat_completions, true},
    {"POST", "/v1/completions", completions, true},
    {"POST", "/tokenize", tokenize, true},
    {"POST", "/detokenize", detokenize, true},
    {"GET", "/tokenizer_info", tokenizer_info, true},
    {"POST", "/v1/messages", anthropic_messages, true},
    {"POST", "/v1/messages/count_tokens", anthropic_count_tokens, true},
    {"POST", "/v1/responses", responses, true},
    {"GET", "/v1/models", models, false},
    {"GET", "/health", health, false},
    {"GET", "/metrics", metrics, false},
};

const Route* find_route(const HttpRequest& req) {
    for (const Route& r : kRoutes)
        if (req.method == r.method && req.path == r.path) return &r;
    return nullptr;
}

}  // namespace

HttpLimits http_limits(const ServerOptions& o) {
    HttpLimits l;
    l.max_body_bytes = o.max_request_bytes;
    l.request_read_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.request_read_timeout * 1000));
    l.write_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.stream_write_timeout * 1000));
    l.keep_alive_timeout = std::min(l.keep_alive_timeout, l.request_read_timeout);
    l.max_unsent_bytes = o.max_unsent_bytes;
    // A thread for every request that can be admitted, plus a few so /health and /metrics
    // answer while the server is full.
    l.request_threads = static_cast<size_t>(o.max_num_seqs + o.max_queue);
    l.probe_threads = 8;
    // Idle and half-read connections cost a socket and a buffer, no thread: room for every
    // admitted request several times over, and for slow clients beside them.
    l.max_connections = o.max_connections > 0
                            ? static_cast<size_t>(o.max_connections)
                            : std::max<size_t>(1024, 4 * (l.request_threads + l.probe_threads));
    return l;
}

HttpServer::HttpServer(ServerState& state)
    : state_(state),
      listener_(std::make_unique<HttpListener>(static_cast<HttpHandler&>(*this),
                                               http_limits(state.options()))) {}

HttpServer::~HttpServer() = default;

int HttpServer::bind(const std::string& host, int port) {
    return listener_->bind(host, port);
}

void HttpServer::run() {
    listener_->run();
}

void HttpServer::stop() {
    listener_->stop();
}

HttpHandler::Kind HttpServer::route(const HttpRequest& head, std::optional<Reply>& refusal) {
    const Route* route = find_route(head);
    if (!route) {
        refusal = error(404, fmt::format("no endpoint {} {}", head.method, head.path), head.path);
        return Kind::Probe;
    }
    const RequestHeaders& h = *head.headers;
    const std::string api_key = h.get("x-api-key");
    if (Auth::protects(head.path) && !state_.auth().accepts(h.get("Authorization")) &&
        !(!api_key.empty() && state_.auth().accepts_api_key(api_key))) {
        refusal = error_reply(401,
                              "missing or wrong API key: send 'Authorization: Bearer <key>' (or "
                              "'x-api-key: <key>')",
                              "", head.path);
        state_.metrics().request_done(head.path, 401);
    }
    return route->needs_model ? Kind::Request : Kind::Probe;
}

Reply HttpServer::error(int status, const std::string& message, std::string_view path) {
    state_.metrics().request_done("other", status);
    return error_reply(status, message, "", path);
}

Reply HttpServer::handle(const HttpRequest& req) {
    const Route* route = find_route(req);
    if (!route) return error(404, fmt::format("no endpoint {} {}", req.method, req.path), req.path);
    Reply r;
    try {
        if (route->needs_model) {
            if (state_.draining()) fail(503, "", "the server is shutting down");
            if (!state_.ready())
                fail(503, "", "the model is still loading ({}); see GET /health", state_.phase());
        }
        ScopedRequestHeaders scoped_headers(*req.headers);
        r = route->handler(state_, req.body);
    } catch (const ApiError& e) {
        r = error_reply(e.status(), e.what(), e.param(), req.path);
    } catch (const Error& e) {
        r = error_reply(e.kind() == ErrorKind::BadInput ? 400 : 500, e.what());
    } catch (const std::exception& e) {
        r = error_reply(500, e.what());
    } catch (...) {
        r = error_reply(500, "internal error");
    }
    state_.metrics().request_done(route->path, r.status);
    return r;
}

}  // namespace myriad::api
