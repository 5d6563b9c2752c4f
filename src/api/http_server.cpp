#include "api/http_server.h"

#include <httplib.h>

#include <cstdlib>

#include "api/anthropic_messages.h"
#include "api/api_error.h"
#include "api/chat_handler.h"
#include "api/client_connection.h"
#include "api/completions_handler.h"
#include "api/read_deadline.h"
#include "api/request_headers.h"
#include "api/responses_handler.h"
#include "api/tokenize_handler.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::api {

namespace {

void send_error(httplib::Response& res, int status, const std::string& message,
                const std::string& param = "", std::string_view path = "") {
    res.status = status;
    res.set_content(is_anthropic_path(path) ? dump(anthropic_error_json(status, message))
                                            : dump(error_json(status, message, param)),
                    "application/json");
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

// Headers whose meaning a proxy in front and this server could read differently (request
// smuggling): more than one Content-Length, or Content-Length beside Transfer-Encoding.
std::string ambiguous_framing(const httplib::Request& req) {
    const size_t lengths = req.get_header_value_count("Content-Length");
    if (lengths > 1) return "the request has more than one Content-Length header";
    if (lengths == 1 && req.has_header("Transfer-Encoding"))
        return "the request has both Content-Length and Transfer-Encoding";
    if (req.get_header_value_count("Transfer-Encoding") > 1)
        return "the request has more than one Transfer-Encoding header";
    return "";
}

}  // namespace

HttpServer::HttpServer(ServerState& state)
    : state_(state), server_(std::make_unique<httplib::Server>()) {
    httplib::Server& srv = *server_;
    const ServerOptions& o = state.options();
    // One thread per connection while it streams: room for every admitted request, plus a few so
    // /health and /metrics answer while the server is full.
    const size_t threads = static_cast<size_t>(o.max_num_seqs + o.max_queue + 8);
    srv.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    srv.set_keep_alive_timeout(2);
    // Streams are many small writes, one per token: send each at once (no Nagle delay waiting
    // for the client's ACK of the previous one).
    srv.set_tcp_nodelay(true);
    srv.set_keep_alive_max_count(1000);
    srv.set_read_timeout(30);
    srv.set_write_timeout(static_cast<time_t>(o.stream_write_timeout + 0.5));
    srv.set_payload_max_length(o.max_request_bytes);

    // Before the body is read: framing, then the API key.
    srv.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        const std::string framing = ambiguous_framing(req);
        if (!framing.empty()) {
            send_error(res, 400, framing + "; send exactly one of them");
            res.set_header("Connection", "close");
            state_.metrics().request_done("other", 400);
            return httplib::Server::HandlerResponse::Handled;
        }
        if (Auth::protects(req.path) &&
            !state_.auth().accepts(req.get_header_value("Authorization")) &&
            !(req.has_header("x-api-key") &&
              state_.auth().accepts_api_key(req.get_header_value("x-api-key")))) {
            send_error(res, 401,
                       "missing or wrong API key: send 'Authorization: Bearer <key>' (or "
                       "'x-api-key: <key>')",
                       "", req.path);
            state_.metrics().request_done(req.path, 401);
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    srv.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 413)
            send_error(res, 413,
                       fmt::format("the request body is larger than {} bytes "
                                   "(--max-request-bytes)",
                                   state_.options().max_request_bytes));
        else if (res.status == 414)
            send_error(res, 414, "the request's URL is longer than 8192 bytes");
        else if (res.status == 404)
            send_error(res, 404, fmt::format("no endpoint {} {}", req.method, req.path));
        else
            send_error(res, res.status, fmt::format("HTTP {}", res.status));
        state_.metrics().request_done("other", res.status);
    });
    srv.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "internal error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            send_error(res, 500, what);
        });

    for (const Route& route : kRoutes) {
        // The body is read here, through the limit, whatever its transfer encoding (httplib
        // checks Content-Length against it, not the decoded size of a chunked body).
        auto serve = [this, route](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader* content) {
            int status = 200;
            try {
                const size_t limit = state_.options().max_request_bytes;
                std::string body;
                const std::string length = req.get_header_value("Content-Length");
                bool too_large = !length.empty() && std::strtoull(length.c_str(), nullptr, 10) >
                                                        static_cast<unsigned long long>(limit);
                bool read = true;
                if (content && !too_large)
                    read = (*content)([&](const char* data, size_t len) {
                        if (body.size() + len > limit) {
                            too_large = true;
                            return false;
                        }
                        body.append(data, len);
                        return true;
                    });
                if (too_large || res.status == 413) {
                    res.set_header("Connection", "close");
                    fail(413, "", "the request body is larger than {} bytes (--max-request-bytes)",
                         limit);
                }
                if (!read) {
                    res.set_header("Connection", "close");
                    fail(400, "",
                         "the request body could not be read (broken chunked encoding, or the "
                         "client stopped sending it)");
                }
                if (route.needs_model) {
                    if (state_.draining()) fail(503, "", "the server is shutting down");
                    if (!state_.ready())
                        fail(503, "", "the model is still loading ({}); see GET /health",
                             state_.phase());
                }
                auto client = std::make_shared<ClientConnection>(req.remote_addr, req.remote_port,
                                                                 req.local_addr, req.local_port);
                ScopedClient scoped(*client);
                RequestHeaders headers([&req](std::string_view name) {
                    return req.get_header_value(std::string(name));
                });
                ScopedRequestHeaders scoped_headers(headers);
                Reply r = route.handler(state_, body);
                status = r.status;
                res.status = r.status;
                if (r.stream) {
                    res.set_header("Cache-Control", "no-cache");
                    auto stream = std::move(r.stream);
                    const ServerOptions& opt = state_.options();
                    const size_t max_unsent = opt.max_unsent_bytes;
                    const auto timeout = std::chrono::milliseconds(
                        static_cast<int64_t>(opt.stream_write_timeout * 1000));
                    res.set_chunked_content_provider(
                        "text/event-stream",
                        [stream, client, max_unsent, timeout](size_t, httplib::DataSink& sink) {
                            stream([&](std::string_view s) {
                                return client->wait_for_reader(s.size(), max_unsent, timeout) &&
                                       sink.write(s.data(), s.size());
                            });
                            sink.done();
                            return true;
                        });
                } else {
                    res.set_content(r.body, r.content_type);
                }
            } catch (const ApiError& e) {
                status = e.status();
                send_error(res, e.status(), e.what(), e.param(), req.path);
            } catch (const Error& e) {
                status = e.kind() == ErrorKind::BadInput ? 400 : 500;
                send_error(res, status, e.what());
            } catch (const std::exception& e) {
                status = 500;
                send_error(res, 500, e.what());
            }
            state_.metrics().request_done(route.path, status);
        };
        if (std::string_view(route.method) == "POST")
            srv.Post(route.path,
                     [serve](const httplib::Request& req, httplib::Response& res,
                             const httplib::ContentReader& content) { serve(req, res, &content); });
        else
            srv.Get(route.path, [serve](const httplib::Request& req, httplib::Response& res) {
                serve(req, res, nullptr);
            });
    }
}

HttpServer::~HttpServer() = default;

int HttpServer::bind(const std::string& host, int port) {
    int bound = port;
    bool ok = false;
    if (port == 0) {
        bound = server_->bind_to_any_port(host);
        ok = bound > 0;
    } else {
        ok = server_->bind_to_port(host, port);
    }
    if (!ok)
        bad_input("cannot listen on {}:{} (--host, --port): the address is in use or not local",
                  host, port);
    port_ = bound;
    read_deadline_ = std::make_unique<ReadDeadline>(
        bound, std::chrono::milliseconds(
                   static_cast<int64_t>(state_.options().request_read_timeout * 1000)));
    return bound;
}

void HttpServer::run() {
    server_->listen_after_bind();
}

void HttpServer::stop() {
    server_->stop();
    // Workers blocked on idle keep-alive or half-sent requests return now, not at their read
    // timeout (which each trickled byte restarts).
    if (port_ > 0) shutdown_connections(port_);
    read_deadline_.reset();
}

}  // namespace myriad::api
