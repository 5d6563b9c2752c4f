#include "api/tokenize_handler.h"

#include "api/api_error.h"
#include "api/openai_request.h"
#include "api/prompt_renderer.h"
#include "api/response_common.h"

namespace myriad::api {

namespace {
using J = nlohmann::ordered_json;
}

Reply tokenize(ServerState& state, std::string_view body) {
    const J o = parse_body(body);
    const LoadedServerModel& m = state.model();
    if (o.contains("model") && !o["model"].is_null()) {
        if (!o["model"].is_string()) fail(400, "model", "'model' must be a string");
        std::string model = o["model"].get<std::string>();
        check_model(state, model);
    }
    std::vector<TokenId> ids;
    if (o.contains("messages")) {
        J chat = o;
        if (!chat.contains("model")) chat["model"] = state.options().served_model_name;
        const ChatRequest r = parse_chat_request(dump(chat));
        ids = m.tokenizer->encode(m.renderer->render(r), false);
    } else {
        if (!o.contains("prompt") || !o["prompt"].is_string())
            fail(400, "prompt", "'prompt' (a string) or 'messages' is required");
        bool add_special = true;
        if (o.contains("add_special_tokens")) {
            if (!o["add_special_tokens"].is_boolean())
                fail(400, "add_special_tokens", "'add_special_tokens' must be a boolean");
            add_special = o["add_special_tokens"].get<bool>();
        }
        ids = m.tokenizer->encode(o["prompt"].get<std::string>(), add_special);
    }
    Reply r;
    r.body = dump(J{{"count", ids.size()},
                    {"max_model_len", m.max_model_len},
                    {"tokens", ids},
                    {"token_strs", nullptr}});
    return r;
}

Reply detokenize(ServerState& state, std::string_view body) {
    const J o = parse_body(body);
    const LoadedServerModel& m = state.model();
    if (!o.contains("tokens") || !o["tokens"].is_array())
        fail(400, "tokens", "'tokens' must be an array of token ids");
    std::vector<TokenId> ids;
    for (const J& t : o["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
            t.get<int64_t>() >= m.tokenizer->vocab_size())
            fail(400, "tokens", "'tokens' holds {}, which is not a token id of this model (0..{})",
                 t.dump(), m.tokenizer->vocab_size() - 1);
        ids.push_back(static_cast<TokenId>(t.get<int64_t>()));
    }
    Reply r;
    r.body = dump(J{{"prompt", m.tokenizer->decode(ids)}});
    return r;
}

Reply tokenizer_info(ServerState& state, std::string_view) {
    const LoadedServerModel& m = state.model();
    const Tokenizer& tok = *m.tokenizer;
    J info = J::object();
    // tokenizer_config.json's special tokens; BOS and EOS from the tokenizer where it has none.
    const J& special = m.renderer->special_tokens();
    for (const char* name : {"bos_token", "eos_token", "pad_token", "unk_token"}) {
        if (special.contains(name) && special[name].is_string()) {
            info[name] = special[name];
            continue;
        }
        std::optional<TokenId> id;
        if (std::string_view(name) == "bos_token") id = tok.bos_id();
        if (std::string_view(name) == "eos_token")
            id = m.eos_ids.empty() ? tok.eos_id() : std::optional<TokenId>(m.eos_ids.front());
        const std::optional<std::string> text = id ? tok.id_to_token(*id) : std::nullopt;
        info[name] = text ? J(*text) : J(nullptr);
    }
    const std::string chat_template = m.renderer->template_source();
    info["chat_template"] = chat_template.empty() ? J(nullptr) : J(chat_template);
    info["model_max_length"] = m.max_model_len;
    info["vocab_size"] = tok.vocab_size();
    Reply r;
    r.body = dump(info);
    return r;
}

}  // namespace myriad::api
