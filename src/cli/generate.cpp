// myriad generate: one-shot generation from token ids on the engine; or, with --concurrency,
// R requests pushed through the engine C at a time, reporting throughput.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/engine_setup.h"
#include "model/model_config.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<TokenId> parse_ids(const std::string& text, const char* flag) {
    std::vector<TokenId> ids;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t comma = text.find(',', pos);
        if (comma == std::string::npos) comma = text.size();
        std::string item = text.substr(pos, comma - pos);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        TokenId v = 0;
        auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0)
            bad_input("{}: '{}' is not a token id (expected comma-separated integers ≥ 0)", flag,
                      item);
        ids.push_back(v);
        pos = comma + 1;
    }
    return ids;
}

struct GenerateArgs {
    std::string model;
    std::string prompt_ids;
    std::string prompt_text;  // --prompt: encoded as is
    std::string chat_text;    // --chat: one user message through the chat template
    int64_t max_tokens = 16;
    SamplingFlags sampling;
    int64_t n = 1;
    EngineFlags engine;
    bool ids = false;
    bool ignore_eos = false;
    int64_t concurrency = 0, requests = 0, input_len = 128, shared_prefix = 0;
};

std::string join_ids(const std::vector<TokenId>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(ids[i]);
    }
    return out;
}

// Drains one request's outputs; returns its tokens.
std::vector<TokenId> collect(RequestHandle& h, RequestOutput* last) {
    std::vector<TokenId> tokens;
    RequestOutput out;
    while (h.next(out)) {
        if (!out.error.empty()) internal_error("request {} failed: {}", h.id(), out.error);
        tokens.insert(tokens.end(), out.tokens.begin(), out.tokens.end());
        if (out.finished && last) *last = out;
    }
    return tokens;
}

int run_concurrency(const GenerateArgs& a, Engine& engine, const SamplingParams& base,
                    const std::vector<TokenId>& fixed_prompt, int64_t vocab) {
    if (a.requests < 1) bad_input("--requests {} must be at least 1", a.requests);
    std::mt19937 rng(1);
    std::vector<TokenId> prefix;
    for (int64_t i = 0; i < a.shared_prefix; ++i)
        prefix.push_back(static_cast<TokenId>(rng() % vocab));
    auto make_prompt = [&] {
        if (!fixed_prompt.empty()) return fixed_prompt;
        std::vector<TokenId> p = prefix;
        while (static_cast<int64_t>(p.size()) < std::max(a.input_len, a.shared_prefix + 1))
            p.push_back(static_cast<TokenId>(rng() % vocab));
        return p;
    };
    engine.start();
    auto t0 = Clock::now();
    int64_t submitted = 0, prompt_tokens = 0, generated = 0, cached = 0;
    std::vector<std::shared_ptr<RequestHandle>> live;
    while (submitted < a.requests || !live.empty()) {
        while (submitted < a.requests && static_cast<int64_t>(live.size()) < a.concurrency) {
            SamplingParams p = base;
            if (p.seed) p.seed = *p.seed + static_cast<uint64_t>(submitted);
            auto prompt = make_prompt();
            prompt_tokens += static_cast<int64_t>(prompt.size());
            live.push_back(engine.submit(prompt, p));
            ++submitted;
        }
        RequestOutput last;
        generated += static_cast<int64_t>(collect(*live.front(), &last).size());
        cached += last.cached_tokens;
        live.erase(live.begin());
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    EngineStats st = engine.stats();
    std::printf(
        "requests %lld, concurrency %lld: %.3f s; prompt %.1f tok/s (%lld cached of %lld); "
        "generated %.1f tok/s; %lld steps, %lld preemptions\n",
        (long long)a.requests, (long long)a.concurrency, s, prompt_tokens / s, (long long)cached,
        (long long)prompt_tokens, generated / s, (long long)st.steps, (long long)st.preemptions);
    return 0;
}

int run_generate(GenerateArgs& a) {
    check_engine_flags(a.engine);
    if (a.max_tokens < 1) bad_input("--max-tokens {} must be at least 1", a.max_tokens);
    if (a.n < 1) bad_input("-n {} must be at least 1", a.n);
    const bool bench = a.concurrency > 0;
    const int given = !a.prompt_ids.empty() + !a.prompt_text.empty() + !a.chat_text.empty();
    if (given > 1) bad_input("give one of --prompt-ids, --prompt and --chat");
    if (!bench && given == 0) bad_input("give a prompt: --prompt-ids, --prompt or --chat");
    const std::string dir = resolve_model(a.model);
    std::vector<TokenId> prompt;
    std::unique_ptr<Tokenizer> tokenizer;
    if (!a.prompt_ids.empty()) prompt = parse_ids(a.prompt_ids, "--prompt-ids");
    // Text needs the tokenizer; without one (a folder of weights only) ids are printed.
    ModelSource source = open_model_source(dir);  // the folder, opened once
    const bool has_tokenizer = source.has_tokenizer();
    if (!a.prompt_text.empty() || !a.chat_text.empty() || (!a.ids && has_tokenizer))
        tokenizer = Tokenizer::load(dir);
    if (!a.prompt_text.empty()) prompt = tokenizer->encode(a.prompt_text, false);
    if (!a.chat_text.empty()) {
        nlohmann::ordered_json request = {
            {"messages",
             nlohmann::ordered_json::array({{{"role", "user"}, {"content", a.chat_text}}})}};
        // The rendered prompt holds BOS when the template writes it: no second one.
        prompt = tokenizer->encode(ChatTemplate::load(dir).render(request), false);
    }
    const ModelConfig& config = source.config;
    for (TokenId id : prompt)
        if (id >= config.vocab_size)
            bad_input("--prompt-ids: token id {} is outside the vocabulary of {} tokens ({})", id,
                      config.vocab_size, config.path);
    // The whole run decided before any weight is read (exit 2 with what would work).
    const plan::RunPlan run = plan_run(source, a.engine);
    LoadOptions lo;
    lo.speculative = speculative_config(a.engine.speculative, a.engine.num_speculative_tokens,
                                        a.engine.draft_model);
    LoadedEngine model = load_engine(std::move(source), run, lo);
    Engine& engine = *model.engine;

    SamplingParams p = a.sampling.resolve(engine);
    p.max_tokens = a.max_tokens;
    p.ignore_eos = a.ignore_eos || bench;
    if (bench) return run_concurrency(a, engine, p, prompt, config.vocab_size);

    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (int64_t i = 0; i < a.n; ++i) {
        SamplingParams pi = p;
        if (pi.seed) pi.seed = *pi.seed + static_cast<uint64_t>(i);
        handles.push_back(engine.submit(prompt, pi));
    }
    auto t0 = Clock::now();
    engine.run_until_idle();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    int64_t total = 0;
    for (auto& h : handles) {
        auto tokens = collect(*h, nullptr);
        total += static_cast<int64_t>(tokens.size());
        if (a.ids || !tokenizer)
            std::printf("%s\n", join_ids(tokens).c_str());
        else  // the raw text, special tokens included, so scripts see what the model produced
            std::printf("%s\n", tokenizer->decode(tokens, false).c_str());
    }
    std::fflush(stdout);
    log::info(
        "{} sequence(s), {} prompt tokens each, {} tokens generated in {:.3f} s "
        "({:.1f} tok/s); temperature {}, tp {}",
        a.n, prompt.size(), total, s, total / std::max(s, 1e-9), p.temperature, a.engine.tp);
    const EngineStats st = model.engine->stats();
    if (st.spec_drafts > 0)
        log::info(
            "speculative ({}): {} drafts, {} draft tokens, {} accepted ({:.1f}%); {} steps for "
            "{} tokens",
            a.engine.speculative, st.spec_drafts, st.spec_draft_tokens, st.spec_accepted_tokens,
            100.0 * double(st.spec_accepted_tokens) / double(st.spec_draft_tokens), st.steps,
            total);
    return 0;
}

}  // namespace

Run add_generate(CLI::App& app) {
    auto a = std::make_shared<GenerateArgs>();
    app.add_option("model", a->model, "model folder (default: the shipped model)");
    app.add_option("--prompt-ids", a->prompt_ids, "prompt as comma-separated token ids");
    app.add_option("--prompt", a->prompt_text, "prompt text, encoded without BOS");
    app.add_option("--chat", a->chat_text, "one user message, rendered by the chat template");
    app.add_option("--max-tokens", a->max_tokens, "tokens to generate at most (default 16)");
    add_sampling_flags(app, a->sampling, 1.0, "random seed (sequence i of -n uses seed + i)");
    app.add_option("-n", a->n, "sequences from the prompt, in one batch, one line each");
    app.add_flag("--ignore-eos", a->ignore_eos, "do not stop at the model's stop tokens");
    add_engine_flags(app, a->engine);
    app.add_flag("--ids", a->ids, "print generated token ids, comma-separated");
    app.add_option("--concurrency", a->concurrency,
                   "throughput mode: keep C requests in flight (with --requests)");
    app.add_option("--requests", a->requests, "throughput mode: requests in all");
    app.add_option(
        "--input-len", a->input_len,
        "throughput mode without --prompt-ids: random prompts of N tokens (default 128)");
    app.add_option("--shared-prefix", a->shared_prefix,
                   "throughput mode: the first N prompt tokens are the same in every request");
    return [a] { return run_generate(*a); };
}

}  // namespace myriad::cli
