#include "cli/cli.h"

#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "cli/suggest.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

int main(int argc, char** argv) {
    CLI::App app{"myriad: plans, serves and operates DeepSeek-V3-family MoE models"};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "every subcommand's flags");
    app.set_version_flag("--version", std::string("myriad ") + MYRIAD_VERSION);
    bool quiet = false;
    app.add_flag("-q,--quiet", quiet, "print warnings and errors only");
    std::map<CLI::App*, Run> runs;
    auto add = [&](const char* name, const char* help, Run (*fn)(CLI::App&)) {
        CLI::App* sub = app.add_subcommand(name, help);
        runs[sub] = fn(*sub);
    };
    add("generate", "one-shot generation from token ids, text or a chat message", add_generate);
    add("inspect", "config, tensors, bytes by dtype and per rank", add_inspect);
    add("tokenize", "text to token ids (JSON arrays)", add_tokenize);
    add("detokenize", "token ids to text", add_detokenize);
    add("chat-template", "the exact prompt a chat request renders to", add_chat_template);
    add("bench-model", "prefill and decode speed of the engine alone", add_bench_model);
    add("serve", "the OpenAI-compatible server", add_serve);
    add("chat", "terminal chat on the engine (streams; reasoning dimmed)", add_chat);
    add("quantize", "a BF16 checkpoint to NVFP4 (ModelOpt) or FP8 blocks (DeepSeek)", add_quantize);
    add("eval", "what a quantisation costs: perplexity, KL divergence, top-1 agreement", add_eval);
    add("plan", "will a model fit these GPUs: layouts, KV capacity, context", add_plan);
    add("pull", "resumable, parallel, verified download into the HF cache", add_pull);
    add("service", "run myriad serve as a systemd service (service install ...)", add_service);
    add("bench", "serving benchmark against any OpenAI-compatible server", add_bench);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const std::string unknown =
            explain_unknown(app, std::vector<std::string>(argv, argv + argc));
        if (!unknown.empty())
            std::fprintf(stderr, "myriad: %s\n", unknown.c_str());
        else
            std::fprintf(stderr, "myriad: %s (see myriad --help)\n", e.what());
        return 2;
    }
    if (quiet) log::set_level(log::Level::Warn);
    try {
        for (auto& [sub, run] : runs)
            if (sub->parsed()) return run();
    } catch (const Error& e) {
        std::fprintf(stderr, "myriad: error: %s\n", e.what());
        return e.exit_status();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myriad: error: %s\n", e.what());
        return 1;
    }
    return 1;
}

}  // namespace myriad::cli
