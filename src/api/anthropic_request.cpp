#include "api/anthropic_request.h"

#include <limits>

#include "api/api_error.h"
#include "api/request_field.h"
#include "api/response_common.h"
#include "util/log.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

std::string block_type(const J& b, const std::string& where) {
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
        fail(400, where, "'{}' must be a content block: an object with a 'type'", where);
    return b["type"].get<std::string>();
}

std::string text_of(const J& b, const std::string& where) {
    if (!b.contains("text") || !b["text"].is_string())
        fail(400, where + ".text", "'{}.text' must be a string", where);
    return b["text"].get<std::string>();
}

[[noreturn]] void refuse_media(const std::string& type, const std::string& where) {
    fail(400, where,
         "'{}' is a {} block; this server's model reads text only: send the content as text", where,
         type);
}

// System text: a string, or text blocks joined by blank lines (Claude Code's attribution block
// left out).
std::string system_text(const J& s) {
    if (s.is_string()) return s.get<std::string>();
    if (!s.is_array()) fail(400, "system", "'system' must be a string or a list of text blocks");
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        const std::string w = fmt::format("system[{}]", i);
        if (block_type(s[i], w) != "text") fail(400, w + ".type", "'{}' must be a text block", w);
        const std::string t = text_of(s[i], w);
        if (is_billing_header_block(t)) continue;
        if (!out.empty()) out += "\n\n";
        out += t;
    }
    return out;
}

// A tool_result's content: a string or text blocks.
std::string tool_result_text(const J& b, const std::string& where) {
    const J* c = request_field(b, "content");
    std::string text;
    if (!c) {
        text = "";
    } else if (c->is_string()) {
        text = c->get<std::string>();
    } else if (c->is_array()) {
        for (size_t k = 0; k < c->size(); ++k) {
            const std::string w = fmt::format("{}.content[{}]", where, k);
            const std::string type = block_type((*c)[k], w);
            if (type != "text") refuse_media(type, w);
            if (!text.empty()) text += "\n";
            text += text_of((*c)[k], w);
        }
    } else {
        fail(400, where + ".content", "'{}.content' must be a string or a list of text blocks",
             where);
    }
    if (const J* e = request_field(b, "is_error"); e && e->is_boolean() && e->get<bool>())
        text = "Error: " + text;
    return text;
}

// One Anthropic message as chat messages: a user turn may give several (tool results first, in
// order, then its text), an assistant turn one (text, reasoning, tool calls).
void convert_message(const J& m, size_t i, J& out) {
    const std::string w = fmt::format("messages[{}]", i);
    if (!m.is_object()) fail(400, w, "'{}' must be an object", w);
    const J* role_v = request_field(m, "role");
    if (!role_v || !role_v->is_string()) fail(400, w + ".role", "'{}.role' must be a string", w);
    const std::string role = role_v->get<std::string>();
    if (role != "user" && role != "assistant" && role != "system")
        fail(400, w + ".role", "'{}.role' is '{}'; it must be user or assistant", w, role);
    const J* content = request_field(m, "content");
    if (!content) fail(400, w + ".content", "'{}.content' is required", w);
    if (content->is_string()) {
        out.push_back({{"role", role}, {"content", content->get<std::string>()}});
        return;
    }
    if (!content->is_array())
        fail(400, w + ".content", "'{}.content' must be a string or a list of content blocks", w);

    std::string text, reasoning;
    bool any_reasoning = false;
    J calls = J::array();
    for (size_t k = 0; k < content->size(); ++k) {
        const J& b = (*content)[k];
        const std::string bw = fmt::format("{}.content[{}]", w, k);
        const std::string type = block_type(b, bw);
        if (type == "text") {
            text += text_of(b, bw);
        } else if (type == "image" || type == "document" || type == "search_result") {
            refuse_media(type, bw);
        } else if (type == "tool_use" && role == "assistant") {
            const J* id = request_field(b, "id");
            const J* name = request_field(b, "name");
            if (!id || !id->is_string()) fail(400, bw + ".id", "'{}.id' must be a string", bw);
            if (!name || !name->is_string())
                fail(400, bw + ".name", "'{}.name' must be a string", bw);
            const J* input = request_field(b, "input");
            calls.push_back({{"id", *id},
                             {"type", "function"},
                             {"function",
                              {{"name", *name},
                               {"arguments", input ? spaced_json(*input) : std::string("{}")}}}});
        } else if (type == "tool_result" && role == "user") {
            const J* id = request_field(b, "tool_use_id");
            if (!id || !id->is_string())
                fail(400, bw + ".tool_use_id", "'{}.tool_use_id' must be a string", bw);
            out.push_back(
                {{"role", "tool"}, {"tool_call_id", *id}, {"content", tool_result_text(b, bw)}});
        } else if (type == "thinking" && role == "assistant") {
            if (const J* t = request_field(b, "thinking"); t && t->is_string()) {
                reasoning += t->get<std::string>();
                any_reasoning = true;
            }
        } else if (type == "redacted_thinking") {
            // Opaque to us: another server's encrypted reasoning.
        } else {
            fail(400, bw + ".type", "'{}.type' is '{}', which a {} message cannot hold", bw, type,
                 role);
        }
    }
    if (role == "assistant") {
        J msg = {{"role", "assistant"}, {"content", text}};
        if (any_reasoning) msg["reasoning_content"] = reasoning;
        if (!calls.empty()) msg["tool_calls"] = std::move(calls);
        out.push_back(std::move(msg));
    } else if (!text.empty() || out.empty() || out.back()["role"] != "tool") {
        out.push_back({{"role", role}, {"content", text}});
    }
}

void convert_tools(const J& o, ChatRequest& r) {
    r.tools = nullptr;
    if (const J* ts = request_field(o, "tools")) {
        if (!ts->is_array()) fail(400, "tools", "'tools' must be an array of tools");
        J tools = J::array();
        for (size_t i = 0; i < ts->size(); ++i) {
            const J& t = (*ts)[i];
            const std::string w = fmt::format("tools[{}]", i);
            if (!t.is_object()) fail(400, w, "'{}' must be an object", w);
            if (const J* type = request_field(t, "type");
                type && (!type->is_string() || type->get<std::string>() != "custom")) {
                log::warn(
                    "tools[{}]: the server tool {} is not offered to the model (client "
                    "tools with input_schema only)",
                    i, type->dump());
                continue;
            }
            const J* name = request_field(t, "name");
            if (!name || !name->is_string() || name->get<std::string>().empty())
                fail(400, w + ".name", "'{}.name' must be a non-empty string", w);
            const J* schema = request_field(t, "input_schema");
            if (!schema || !schema->is_object())
                fail(400, w + ".input_schema", "'{}.input_schema' must be a JSON Schema object", w);
            J fn = {{"name", *name}};
            if (const J* d = request_field(t, "description")) {
                if (!d->is_string())
                    fail(400, w + ".description", "'{}.description' must be a string", w);
                fn["description"] = *d;
            }
            fn["parameters"] = *schema;
            if (const J* strict = request_field(t, "strict")) {
                if (!strict->is_boolean())
                    fail(400, w + ".strict", "'{}.strict' must be a boolean", w);
                if (strict->get<bool>()) r.strict_tools.push_back(name->get<std::string>());
            }
            tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
        }
        if (!tools.empty()) r.tools = std::move(tools);
    }
    r.tool_choice = r.tools.is_null() ? ToolChoice::None : ToolChoice::Auto;
    const J* tc = request_field(o, "tool_choice");
    if (!tc) return;
    if (!tc->is_object() || !tc->contains("type") || !(*tc)["type"].is_string())
        fail(400, "tool_choice",
             "'tool_choice' must be an object with a 'type' (auto, any, tool, "
             "none)");
    const std::string type = (*tc)["type"].get<std::string>();
    if (type == "none") {
        r.tool_choice = ToolChoice::None;
    } else if (type == "auto") {
    } else if (type == "any") {
        r.tool_choice = ToolChoice::Required;
    } else if (type == "tool") {
        const J* name = request_field(*tc, "name");
        if (!name || !name->is_string())
            fail(400, "tool_choice.name", "tool_choice 'tool' needs a 'name'");
        r.tool_choice = ToolChoice::Named;
        r.tool_choice_name = name->get<std::string>();
        bool found = false;
        if (!r.tools.is_null())
            for (const J& t : r.tools) found = found || t["function"]["name"] == *name;
        if (!found)
            fail(400, "tool_choice.name", "tool_choice names '{}', which is not in 'tools'",
                 r.tool_choice_name);
    } else {
        fail(400, "tool_choice.type", "tool_choice type '{}' is unknown (auto, any, tool, none)",
             type);
    }
    if (r.tool_choice == ToolChoice::Required && r.tools.is_null())
        fail(400, "tool_choice", "tool_choice 'any' needs a non-empty 'tools' list");
    if (const J* d = request_field(*tc, "disable_parallel_tool_use"); d && d->is_boolean())
        r.parallel_tool_calls = !d->get<bool>();
}

}  // namespace

bool is_billing_header_block(std::string_view text) {
    return text.starts_with("x-anthropic-billing-header:");
}

ChatRequest parse_anthropic_request(std::string_view body, bool count_only) {
    const J o = parse_body(body);
    ChatRequest r;
    if (count_only) {
        const J* model = request_field(o, "model");
        if (!model || !model->is_string())
            fail(400, "model", "'model' is required (see GET /v1/models)");
        r.model = model->get<std::string>();
    } else {
        if (!request_field(o, "max_tokens"))
            fail(400, "max_tokens", "'max_tokens' is required (the most tokens to generate)");
        parse_generation(o, r, true);
    }
    if (const J* s = request_field(o, "stop_sequences")) {
        if (!s->is_array())
            fail(400, "stop_sequences", "'stop_sequences' must be a list of strings");
        for (const J& x : *s) {
            if (!x.is_string()) fail(400, "stop_sequences", "'stop_sequences' must hold strings");
            if (!x.get<std::string>().empty()) r.stop.push_back(x.get<std::string>());
        }
    }
    J messages = J::array();
    if (const J* s = request_field(o, "system")) {
        const std::string text = system_text(*s);
        if (!text.empty()) messages.push_back({{"role", "system"}, {"content", text}});
    }
    const J* ms = request_field(o, "messages");
    if (!ms || !ms->is_array() || ms->empty())
        fail(400, "messages", "'messages' must be a non-empty array of messages");
    for (size_t i = 0; i < ms->size(); ++i) convert_message((*ms)[i], i, messages);
    r.messages = std::move(messages);
    convert_tools(o, r);
    // Structured output: output_config.format (and the beta's output_format), a json_schema.
    r.response_format = {};
    if (const J* oc = request_field(o, "output_config")) {
        if (!oc->is_object()) fail(400, "output_config", "'output_config' must be an object");
        if (const J* f = request_field(*oc, "format"))
            r.response_format = parse_response_format(*f, "output_config.format");
    } else if (const J* f = request_field(o, "output_format")) {
        r.response_format = parse_response_format(*f, "output_format");
    }
    if (const J* t = request_field(o, "thinking")) {
        if (!t->is_object() || !t->contains("type") || !(*t)["type"].is_string())
            fail(400, "thinking",
                 "'thinking' must be an object with a 'type' (enabled, adaptive, "
                 "disabled)");
        const std::string type = (*t)["type"].get<std::string>();
        if (type != "enabled" && type != "adaptive" && type != "disabled")
            fail(400, "thinking.type",
                 "thinking type '{}' is unknown (enabled, adaptive, disabled)", type);
        r.chat_template_kwargs["thinking"] = type != "disabled";
    }
    return r;
}

}  // namespace myriad::api
