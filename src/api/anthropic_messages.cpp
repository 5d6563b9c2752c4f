#include "api/anthropic_messages.h"

#include <memory>

#include "api/anthropic_request.h"
#include "api/api_error.h"
#include "api/generation_core.h"
#include "api/response_common.h"
#include "api/sse.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

const char* anthropic_error_type(int status) {
    switch (status) {
        case 400:
            return "invalid_request_error";
        case 401:
            return "authentication_error";
        case 403:
            return "permission_error";
        case 404:
            return "not_found_error";
        case 413:
            return "request_too_large";
        case 429:
            return "rate_limit_error";
        case 503:
        case 529:
            return "overloaded_error";
        default:
            return status < 500 ? "invalid_request_error" : "api_error";
    }
}

// The reply's content blocks, built the same way for both modes; when streaming each change is
// also written as its event. One block is open at a time.
class MessagesRenderer : public Renderer {
  public:
    MessagesRenderer(const ChatRequest& r, int64_t prompt_tokens)
        : model_(r.model), stream_(r.stream), prompt_tokens_(prompt_tokens) {}

    bool start(const StreamWriter&) override { return true; }

    bool event(ChoiceEvent& e, const StreamWriter& w) override {
        if (!begin(w, e.cached_tokens)) return false;
        cached_ = e.cached_tokens;
        const OutputDelta& d = e.delta;
        if (!d.reasoning.empty() && !append(w, Open::Thinking, d.reasoning)) return false;
        if (!d.content.empty() && !append(w, Open::Text, d.content)) return false;
        for (const ToolCallDelta& t : d.tool_calls) {
            if (open_ != Open::Tool || t.index != open_call_) {
                if (!close(w)) return false;
                const std::string id = t.id && !t.id->empty() ? *t.id : random_id("toolu");
                if (!open(w, Open::Tool,
                          J{{"type", "tool_use"},
                            {"id", id},
                            {"name", t.name.value_or("")},
                            {"input", J::object()}}))
                    return false;
                open_call_ = t.index;
            }
            if (!t.arguments.empty() && !append(w, Open::Tool, t.arguments)) return false;
        }
        if (e.finished) {
            if (!close(w)) return false;
            reason_ = e.finish_reason ? e.finish_reason : "stop";
            stop_string_ = e.stop_string;
        }
        return true;
    }

    bool finish(const Usage& u, const StreamWriter& w) override {
        if (!begin(w, u.cached_tokens)) return false;
        if (content_.empty() && !open(w, Open::Text, J{{"type", "text"}, {"text", ""}}))
            return false;
        if (!close(w)) return false;
        const J stop_sequence =
            stop_reason() == std::string_view("stop_sequence") ? J(stop_string_) : J(nullptr);
        J usage = usage_json(u.cached_tokens);
        usage["output_tokens"] = u.completion_tokens;
        if (stream_) {
            J delta = {
                {"type", "message_delta"},
                {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", stop_sequence}}},
                {"usage", std::move(usage)}};
            return send(w, "message_delta", delta) &&
                   send(w, "message_stop", J{{"type", "message_stop"}});
        }
        J out = message(J(stop_reason()), stop_sequence, std::move(usage));
        out["content"] = content_;
        return w(dump(out));
    }

    void error(const std::string& message, const StreamWriter& w) override {
        send(w, "error", anthropic_error_json(500, message));
    }

    std::string content_type() const override { return "application/json"; }

  private:
    enum class Open { None, Thinking, Text, Tool };

    const char* stop_reason() const {
        if (any_tool_use_) return "tool_use";
        if (reason_ == "length") return "max_tokens";
        if (!stop_string_.empty()) return "stop_sequence";
        return "end_turn";
    }

    J usage_json(int64_t cached) const {
        return {{"input_tokens", prompt_tokens_ - cached},
                {"cache_creation_input_tokens", 0},
                {"cache_read_input_tokens", cached}};
    }

    J message(J stop_reason, J stop_sequence, J usage) const {
        return {{"id", id_},
                {"type", "message"},
                {"role", "assistant"},
                {"model", model_},
                {"content", J::array()},
                {"stop_reason", std::move(stop_reason)},
                {"stop_sequence", std::move(stop_sequence)},
                {"usage", std::move(usage)}};
    }

    bool send(const StreamWriter& w, const char* type, const J& j) {
        if (!stream_) return true;
        return w(sse_named_event(type, dump(j)));
    }

    // message_start (with the input side of usage, known once the engine admitted the prompt)
    // and a ping, once.
    bool begin(const StreamWriter& w, int64_t cached) {
        if (started_) return true;
        started_ = true;
        J usage = usage_json(cached);
        usage["output_tokens"] = 0;
        return send(w, "message_start",
                    J{{"type", "message_start"},
                      {"message", message(nullptr, nullptr, std::move(usage))}}) &&
               send(w, "ping", J{{"type", "ping"}});
    }

    bool open(const StreamWriter& w, Open kind, J block) {
        open_ = kind;
        args_.clear();
        content_.push_back(block);
        return send(w, "content_block_start",
                    J{{"type", "content_block_start"},
                      {"index", content_.size() - 1},
                      {"content_block", std::move(block)}});
    }

    bool append(const StreamWriter& w, Open kind, const std::string& text) {
        if (open_ != kind) {
            if (!close(w)) return false;
            J block = kind == Open::Thinking
                          ? J{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                          : J{{"type", "text"}, {"text", ""}};
            if (!open(w, kind, std::move(block))) return false;
        }
        J& b = content_.back();
        J delta;
        if (kind == Open::Thinking) {
            b["thinking"] = b["thinking"].get<std::string>() + text;
            delta = {{"type", "thinking_delta"}, {"thinking", text}};
        } else if (kind == Open::Text) {
            b["text"] = b["text"].get<std::string>() + text;
            delta = {{"type", "text_delta"}, {"text", text}};
        } else {
            args_ += text;
            delta = {{"type", "input_json_delta"}, {"partial_json", text}};
        }
        return send(w, "content_block_delta",
                    J{{"type", "content_block_delta"},
                      {"index", content_.size() - 1},
                      {"delta", std::move(delta)}});
    }

    bool close(const StreamWriter& w) {
        if (open_ == Open::None) return true;
        const size_t index = content_.size() - 1;
        J& b = content_.back();
        if (open_ == Open::Thinking) {
            // Signatures are opaque to clients; ours only says where the reasoning came from.
            const std::string sig = "myriad";
            b["signature"] = sig;
            if (!send(w, "content_block_delta",
                      J{{"type", "content_block_delta"},
                        {"index", index},
                        {"delta", {{"type", "signature_delta"}, {"signature", sig}}}}))
                return false;
        } else if (open_ == Open::Tool) {
            any_tool_use_ = true;
            J input = J::object();
            if (!args_.empty()) {
                try {
                    input = J::parse(args_);
                } catch (const J::exception&) {
                    input = nullptr;
                }
            }
            if (input.is_object()) {
                b["input"] = std::move(input);
            } else if (!stream_) {
                // Not an object: the model's text comes back as text, not as a call.
                log::warn(
                    "/v1/messages: the arguments of tool call '{}' are not a JSON object; "
                    "returned as text",
                    b["name"].get<std::string>());
                b = J{{"type", "text"}, {"text", args_}};
                any_tool_use_ = false;
                for (const J& x : content_)
                    any_tool_use_ = any_tool_use_ || x["type"] == "tool_use";
            }
        }
        open_ = Open::None;
        return send(w, "content_block_stop", J{{"type", "content_block_stop"}, {"index", index}});
    }

    std::string model_;
    bool stream_;
    int64_t prompt_tokens_;
    int64_t cached_ = 0;
    std::string id_ = random_id("msg");
    J content_ = J::array();
    Open open_ = Open::None;
    int open_call_ = -1;
    std::string args_;  // the open tool_use block's JSON so far
    bool started_ = false, any_tool_use_ = false;
    std::string reason_ = "stop", stop_string_;
};

Reply error_reply(int status, const std::string& message) {
    Reply r;
    r.status = status;
    r.body = dump(anthropic_error_json(status, message));
    return r;
}

template <typename F>
Reply anthropic_errors(F&& f) {
    try {
        return f();
    } catch (const ApiError& e) {
        return error_reply(e.status(), e.what());
    } catch (const Error& e) {
        return error_reply(e.kind() == ErrorKind::BadInput ? 400 : 500, e.what());
    }
}

}  // namespace

nlohmann::ordered_json anthropic_error_json(int status, const std::string& message) {
    return {{"type", "error"},
            {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}};
}

bool is_anthropic_path(std::string_view path) {
    return path.starts_with("/v1/messages");
}

Reply anthropic_messages(ServerState& state, std::string_view body) {
    return anthropic_errors([&] {
        ChatRequest r = parse_anthropic_request(body, false);
        r.n = 1;
        Prepared p = prepare_chat(state, r);
        auto renderer = std::make_shared<MessagesRenderer>(r, p.prompt_tokens);
        return run_generation(state, std::move(p), r, std::move(renderer), r.stream);
    });
}

Reply anthropic_count_tokens(ServerState& state, std::string_view body) {
    return anthropic_errors([&] {
        ChatRequest r = parse_anthropic_request(body, true);
        check_model(state, r.model);
        Reply reply;
        reply.body = dump(J{{"input_tokens", chat_prompt_ids(state, r).size()}});
        return reply;
    });
}

}  // namespace myriad::api
