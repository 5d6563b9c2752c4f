#include "api/response_common.h"

#include <chrono>
#include <random>

#include "api/api_error.h"

namespace myriad::api {

std::string random_id(const char* prefix) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}-{:016x}{:016x}", prefix, rng(), rng());
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void check_model(const ServerState& state, std::string& model) {
    if (model.empty()) model = state.options().served_model_name;
    if (model != state.options().served_model_name)
        fail(404, "model", "The model '{}' does not exist; this server serves '{}'", model,
             state.options().served_model_name);
}

void check_test_output(const ServerState& state, const GenerationFields& g) {
    if (g.test_output && !state.options().enable_test_output)
        fail(400, "test_output",
             "'test_output' is a test facility; it works only on a server started with "
             "--enable-test-output");
}

nlohmann::ordered_json usage_json(const Usage& u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

namespace {

void spaced_json_to(const nlohmann::ordered_json& j, std::string& out) {
    if (j.is_object()) {
        out += '{';
        bool first = true;
        for (const auto& [k, v] : j.items()) {
            if (!first) out += ", ";
            first = false;
            out += dump(nlohmann::ordered_json(k));
            out += ": ";
            spaced_json_to(v, out);
        }
        out += '}';
    } else if (j.is_array()) {
        out += '[';
        for (size_t i = 0; i < j.size(); ++i) {
            if (i) out += ", ";
            spaced_json_to(j[i], out);
        }
        out += ']';
    } else {
        out += dump(j);
    }
}

}  // namespace

std::string spaced_json(const nlohmann::ordered_json& j) {
    std::string out;
    spaced_json_to(j, out);
    return out;
}

std::string token_text(const Tokenizer& tok, TokenId id) {
    if (tok.is_special(id))
        if (auto s = tok.id_to_token(id)) return *s;
    return tok.token_bytes(id);
}

nlohmann::ordered_json chat_logprobs(const Tokenizer& tok, const std::vector<SampleResult>& lp) {
    auto entry = [&](TokenId id, float logprob) {
        const std::string text = token_text(tok, id);
        nlohmann::ordered_json bytes = nlohmann::ordered_json::array();
        for (unsigned char c : text) bytes.push_back(int(c));
        return nlohmann::ordered_json{{"token", text}, {"logprob", logprob}, {"bytes", bytes}};
    };
    nlohmann::ordered_json content = nlohmann::ordered_json::array();
    for (const SampleResult& r : lp) {
        auto e = entry(r.token, r.logprob);
        e["top_logprobs"] = nlohmann::ordered_json::array();
        for (const TokenLogprob& t : r.top) e["top_logprobs"].push_back(entry(t.token, t.logprob));
        content.push_back(std::move(e));
    }
    return content;
}

}  // namespace myriad::api
