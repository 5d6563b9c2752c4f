#include "api/openai_request.h"

#include <cmath>
#include <limits>

#include "api/api_error.h"
#include "api/request_field.h"

namespace myriad::api {

namespace {

using J = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;

const char* type_name(const J& v) {
    switch (v.type()) {
        case J::value_t::null:
            return "null";
        case J::value_t::boolean:
            return "a boolean";
        case J::value_t::string:
            return "a string";
        case J::value_t::array:
            return "an array";
        case J::value_t::object:
            return "an object";
        case J::value_t::number_float:
            return "a number";
        default:
            return "an integer";
    }
}

bool get_bool(const J& o, const char* name, bool def) {
    const J* v = request_field(o, name);
    if (!v) return def;
    if (!v->is_boolean()) fail(400, name, "'{}' must be a boolean, got {}", name, type_name(*v));
    return v->get<bool>();
}

std::optional<double> get_number(const J& o, const char* name, double lo, double hi) {
    const J* v = request_field(o, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(400, name, "'{}' must be a number, got {}", name, type_name(*v));
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        fail(400, name, "'{}' is {}; it must be in [{}, {}]", name, x, lo, hi);
    return x;
}

std::optional<int64_t> get_int(const J& o, const char* name, int64_t lo, int64_t hi) {
    const J* v = request_field(o, name);
    if (!v) return std::nullopt;
    if (!v->is_number_integer())
        fail(400, name, "'{}' must be an integer, got {}", name, type_name(*v));
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(400, name, "'{}' is too large", name);
    const int64_t x = v->get<int64_t>();
    if (x < lo || x > hi) fail(400, name, "'{}' is {}; it must be in [{}, {}]", name, x, lo, hi);
    return x;
}

std::optional<std::string> get_string(const J& o, const char* name) {
    const J* v = request_field(o, name);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(400, name, "'{}' must be a string, got {}", name, type_name(*v));
    return v->get<std::string>();
}

std::vector<TokenId> token_list(const J& v, const std::string& name) {
    if (!v.is_array()) fail(400, name, "'{}' must be an array of token ids", name);
    std::vector<TokenId> ids;
    for (const J& t : v) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
            t.get<int64_t>() > std::numeric_limits<TokenId>::max())
            fail(400, name, "'{}' must hold token ids (integers >= 0), got {}", name, t.dump());
        ids.push_back(static_cast<TokenId>(t.get<int64_t>()));
    }
    return ids;
}

}  // namespace

void parse_generation(const J& o, GenerationFields& g, bool chat) {
    // Optional, as in vLLM: left out, it is the served model (check_model fills it in).
    g.model = get_string(o, "model").value_or("");
    g.stream = get_bool(o, "stream", false);
    if (const J* so = request_field(o, "stream_options")) {
        if (!so->is_object())
            fail(400, "stream_options", "'stream_options' must be an object, got {}",
                 type_name(*so));
        g.include_usage = get_bool(*so, "include_usage", false);
        g.continuous_usage = g.include_usage && get_bool(*so, "continuous_usage_stats", false);
    }
    // Completions take max_tokens 0 with echo (checked with echo, parse_completion_request).
    const int64_t least = chat ? 1 : 0;
    auto mt = get_int(o, "max_completion_tokens", least, std::numeric_limits<int32_t>::max());
    if (!mt) mt = get_int(o, "max_tokens", least, std::numeric_limits<int32_t>::max());
    g.max_tokens = mt;
    g.temperature = get_number(o, "temperature", 0, 2);
    g.top_p = get_number(o, "top_p", 0, 1);
    if (g.top_p && *g.top_p == 0) fail(400, "top_p", "'top_p' must be greater than 0");
    g.min_p = get_number(o, "min_p", 0, 1);
    g.repetition_penalty = get_number(o, "repetition_penalty", 0, 1e9);
    if (g.repetition_penalty && *g.repetition_penalty == 0)
        fail(400, "repetition_penalty", "'repetition_penalty' must be greater than 0");
    g.top_k = get_int(o, "top_k", -1, std::numeric_limits<int32_t>::max());
    g.presence_penalty = get_number(o, "presence_penalty", -2, 2).value_or(0);
    g.frequency_penalty = get_number(o, "frequency_penalty", -2, 2).value_or(0);
    if (auto s = get_int(o, "seed", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max()))
        g.seed = static_cast<uint64_t>(*s);
    g.n = get_int(o, "n", 1, 128).value_or(1);
    if (const J* s = request_field(o, "stop")) {
        if (s->is_string()) {
            g.stop.push_back(s->get<std::string>());
        } else if (s->is_array()) {
            for (const J& x : *s) {
                if (!x.is_string())
                    fail(400, "stop", "'stop' must be a string or a list of strings");
                g.stop.push_back(x.get<std::string>());
            }
        } else {
            fail(400, "stop", "'stop' must be a string or a list of strings, got {}",
                 type_name(*s));
        }
        std::erase_if(g.stop, [](const std::string& x) { return x.empty(); });
    }
    if (const J* s = request_field(o, "stop_token_ids"))
        g.stop_token_ids = token_list(*s, "stop_token_ids");
    if (const J* b = request_field(o, "logit_bias")) {
        if (!b->is_object())
            fail(400, "logit_bias", "'logit_bias' must be an object of token id -> bias");
        for (const auto& [k, v] : b->items()) {
            size_t used = 0;
            long long id = -1;
            try {
                id = std::stoll(k, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != k.size() || id < 0 || id > std::numeric_limits<TokenId>::max())
                fail(400, "logit_bias", "'logit_bias' key '{}' is not a token id", k);
            if (!v.is_number() || v.get<double>() < -100 || v.get<double>() > 100)
                fail(400, "logit_bias", "'logit_bias' value for {} must be a number in [-100, 100]",
                     k);
            g.logit_bias.emplace_back(static_cast<TokenId>(id), v.get<float>());
        }
    }
    if (chat) {
        const bool lp = get_bool(o, "logprobs", false);
        auto top = get_int(o, "top_logprobs", 0, 20);
        if (top && !lp) fail(400, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
        if (lp) g.top_logprobs = top.value_or(0);
    } else {
        if (auto lp = get_int(o, "logprobs", 0, 20)) g.top_logprobs = *lp;
    }
    g.min_tokens = get_int(o, "min_tokens", 0, std::numeric_limits<int32_t>::max()).value_or(0);
    g.ignore_eos = get_bool(o, "ignore_eos", false);
    g.skip_special_tokens = get_bool(o, "skip_special_tokens", true);
    g.include_stop_str_in_output = get_bool(o, "include_stop_str_in_output", false);
    g.test_output = get_string(o, "test_output");
    if (const J* rf = request_field(o, "response_format"))
        g.response_format = parse_response_format(*rf, "response_format");
}

namespace {

// Text parts joined; other parts (images, audio, files) are refused.
J normalize_content(const J& c, const std::string& where) {
    if (c.is_string()) return c;
    if (!c.is_array())
        fail(400, where, "'{}' must be a string or a list of content parts, got {}", where,
             type_name(c));
    std::string text;
    for (size_t i = 0; i < c.size(); ++i) {
        const J& part = c[i];
        const std::string pw = fmt::format("{}[{}]", where, i);
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            fail(400, pw, "'{}' must be an object with a 'type'", pw);
        const std::string type = part["type"].get<std::string>();
        if (type != "text")
            fail(400, pw + ".type",
                 "content part type '{}' is not supported by this server (text only)", type);
        if (!part.contains("text") || !part["text"].is_string())
            fail(400, pw + ".text", "'{}.text' must be a string", pw);
        if (!text.empty()) text += "\n";
        text += part["text"].get<std::string>();
    }
    return text;
}

J check_messages(const J& o) {
    const J* ms = request_field(o, "messages");
    if (!ms) fail(400, "messages", "'messages' is required");
    if (!ms->is_array() || ms->empty())
        fail(400, "messages", "'messages' must be a non-empty array of messages");
    J out = J::array();
    for (size_t i = 0; i < ms->size(); ++i) {
        const J& m = (*ms)[i];
        const std::string w = fmt::format("messages[{}]", i);
        if (!m.is_object()) fail(400, w, "'{}' must be an object", w);
        J msg = m;
        if (!m.contains("role") || !m["role"].is_string())
            fail(400, w + ".role", "'{}.role' must be a string", w);
        std::string role = m["role"].get<std::string>();
        if (role == "developer") role = "system";
        if (role != "system" && role != "user" && role != "assistant" && role != "tool" &&
            role != "function")
            fail(400, w + ".role",
                 "'{}.role' is '{}'; it must be system, developer, user, assistant or tool", w,
                 role);
        msg["role"] = role;
        const bool has_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
        if (m.contains("content") && !m["content"].is_null()) {
            msg["content"] = normalize_content(m["content"], w + ".content");
        } else if (role != "assistant") {
            fail(400, w + ".content", "'{}.content' is required for role {}", w, role);
        } else if (!has_calls) {
            msg["content"] = "";
        } else {
            msg["content"] = nullptr;
        }
        if (has_calls) {
            const J& calls = m["tool_calls"];
            if (role != "assistant" || !calls.is_array())
                fail(400, w + ".tool_calls",
                     "'{}.tool_calls' must be an array on an assistant message", w);
            for (size_t k = 0; k < calls.size(); ++k) {
                const J& c = calls[k];
                const std::string cw = fmt::format("{}.tool_calls[{}]", w, k);
                if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
                    fail(400, cw, "'{}' must be an object with a 'function'", cw);
                const J& f = c["function"];
                if (!f.contains("name") || !f["name"].is_string())
                    fail(400, cw + ".function.name", "'{}.function.name' must be a string", cw);
                if (f.contains("arguments") && !f["arguments"].is_string() &&
                    !f["arguments"].is_object())
                    fail(400, cw + ".function.arguments",
                         "'{}.function.arguments' must be a JSON string", cw);
                if (c.contains("id") && !c["id"].is_string())
                    fail(400, cw + ".id", "'{}.id' must be a string", cw);
            }
        }
        if (m.contains("name") && !m["name"].is_string())
            fail(400, w + ".name", "'{}.name' must be a string", w);
        if (m.contains("tool_call_id") && !m["tool_call_id"].is_null() &&
            !m["tool_call_id"].is_string())
            fail(400, w + ".tool_call_id", "'{}.tool_call_id' must be a string", w);
        out.push_back(std::move(msg));
    }
    return out;
}

void check_tools(const J& o, ChatRequest& r) {
    r.tools = nullptr;
    if (const J* ts = request_field(o, "tools")) {
        if (!ts->is_array()) fail(400, "tools", "'tools' must be an array of tools");
        for (size_t i = 0; i < ts->size(); ++i) {
            const J& t = (*ts)[i];
            const std::string w = fmt::format("tools[{}]", i);
            if (!t.is_object() || !t.contains("function") || !t["function"].is_object())
                fail(400, w, "'{}' must be {{\"type\": \"function\", \"function\": {{...}}}}", w);
            if (t.contains("type") && t["type"] != "function")
                fail(400, w + ".type", "'{}.type' must be \"function\"", w);
            const J& f = t["function"];
            if (!f.contains("name") || !f["name"].is_string() ||
                f["name"].get<std::string>().empty())
                fail(400, w + ".function.name", "'{}.function.name' must be a non-empty string", w);
            if (f.contains("parameters") && !f["parameters"].is_null() &&
                !f["parameters"].is_object())
                fail(400, w + ".function.parameters",
                     "'{}.function.parameters' must be a JSON Schema object", w);
            if (f.contains("description") && !f["description"].is_null() &&
                !f["description"].is_string())
                fail(400, w + ".function.description", "'{}.function.description' must be a string",
                     w);
            if (f.contains("strict") && !f["strict"].is_null() && !f["strict"].is_boolean())
                fail(400, w + ".function.strict", "'{}.function.strict' must be a boolean", w);
            if (f.contains("strict") && f["strict"] == true)
                r.strict_tools.push_back(f["name"].get<std::string>());
        }
        if (!ts->empty()) r.tools = *ts;
    }
    r.tool_choice = r.tools.is_null() ? ToolChoice::None : ToolChoice::Auto;
    if (const J* tc = request_field(o, "tool_choice")) {
        if (tc->is_string()) {
            const std::string s = tc->get<std::string>();
            if (s == "none")
                r.tool_choice = ToolChoice::None;
            else if (s == "auto")
                r.tool_choice = ToolChoice::Auto;
            else if (s == "required")
                r.tool_choice = ToolChoice::Required;
            else
                fail(400, "tool_choice",
                     "'tool_choice' is '{}'; use none, auto, required or "
                     "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}",
                     s);
        } else if (tc->is_object() && tc->contains("function") && (*tc)["function"].is_object() &&
                   (*tc)["function"].contains("name") && (*tc)["function"]["name"].is_string()) {
            r.tool_choice = ToolChoice::Named;
            r.tool_choice_name = (*tc)["function"]["name"].get<std::string>();
        } else {
            fail(400, "tool_choice",
                 "'tool_choice' must be none, auto, required or "
                 "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}");
        }
        if ((r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named) &&
            r.tools.is_null())
            fail(400, "tool_choice", "tool_choice '{}' needs a non-empty 'tools' list",
                 r.tool_choice == ToolChoice::Required ? "required" : r.tool_choice_name);
        if (r.tool_choice == ToolChoice::Named) {
            bool found = false;
            for (const J& t : r.tools) found = found || t["function"]["name"] == r.tool_choice_name;
            if (!found)
                fail(400, "tool_choice", "tool_choice names '{}', which is not in 'tools'",
                     r.tool_choice_name);
        }
    }
    r.parallel_tool_calls = get_bool(o, "parallel_tool_calls", true);
}

}  // namespace

ResponseFormat parse_response_format(const J& f, const std::string& where) {
    if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
        fail(400, where, "'{}' must be an object with a 'type' (text, json_object, json_schema)",
             where);
    const std::string t = f["type"].get<std::string>();
    ResponseFormat rf;
    rf.field = where;
    if (t == "text") return rf;
    if (t == "json_object") {
        rf.type = ResponseFormat::Type::JsonObject;
        return rf;
    }
    if (t != "json_schema")
        fail(400, where + ".type", "'{}.type' is '{}'; use text, json_object or json_schema", where,
             t);
    rf.type = ResponseFormat::Type::JsonSchema;
    // OpenAI chat nests the schema in json_schema {name, schema, strict}; the Responses API
    // and Anthropic put {name, schema, strict} beside the type.
    const J* holder = &f;
    std::string at = where;
    if (const J* js = request_field(f, "json_schema")) {
        if (!js->is_object())
            fail(400, where + ".json_schema",
                 "'{}.json_schema' must be an object {{\"name\", \"schema\", \"strict\"}}", where);
        holder = js;
        at = where + ".json_schema";
    }
    if (const J* name = request_field(*holder, "name"); name && !name->is_string())
        fail(400, at + ".name", "'{}.name' must be a string", at);
    if (const J* strict = request_field(*holder, "strict"); strict && !strict->is_boolean())
        fail(400, at + ".strict", "'{}.strict' must be a boolean", at);
    rf.field = at + ".schema";
    if (const J* schema = request_field(*holder, "schema")) {
        if (!schema->is_object() && !schema->is_boolean())
            fail(400, rf.field, "'{}' must be a JSON Schema (an object)", rf.field);
        rf.schema = *schema;
    }
    return rf;
}

nlohmann::ordered_json parse_body(std::string_view body) {
    J j;
    try {
        j = J::parse(body, [](int depth, J::parse_event_t, J&) {
            if (depth > kMaxDepth)
                fail(400, "", "the request body nests deeper than {} levels", kMaxDepth);
            return true;
        });
    } catch (const J::exception& e) {
        fail(400, "", "the request body is not valid JSON: {}", e.what());
    }
    if (!j.is_object()) fail(400, "", "the request body must be a JSON object");
    return j;
}

ChatRequest parse_chat_request(std::string_view body) {
    const J o = parse_body(body);
    ChatRequest r;
    parse_generation(o, r, true);
    r.messages = check_messages(o);
    check_tools(o, r);
    if (const J* k = request_field(o, "chat_template_kwargs")) {
        if (!k->is_object())
            fail(400, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
        r.chat_template_kwargs = *k;
    }
    r.add_generation_prompt = get_bool(o, "add_generation_prompt", true);
    r.echo = get_bool(o, "echo", false);
    return r;
}

CompletionRequest parse_completion_request(std::string_view body) {
    const J o = parse_body(body);
    CompletionRequest r;
    parse_generation(o, r, false);
    if (!r.max_tokens) r.max_tokens = 16;  // OpenAI's completions default
    r.echo = get_bool(o, "echo", false);
    if (*r.max_tokens == 0 && !r.echo)
        fail(400, "max_tokens",
             "'max_tokens' is 0, which generates nothing; it is allowed only with 'echo': true "
             "(the prompt and, with 'logprobs', its tokens' logprobs); ask for at least 1 token");
    const J* p = request_field(o, "prompt");
    if (!p) fail(400, "prompt", "'prompt' is required");
    auto bad = [] {
        fail(400, "prompt",
             "'prompt' must be a string, a list of strings, a list of token ids or "
             "a list of lists of token ids");
    };
    if (p->is_string()) {
        r.prompts.push_back({p->get<std::string>(), {}});
    } else if (p->is_array()) {
        if (p->empty()) fail(400, "prompt", "'prompt' is empty");
        if ((*p)[0].is_number_integer()) {
            r.prompts.push_back({std::nullopt, token_list(*p, "prompt")});
        } else {
            for (const J& x : *p) {
                if (x.is_string())
                    r.prompts.push_back({x.get<std::string>(), {}});
                else if (x.is_array())
                    r.prompts.push_back({std::nullopt, token_list(x, "prompt")});
                else
                    bad();
            }
        }
    } else {
        bad();
    }
    for (const Prompt& pr : r.prompts)
        if (pr.text ? pr.text->empty() : pr.ids.empty()) fail(400, "prompt", "a prompt is empty");
    if (r.prompts.size() * static_cast<size_t>(r.n) > 256)
        fail(400, "prompt", "{} prompts x n {} is more than 256 sequences in one request",
             r.prompts.size(), r.n);
    return r;
}

}  // namespace myriad::api
