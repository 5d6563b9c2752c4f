#include "api/responses_handler.h"

#include <memory>

#include "api/api_error.h"
#include "api/generation_core.h"
#include "api/response_common.h"
#include "api/responses_request.h"
#include "api/sse.h"
#include "util/log.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

class ResponsesRenderer : public Renderer {
  public:
    ResponsesRenderer(ServerState& state, ResponsesRequest rr)
        : state_(state), rr_(std::move(rr)), stream_(rr_.chat.stream) {}

    bool start(const StreamWriter& w) override {
        return send(w, J{{"type", "response.created"}, {"response", response("in_progress")}}) &&
               send(w, J{{"type", "response.in_progress"}, {"response", response("in_progress")}});
    }

    bool event(ChoiceEvent& e, const StreamWriter& w) override {
        const OutputDelta& d = e.delta;
        if (!d.reasoning.empty() && !append(w, Kind::Reasoning, d.reasoning)) return false;
        if (!d.content.empty() && !append(w, Kind::Message, d.content)) return false;
        for (const ToolCallDelta& t : d.tool_calls) {
            if ((open_ != Kind::Call && open_ != Kind::Custom) || t.index != open_call_) {
                if (!close(w)) return false;
                if (!open_call(w, t)) return false;
            }
            if (!t.arguments.empty() && !append(w, open_, t.arguments)) return false;
        }
        if (e.finished) {
            if (!close(w)) return false;
            reason_ = e.finish_reason ? e.finish_reason : "stop";
        }
        return true;
    }

    bool finish(const Usage& u, const StreamWriter& w) override {
        if (!close(w)) return false;
        usage_ = {{"input_tokens", u.prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
                  {"output_tokens", u.completion_tokens},
                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                  {"total_tokens", u.prompt_tokens + u.completion_tokens}};
        const bool incomplete = reason_ == "length";
        J r = response(incomplete ? "incomplete" : "completed");
        if (incomplete) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
        store();
        if (!stream_) return w(dump(r));
        return send(w, J{{"type", incomplete ? "response.incomplete" : "response.completed"},
                         {"response", std::move(r)}});
    }

    void error(const std::string& message, const StreamWriter& w) override {
        J r = response("failed");
        r["error"] = {{"code", "server_error"}, {"message", message}};
        send(w, J{{"type", "response.failed"}, {"response", std::move(r)}});
    }

  private:
    enum class Kind { None, Reasoning, Message, Call, Custom };

    J response(const char* status) const {
        const ChatRequest& c = rr_.chat;
        J tool_choice = "auto";
        if (c.tool_choice == ToolChoice::None && !c.tools.is_null()) tool_choice = "none";
        if (c.tool_choice == ToolChoice::Required) tool_choice = "required";
        if (c.tool_choice == ToolChoice::Named)
            tool_choice = {{"type", "function"}, {"name", c.tool_choice_name}};
        return {{"id", id_},
                {"object", "response"},
                {"created_at", created_},
                {"status", status},
                {"error", nullptr},
                {"incomplete_details", nullptr},
                {"instructions", rr_.instructions.empty() ? J(nullptr) : J(rr_.instructions)},
                {"max_output_tokens", c.max_tokens ? J(*c.max_tokens) : J(nullptr)},
                {"model", c.model},
                {"output", output_},
                {"parallel_tool_calls", c.parallel_tool_calls},
                {"previous_response_id",
                 rr_.previous_response_id.empty() ? J(nullptr) : J(rr_.previous_response_id)},
                {"store", rr_.store},
                {"temperature", c.temperature ? J(*c.temperature) : J(nullptr)},
                {"text", {{"format", rr_.text_format}}},
                {"tool_choice", std::move(tool_choice)},
                {"tools", J::array()},
                {"top_p", c.top_p ? J(*c.top_p) : J(nullptr)},
                {"metadata", J::object()},
                {"usage", usage_}};
    }

    bool send(const StreamWriter& w, J event) {
        if (!stream_) return true;
        event["sequence_number"] = seq_++;
        const std::string type = event["type"].get<std::string>();
        return w(sse_named_event(type, dump(event)));
    }

    J item_event(const char* type) const {
        return {{"type", type}, {"output_index", output_.size() - 1}};
    }
    J part_event(const char* type) const {
        J e = item_event(type);
        e["item_id"] = output_.back()["id"];
        e["content_index"] = 0;
        return e;
    }

    bool open_item(const StreamWriter& w, Kind kind, J item) {
        open_ = kind;
        text_.clear();
        output_.push_back(item);
        J e = item_event("response.output_item.added");
        e["item"] = std::move(item);
        if (!send(w, std::move(e))) return false;
        if (kind != Kind::Reasoning && kind != Kind::Message) return true;
        J p = part_event("response.content_part.added");
        p["part"] = part("");
        return send(w, std::move(p));
    }

    J part(const std::string& text) const {
        if (open_ == Kind::Reasoning) return {{"type", "reasoning_text"}, {"text", text}};
        return {{"type", "output_text"}, {"text", text}, {"annotations", J::array()}};
    }

    bool open_call(const StreamWriter& w, const ToolCallDelta& t) {
        const std::string name = t.name.value_or("");
        const std::string call_id = t.id && !t.id->empty() ? *t.id : random_id("call");
        open_call_ = t.index;
        if (rr_.custom_tools.count(name))
            return open_item(w, Kind::Custom,
                             J{{"id", random_id("ctc")},
                               {"type", "custom_tool_call"},
                               {"status", "in_progress"},
                               {"call_id", call_id},
                               {"name", name},
                               {"input", ""}});
        return open_item(w, Kind::Call,
                         J{{"id", random_id("fc")},
                           {"type", "function_call"},
                           {"status", "in_progress"},
                           {"call_id", call_id},
                           {"name", name},
                           {"arguments", ""}});
    }

    bool append(const StreamWriter& w, Kind kind, const std::string& text) {
        if (open_ != kind) {
            if (!close(w)) return false;
            if (kind == Kind::Reasoning && !open_item(w, kind,
                                                      J{{"id", random_id("rs")},
                                                        {"type", "reasoning"},
                                                        {"summary", J::array()},
                                                        {"content", J::array()},
                                                        {"status", "in_progress"}}))
                return false;
            if (kind == Kind::Message && !open_item(w, kind,
                                                    J{{"id", random_id("msg")},
                                                      {"type", "message"},
                                                      {"role", "assistant"},
                                                      {"status", "in_progress"},
                                                      {"content", J::array()}}))
                return false;
        }
        text_ += text;
        if (kind == Kind::Custom) return true;  // its input is known once the arguments end
        J e = kind == Kind::Call
                  ? item_event("response.function_call_arguments.delta")
                  : part_event(kind == Kind::Reasoning ? "response.reasoning_text.delta"
                                                       : "response.output_text.delta");
        if (kind == Kind::Call) e["item_id"] = output_.back()["id"];
        e["delta"] = text;
        if (kind == Kind::Message) e["logprobs"] = J::array();
        return send(w, std::move(e));
    }

    bool close(const StreamWriter& w) {
        if (open_ == Kind::None) return true;
        J& item = output_.back();
        const Kind kind = open_;
        open_ = Kind::None;
        item["status"] = "completed";
        if (kind == Kind::Reasoning || kind == Kind::Message) {
            open_ = kind;  // part() reads it
            const J done_part = part(text_);
            open_ = Kind::None;
            item["content"] = J::array({done_part});
            if (kind == Kind::Reasoning) {
                reasoning_ += text_;
            } else {
                content_ += text_;
            }
            J e = part_event(kind == Kind::Reasoning ? "response.reasoning_text.done"
                                                     : "response.output_text.done");
            e["text"] = text_;
            if (kind == Kind::Message) e["logprobs"] = J::array();
            J p = part_event("response.content_part.done");
            p["part"] = done_part;
            if (!send(w, std::move(e)) || !send(w, std::move(p))) return false;
        } else if (kind == Kind::Call) {
            item["arguments"] = text_;
            calls_.push_back({item["call_id"], item["name"], text_});
            J e = item_event("response.function_call_arguments.done");
            e["item_id"] = item["id"];
            e["name"] = item["name"];
            e["arguments"] = text_;
            if (!send(w, std::move(e))) return false;
        } else {
            // {"input": "..."} as the model wrote it; anything else is kept whole as the input.
            std::string input = text_;
            try {
                J args = J::parse(text_);
                if (args.is_object() && args.contains("input") && args["input"].is_string())
                    input = args["input"].get<std::string>();
                else
                    log::warn(
                        "/v1/responses: custom tool call '{}' has no string 'input'; its "
                        "whole arguments are the input",
                        item["name"].get<std::string>());
            } catch (const J::exception&) {
                log::warn(
                    "/v1/responses: custom tool call '{}': arguments are not JSON; they "
                    "are the input as written",
                    item["name"].get<std::string>());
            }
            item["input"] = input;
            calls_.push_back({item["call_id"], item["name"], spaced_json(J{{"input", input}})});
            J d = item_event("response.custom_tool_call_input.delta");
            d["item_id"] = item["id"];
            d["delta"] = input;
            J e = item_event("response.custom_tool_call_input.done");
            e["item_id"] = item["id"];
            e["input"] = input;
            if (!send(w, std::move(d)) || !send(w, std::move(e))) return false;
        }
        J e = item_event("response.output_item.done");
        e["item"] = item;
        return send(w, std::move(e));
    }

    // The conversation with this reply, for previous_response_id.
    void store() {
        if (!rr_.store) return;
        J conversation = rr_.conversation;
        J msg = {{"role", "assistant"}, {"content", content_}};
        if (!reasoning_.empty()) msg["reasoning_content"] = reasoning_;
        if (!calls_.empty()) {
            msg["tool_calls"] = J::array();
            for (const auto& [id, name, args] : calls_)
                msg["tool_calls"].push_back({{"id", id},
                                             {"type", "function"},
                                             {"function", {{"name", name}, {"arguments", args}}}});
        }
        conversation.push_back(std::move(msg));
        state_.responses().put(id_, std::move(conversation));
    }

    struct Call {
        J call_id, name;
        std::string arguments;
    };

    ServerState& state_;
    ResponsesRequest rr_;
    bool stream_;
    std::string id_ = random_id("resp");
    int64_t created_ = unix_now();
    int64_t seq_ = 0;
    J output_ = J::array();
    J usage_ = nullptr;
    Kind open_ = Kind::None;
    int open_call_ = -1;
    std::string text_;  // the open item's text or arguments so far
    std::string reasoning_, content_;
    std::vector<Call> calls_;
    std::string reason_ = "stop";
};

}  // namespace

Reply responses(ServerState& state, std::string_view body) {
    ResponsesRequest rr = parse_responses_request(
        body, [&state](const std::string& id) { return state.responses().get(id); });
    rr.chat.n = 1;
    Prepared p = prepare_chat(state, rr.chat);
    const ChatRequest chat = rr.chat;
    auto renderer = std::make_shared<ResponsesRenderer>(state, std::move(rr));
    return run_generation(state, std::move(p), chat, std::move(renderer), chat.stream);
}

}  // namespace myriad::api
