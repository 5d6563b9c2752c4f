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

}  // namespace myriad::api
