#include "api/http_server.h"

#include <httplib.h>

#include "api/anthropic_messages.h"
#include "api/api_error.h"
#include "api/chat_handler.h"
#include "api/client_connection.h"
#include "api/completions_handler.h"
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

using Handler = Reply (*)(ServerState&, std::string_view);

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
    srv.set_write_timeout(30);
    srv.set_payload_max_length(o.max_request_bytes);

    srv.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
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

    auto post = [this](const char* path, Handler fn, bool needs_model) {
        server_->Post(path, [this, path, fn, needs_model](const httplib::Request& req,
                                                          httplib::Response& res) {
            int status = 200;
            try {
                if (state_.draining()) fail(503, "", "the server is shutting down");
                if (needs_model && !state_.ready())
                    fail(503, "", "the model is still loading ({}); see GET /health",
                         state_.phase());
                ClientConnection client(req.remote_addr, req.remote_port, req.local_addr,
                                        req.local_port);
                ScopedClient scoped(client);
                Reply r = fn(state_, req.body);
                status = r.status;
                res.status = r.status;
                if (r.stream) {
                    res.set_header("Cache-Control", "no-cache");
                    auto stream = std::move(r.stream);
                    res.set_chunked_content_provider("text/event-stream",
                                                     [stream](size_t, httplib::DataSink& sink) {
                                                         stream([&sink](std::string_view s) {
                                                             return sink.write(s.data(), s.size());
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
            state_.metrics().request_done(path, status);
        });
    };
    post("/v1/chat/completions", chat_completions, true);
    post("/v1/completions", completions, true);
    post("/tokenize", tokenize, true);
    post("/detokenize", detokenize, true);
    post("/v1/messages", anthropic_messages, true);
    post("/v1/messages/count_tokens", anthropic_count_tokens, true);
    post("/v1/responses", responses, true);

    srv.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        nlohmann::ordered_json j;
        if (state_.draining()) {
            res.status = 503;
            j = {{"status", "draining"}};
        } else if (!state_.ready()) {
            res.status = 503;
            j = {{"status", "loading"},
                 {"phase", state_.phase()},
                 {"elapsed_s", state_.seconds_since_start()}};
        } else {
            j = {{"status", "ok"}};
        }
        res.set_content(dump(j), "application/json");
    });
    srv.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        EngineStats st;
        if (state_.ready()) st = state_.model().engine->stats();
        res.set_content(state_.metrics().render(st, state_.ready()),
                        "text/plain; version=0.0.4; charset=utf-8");
    });
    srv.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        nlohmann::ordered_json m = {
            {"id", state_.options().served_model_name},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "myriad"},
            {"root", state_.options().served_model_name},
            {"max_model_len", state_.ready() ? state_.model().max_model_len : 0}};
        res.set_content(dump(nlohmann::ordered_json{{"object", "list"}, {"data", {m}}}),
                        "application/json");
        state_.metrics().request_done("/v1/models", 200);
    });
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
    return bound;
}

void HttpServer::run() {
    server_->listen_after_bind();
}

void HttpServer::stop() {
    server_->stop();
}

}  // namespace myriad::api
