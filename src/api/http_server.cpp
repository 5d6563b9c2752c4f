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

constexpr std::string_view kModelsPath = "/v1/models";

nlohmann::ordered_json model_object(ServerState& state) {
    return {{"id", state.options().served_model_name},
            {"object", "model"},
            {"created", state.started_at()},
            {"owned_by", "myriad"},
            {"root", state.options().served_model_name},
            {"max_model_len", state.ready() ? state.model().max_model_len : 0}};
}

Reply models(ServerState& state, const HttpRequest&) {
    Reply r;
    r.body = dump(nlohmann::ordered_json{{"object", "list"}, {"data", {model_object(state)}}});
    return r;
}

// GET /v1/models/{model} (OpenAI's "retrieve model"); the path arrives percent-decoded, so a name
// with a "/" may be sent as %2F.
Reply model_by_id(ServerState& state, const HttpRequest& req) {
    const std::string_view id = std::string_view(req.path).substr(kModelsPath.size() + 1);
    if (id != state.options().served_model_name)
        fail(404, "model",
             "the model '{}' does not exist: this server serves '{}' (GET /v1/models)", id,
             state.options().served_model_name);
    Reply r;
    r.body = dump(model_object(state));
    return r;
}

template <Reply (*Handler)(ServerState&, std::string_view)>
Reply with_body(ServerState& state, const HttpRequest& req) {
    return Handler(state, req.body);
}

Reply health_route(ServerState& state, const HttpRequest&) {
    return health(state, {});
}

Reply metrics_route(ServerState& state, const HttpRequest&) {
    return metrics(state, {});
}

// The routes: method, path (a prefix when it ends in "/"), handler, whether it needs the model
// loaded (503 until then).
struct Route {
    const char* method;
    std::string_view path;
    Reply (*handler)(ServerState&, const HttpRequest&);
    bool needs_model;
};

constexpr Route kRoutes[] = {
    {"POST", "/v1/chat/completions", with_body<chat_completions>, true},
    {"POST", "/v1/completions", with_body<completions>, true},
    {"POST", "/tokenize", with_body<tokenize>, true},
    {"POST", "/detokenize", with_body<detokenize>, true},
    {"GET", "/tokenizer_info", with_body<tokenizer_info>, true},
    {"POST", "/v1/messages", with_body<anthropic_messages>, true},
    {"POST", "/v1/messages/count_tokens", with_body<anthropic_count_tokens>, true},
    {"POST", "/v1/responses", with_body<responses>, true},
    {"GET", kModelsPath, models, false},
    {"GET", "/v1/models/", model_by_id, false},
    {"GET", "/health", health_route, false},
    {"GET", "/metrics", metrics_route, false},
};

bool route_matches(const Route& r, const HttpRequest& req) {
    if (req.method != r.method) return false;
    if (r.path.back() == '/')
        return req.path.size() > r.path.size() && req.path.compare(0, r.path.size(), r.path) == 0;
    return req.path == r.path;
}

const Route* find_route(const HttpRequest& req) {
    for (const Route& r : kRoutes)
        if (route_matches(r, req)) return &r;
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
        r = route->handler(state_, req);
    } catch (const ApiError& e) {
        r = error_reply(e.status(), e.what(), e.param(), req.path);
    } catch (const Error& e) {
        r = error_reply(e.kind() == ErrorKind::BadInput ? 400 : 500, e.what());
    } catch (const std::exception& e) {
        r = error_reply(500, e.what());
    } catch (...) {
        r = error_reply(500, "internal error");
    }
    state_.metrics().request_done(std::string(route->path), r.status);
    return r;
}

}  // namespace myriad::api
