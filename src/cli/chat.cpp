// myriad chat: a terminal conversation on the same engine, template and output parsers as the
// server. Replies stream as they are generated; reasoning is shown dimmed (on a terminal) and is
// not sent back in later turns, as OpenAI clients do. Lines starting with '/' are commands.
// Ctrl-C stops the reply being written; at the prompt it (or Ctrl-D) ends the chat.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/output_parser.h"
#include "api/prompt_renderer.h"
#include "cli/commands.h"
#include "cli/engine_setup.h"
#include "cli/line_reader.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text_file.h"

namespace myriad::cli {

namespace {

std::atomic<bool> g_interrupted{false};

void on_sigint(int) {
    g_interrupted = true;
}

struct ChatArgs {
    std::string model;
    EngineFlags engine;
    std::string system;
    std::string chat_template;
    int64_t max_tokens = 1024;
    SamplingFlags sampling;
};

const char* const kHelp =
    "commands: /reset (forget the conversation), /system TEXT (new system prompt, and reset), "
    "/system (show it), /exit; Ctrl-C stops a reply, Ctrl-D ends the chat\n";

class Conversation {
  public:
    explicit Conversation(std::string system) : system_(std::move(system)) { reset(); }
    void reset() {
        messages_ = nlohmann::ordered_json::array();
        if (!system_.empty()) messages_.push_back({{"role", "system"}, {"content", system_}});
    }
    void set_system(std::string text) {
        system_ = std::move(text);
        reset();
    }
    const std::string& system() const { return system_; }
    void add(const char* role, const std::string& text) {
        messages_.push_back({{"role", role}, {"content", text}});
    }
    void drop_last() { messages_.erase(messages_.end() - 1); }
    const nlohmann::ordered_json& messages() const { return messages_; }

  private:
    std::string system_;
    nlohmann::ordered_json messages_;
};

// Streams one reply; returns its content (what the next turn sends back).
std::string reply(Engine& engine, const Tokenizer& tokenizer, const api::PromptRenderer& renderer,
                  const std::string& model_type, const Conversation& conv,
                  const SamplingParams& params, bool color) {
    api::ChatRequest request;
    request.messages = conv.messages();
    const std::string prompt = renderer.render(request);
    const std::vector<TokenId> ids = tokenizer.encode(prompt, false);
    api::ParserOptions po =
        api::default_parser_options(model_type, api::prompt_ends_in_think(prompt), false);
    auto parser = api::make_output_parser(po);
    IncrementalDetokenizer detok(tokenizer, true, parser_special_tokens(tokenizer));

    bool in_reasoning = false;
    auto print = [&](const api::OutputDelta& d) {
        if (!d.reasoning.empty()) {
            if (!in_reasoning && color) std::fputs("\x1b[2m", stdout);
            in_reasoning = true;
            std::fputs(d.reasoning.c_str(), stdout);
        }
        if (!d.content.empty()) {
            if (in_reasoning) {
                if (color) std::fputs("\x1b[0m", stdout);
                std::fputs("\n", stdout);
                in_reasoning = false;
            }
            std::fputs(d.content.c_str(), stdout);
        }
        std::fflush(stdout);
    };

    g_interrupted = false;
    auto handle = engine.submit(ids, params);
    RequestOutput out;
    FinishReason reason = FinishReason::None;
    while (handle->next(out)) {
        if (!out.error.empty()) {
            std::fprintf(stderr, "\nmyriad: error: %s\n", out.error.c_str());
            break;
        }
        if (g_interrupted && !handle->cancelled()) handle->cancel();
        for (TokenId id : out.tokens) {
            // The stop token ends the reply; it is not part of the text.
            if (out.finished && id == out.stop_token) continue;
            print(parser->feed(detok.push(id)));
        }
        if (out.finished) reason = out.reason;
    }
    print(parser->feed(detok.finish()));
    print(parser->finish());
    if (in_reasoning && color) std::fputs("\x1b[0m", stdout);
    std::fputs("\n", stdout);
    if (reason == FinishReason::Length)
        std::fprintf(stderr, "[stopped at --max-tokens %lld]\n", (long long)params.max_tokens);
    if (reason == FinishReason::Abort) std::fprintf(stderr, "[interrupted]\n");
    std::fflush(stdout);
    return parser->result().content.value_or("");
}

int run_chat(ChatArgs& a) {
    if (a.max_tokens < 1) bad_input("--max-tokens {} must be at least 1", a.max_tokens);
    check_engine_flags(a.engine);
    const std::string dir = resolve_model(a.model);
    const std::string override_template =
        a.chat_template.empty() ? "" : read_text_file(a.chat_template, "--chat-template");
    ModelSource source = open_model_source(dir);  // the folder, opened once
    auto tokenizer = Tokenizer::load(dir);
    const ModelConfig config = source.config;
    api::PromptRenderer renderer(dir, config.model_type, override_template);
    EngineFlags flags = a.engine;
    flags.max_num_seqs = 1;
    const plan::RunPlan run = plan_run(source, flags);
    LoadOptions lo;
    lo.speculative =
        speculative_config(flags.speculative, flags.num_speculative_tokens, flags.draft_model);
    LoadedEngine model = load_engine(std::move(source), run, lo);
    Engine& engine = *model.engine;
    engine.start();

    SamplingParams p = a.sampling.resolve(engine);
    p.max_tokens = a.max_tokens;

    const bool tty_in = isatty(STDIN_FILENO), color = isatty(STDOUT_FILENO);
    struct sigaction sa = {};
    sa.sa_handler = on_sigint;  // no SA_RESTART: Ctrl-C at the prompt ends the read
    sigaction(SIGINT, &sa, nullptr);
    if (tty_in)
        std::fprintf(stderr, "myriad chat: %s (max %lld tokens per reply). %s", dir.c_str(),
                     (long long)engine.max_model_len(), kHelp);

    Conversation conv(a.system);
    LineReader input(color ? "\x1b[1m> \x1b[0m" : "> ");
    for (;;) {
        g_interrupted = false;
        std::optional<std::string> next = input.next();
        if (!next) break;
        const std::string& line = *next;
        if (line.empty()) continue;
        if (line[0] == '/') {
            std::istringstream words(line);
            std::string cmd;
            words >> cmd;
            std::string rest;
            std::getline(words >> std::ws, rest);
            if (cmd == "/exit" || cmd == "/quit") break;
            if (cmd == "/reset") {
                conv.reset();
                std::fputs("[conversation reset]\n", stdout);
            } else if (cmd == "/system") {
                if (rest.empty()) {
                    std::printf("[system: %s]\n",
                                conv.system().empty() ? "(none)" : conv.system().c_str());
                } else {
                    conv.set_system(rest);
                    std::fputs("[system prompt set; conversation reset]\n", stdout);
                }
            } else if (cmd == "/help") {
                std::fputs(kHelp, stdout);
            } else {
                std::printf("[unknown command %s] %s", cmd.c_str(), kHelp);
            }
            std::fflush(stdout);
            continue;
        }
        conv.add("user", line);
        try {
            const std::string content =
                reply(engine, *tokenizer, renderer, config.model_type, conv, p, color);
            conv.add("assistant", content);
        } catch (const Error& e) {
            // A turn that cannot run (e.g. the conversation outgrew the context) loses only
            // itself: the chat goes on.
            conv.drop_last();
            std::fprintf(stderr, "myriad: error: %s (try /reset)\n", e.what());
        }
    }
    if (tty_in) std::fputs("\n", stdout);
    return 0;
}

}  // namespace

Run add_chat(CLI::App& app) {
    auto a = std::make_shared<ChatArgs>();
    app.add_option("model", a->model, "model folder (default: the shipped model)");
    app.add_option("--system", a->system, "system prompt");
    app.add_option("--chat-template", a->chat_template,
                   "a Jinja chat template file to use instead of the model's");
    app.add_option("--max-tokens", a->max_tokens, "tokens per reply at most (default 1024)");
    add_sampling_flags(app, a->sampling, 0.0);
    add_engine_flags(app, a->engine);
    return [a] { return run_chat(*a); };
}

}  // namespace myriad::cli
