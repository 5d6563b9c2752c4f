#include "api/responses_request.h"

#include "api/api_error.h"
#include "api/request_field.h"
#include "api/response_common.h"
#include "util/log.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

std::string string_field(const J& o, const char* name, const std::string& where) {
    const J* v = request_field(o, name);
    if (!v || !v->is_string())
        fail(400, where + "." + name, "'{}.{}' must be a string", where, name);
    return v->get<std::string>();
}

// A message's or an output's content: a string or text parts.
std::string content_text(const J& c, const std::string& where) {
    if (c.is_string()) return c.get<std::string>();
    if (!c.is_array()) fail(400, where, "'{}' must be a string or a list of content parts", where);
    std::string text;
    for (size_t i = 0; i < c.size(); ++i) {
        const std::string w = fmt::format("{}[{}]", where, i);
        const J& p = c[i];
        if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
            fail(400, w, "'{}' must be an object with a 'type'", w);
        const std::string type = p["type"].get<std::string>();
        if (type == "input_text" || type == "output_text" || type == "text" ||
            type == "summary_text" || type == "reasoning_text") {
            text += string_field(p, "text", w);
        } else if (type == "refusal") {
            text += string_field(p, "refusal", w);
        } else {
            fail(400, w + ".type",
                 "content part type '{}' is not supported by this server (text only)", type);
        }
    }
    return text;
}

// The open assistant message at the end of `out` (a new one when the last is not one).
J& assistant_turn(J& out) {
    if (out.empty() || out.back()["role"] != "assistant")
        out.push_back({{"role", "assistant"}, {"content", ""}});
    return out.back();
}

void add_call(J& out, const std::string& call_id, const std::string& name,
              const std::string& arguments) {
    J& turn = assistant_turn(out);
    if (!turn.contains("tool_calls")) turn["tool_calls"] = J::array();
    turn["tool_calls"].push_back({{"id", call_id},
                                  {"type", "function"},
                                  {"function", {{"name", name}, {"arguments", arguments}}}});
}

void convert_item(const J& item, size_t i, J& out) {
    const std::string w = fmt::format("input[{}]", i);
    if (!item.is_object()) fail(400, w, "'{}' must be an object", w);
    std::string type = "message";
    if (const J* t = request_field(item, "type")) {
        if (!t->is_string()) fail(400, w + ".type", "'{}.type' must be a string", w);
        type = t->get<std::string>();
    }
    if (type == "message") {
        std::string role = string_field(item, "role", w);
        if (role == "developer") role = "system";
        if (role != "user" && role != "assistant" && role != "system")
            fail(400, w + ".role",
                 "'{}.role' is '{}'; it must be user, assistant, system or "
                 "developer",
                 w, role);
        const J* c = request_field(item, "content");
        const std::string text = c ? content_text(*c, w + ".content") : "";
        if (role == "assistant") {
            J& turn = assistant_turn(out);
            if (turn.contains("tool_calls") || !turn["content"].get<std::string>().empty())
                out.push_back({{"role", "assistant"}, {"content", text}});
            else
                turn["content"] = text;
        } else {
            out.push_back({{"role", role}, {"content", text}});
        }
    } else if (type == "function_call") {
        add_call(out, string_field(item, "call_id", w), string_field(item, "name", w),
                 string_field(item, "arguments", w));
    } else if (type == "custom_tool_call") {
        add_call(out, string_field(item, "call_id", w), string_field(item, "name", w),
                 spaced_json(J{{"input", string_field(item, "input", w)}}));
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
        const J* o = request_field(item, "output");
        out.push_back({{"role", "tool"},
                       {"tool_call_id", string_field(item, "call_id", w)},
                       {"content", o ? content_text(*o, w + ".output") : ""}});
    } else if (type == "reasoning") {
        std::string text;
        if (const J* c = request_field(item, "content")) text = content_text(*c, w + ".content");
        if (text.empty())
            if (const J* s = request_field(item, "summary"))
                text = content_text(*s, w + ".summary");
        // Reasoning opens the assistant turn that follows it.
        out.push_back({{"role", "assistant"}, {"content", ""}, {"reasoning_content", text}});
    } else {
        log::warn("/v1/responses: input item type '{}' ({}) is skipped", type, w);
    }
}

J custom_tool_parameters() {
    return {{"type", "object"},
            {"properties", {{"input", {{"type", "string"}, {"description", "the tool's input"}}}}},
            {"required", {"input"}}};
}

void convert_tools(const J& o, ResponsesRequest& rr) {
    ChatRequest& r = rr.chat;
    r.tools = nullptr;
    if (const J* ts = request_field(o, "tools")) {
        if (!ts->is_array()) fail(400, "tools", "'tools' must be an array of tools");
        J tools = J::array();
        for (size_t i = 0; i < ts->size(); ++i) {
            const J& t = (*ts)[i];
            const std::string w = fmt::format("tools[{}]", i);
            if (!t.is_object()) fail(400, w, "'{}' must be an object", w);
            const std::string type = request_field(t, "type") && t["type"].is_string()
                                         ? t["type"].get<std::string>()
                                         : "";
            if (type != "function" && type != "custom") {
                log::warn(
                    "/v1/responses: {} of type '{}' is not offered to the model (function "
                    "and custom tools only)",
                    w, type);
                continue;
            }
            const std::string name = string_field(t, "name", w);
            if (name.empty()) fail(400, w + ".name", "'{}.name' must not be empty", w);
            J fn = {{"name", name}};
            if (const J* d = request_field(t, "description"); d && d->is_string())
                fn["description"] = *d;
            if (type == "custom") {
                rr.custom_tools.insert(name);
                fn["parameters"] = custom_tool_parameters();
            } else {
                if (const J* p = request_field(t, "parameters")) {
                    if (!p->is_object())
                        fail(400, w + ".parameters", "'{}.parameters' must be a JSON Schema object",
                             w);
                    fn["parameters"] = *p;
                } else {
                    fn["parameters"] = {{"type", "object"}, {"properties", J::object()}};
                }
                // The Responses API's function tools are strict unless they say otherwise.
                const J* strict = request_field(t, "strict");
                if (strict && !strict->is_boolean())
                    fail(400, w + ".strict", "'{}.strict' must be a boolean", w);
                if (!strict || strict->get<bool>()) r.strict_tools.push_back(name);
            }
            tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
        }
        if (!tools.empty()) r.tools = std::move(tools);
    }
    r.tool_choice = r.tools.is_null() ? ToolChoice::None : ToolChoice::Auto;
    if (const J* tc = request_field(o, "tool_choice"); tc && !r.tools.is_null()) {
        if (tc->is_string()) {
            const std::string s = tc->get<std::string>();
            if (s == "none")
                r.tool_choice = ToolChoice::None;
            else if (s == "required")
                r.tool_choice = ToolChoice::Required;
            else if (s != "auto")
                fail(400, "tool_choice", "'tool_choice' is '{}'; use none, auto or required", s);
        } else if (tc->is_object() && request_field(*tc, "name") && (*tc)["name"].is_string()) {
            r.tool_choice = ToolChoice::Named;
            r.tool_choice_name = (*tc)["name"].get<std::string>();
            bool found = false;
            for (const J& t : r.tools) found = found || t["function"]["name"] == r.tool_choice_name;
            if (!found)
                fail(400, "tool_choice", "tool_choice names '{}', which is not in 'tools'",
                     r.tool_choice_name);
        }
    } else if (tc && tc->is_string() && tc->get<std::string>() == "required") {
        fail(400, "tool_choice", "tool_choice 'required' needs a non-empty 'tools' list");
    }
    if (const J* p = request_field(o, "parallel_tool_calls"); p && p->is_boolean())
        r.parallel_tool_calls = p->get<bool>();
}

}  // namespace

ResponsesRequest parse_responses_request(
    std::string_view body,
    const std::function<std::optional<nlohmann::ordered_json>(const std::string&)>& lookup) {
    J o = parse_body(body);
    ResponsesRequest rr;
    ChatRequest& r = rr.chat;
    // Fields shared with chat; the Responses API names the output limit max_output_tokens and
    // gives top_logprobs without a logprobs switch.
    J shared = o;
    for (const char* k : {"max_tokens", "max_completion_tokens", "top_logprobs", "logprobs", "n",
                          "stop", "response_format"})
        shared.erase(k);
    parse_generation(shared, r, true);
    if (const J* mt = request_field(o, "max_output_tokens")) {
        if (!mt->is_number_integer() || mt->get<int64_t>() < 1 ||
            mt->get<int64_t>() > std::numeric_limits<int32_t>::max())
            fail(400, "max_output_tokens", "'max_output_tokens' must be a positive integer");
        r.max_tokens = mt->get<int64_t>();
    }
    if (const J* s = request_field(o, "store")) {
        if (!s->is_boolean()) fail(400, "store", "'store' must be a boolean");
        rr.store = s->get<bool>();
    }
    if (const J* t = request_field(o, "text")) {
        if (!t->is_object()) fail(400, "text", "'text' must be an object {{\"format\": ...}}");
        if (const J* f = request_field(*t, "format")) {
            r.response_format = parse_response_format(*f, "text.format");
            rr.text_format = *f;
        }
    }

    J conversation = J::array();
    if (const J* prev = request_field(o, "previous_response_id")) {
        if (!prev->is_string())
            fail(400, "previous_response_id", "'previous_response_id' must be a string");
        rr.previous_response_id = prev->get<std::string>();
        auto history = lookup(rr.previous_response_id);
        if (!history)
            fail(404, "previous_response_id",
                 "Previous response with id '{}' not found: it was never stored (store: false), "
                 "or was dropped from this server's --responses-store",
                 rr.previous_response_id);
        conversation = std::move(*history);
    }
    const J* input = request_field(o, "input");
    if (!input) fail(400, "input", "'input' is required");
    if (input->is_string()) {
        conversation.push_back({{"role", "user"}, {"content", *input}});
    } else if (input->is_array()) {
        for (size_t i = 0; i < input->size(); ++i) convert_item((*input)[i], i, conversation);
    } else {
        fail(400, "input", "'input' must be a string or a list of items");
    }
    if (conversation.empty()) fail(400, "input", "'input' holds no message");

    J messages = J::array();
    if (const J* ins = request_field(o, "instructions")) {
        if (!ins->is_string()) fail(400, "instructions", "'instructions' must be a string");
        rr.instructions = ins->get<std::string>();
        if (!rr.instructions.empty())
            messages.push_back({{"role", "system"}, {"content", rr.instructions}});
    }
    for (const J& m : conversation) messages.push_back(m);
    rr.conversation = std::move(conversation);
    r.messages = std::move(messages);
    convert_tools(o, rr);
    if (const J* re = request_field(o, "reasoning"); re && re->is_object())
        if (const J* e = request_field(*re, "effort"); e && e->is_string())
            r.chat_template_kwargs["thinking"] = *e != "none" && *e != "minimal";
    return rr;
}

}  // namespace myriad::api
