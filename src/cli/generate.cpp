// myriad generate: one-shot greedy generation from token ids.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/greedy_generator.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "format/generation_config.h"
#include "model/model_config.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad::cli {

namespace {

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
    int64_t max_tokens = 16;
    double temperature = 0.0;
    int tp = 1;
    int threads = 0;
    int64_t prefill_chunk = 0;
    bool ids = false;
    std::string device = "cpu";
};

int run_generate(const GenerateArgs& a) {
    if (a.temperature != 0.0)
        bad_input("--temperature {}: only greedy decoding (--temperature 0) exists so far",
                  a.temperature);
    if (a.device != "cpu")
        bad_input("--device {}: only the cpu backend exists so far", a.device);
    if (a.max_tokens < 1) bad_input("--max-tokens {} must be at least 1", a.max_tokens);
    const std::string dir = resolve_model(a.model);
    std::vector<TokenId> prompt = parse_ids(a.prompt_ids, "--prompt-ids");
    ModelConfig config = load_model_config(dir);
    for (TokenId id : prompt)
        if (id >= config.vocab_size)
            bad_input("--prompt-ids: token id {} is outside the vocabulary of {} tokens ({})", id,
                      config.vocab_size, config.path);
    GenerationConfig gen = load_generation_config(dir);
    Checkpoint ckpt = Checkpoint::open(dir);

    WorkerGroupOptions wo;
    wo.tp = a.tp;
    wo.threads = a.threads;
    const int64_t total = static_cast<int64_t>(prompt.size()) + a.max_tokens;
    wo.kv_blocks = (total + wo.kv_block_size - 1) / wo.kv_block_size;
    WorkerGroup workers(config, ckpt, wo);

    GreedyOptions go;
    go.max_tokens = a.max_tokens;
    go.prefill_chunk = a.prefill_chunk;
    for (int64_t id : gen.eos_token_ids) go.stop_ids.push_back(static_cast<TokenId>(id));
    for (int64_t id : config.eos_token_ids) go.stop_ids.push_back(static_cast<TokenId>(id));
    GreedyResult res = generate_greedy(workers, prompt, go);

    std::string out;
    for (size_t i = 0; i < res.tokens.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(res.tokens[i]);
    }
    std::printf("%s\n", out.c_str());
    if (!a.ids) log::info("text output needs the tokenizer, which is not built yet: printed ids");
    const double decoded = static_cast<double>(res.tokens.size() > 0 ? res.tokens.size() - 1 : 0);
    log::info("prefill {} tokens in {:.3f} s ({:.1f} tok/s); decode {} tokens in {:.3f} s "
              "({:.1f} tok/s); tp {}{}",
              prompt.size(), res.prefill_seconds, prompt.size() / std::max(res.prefill_seconds, 1e-9),
              decoded, res.decode_seconds, decoded / std::max(res.decode_seconds, 1e-9), a.tp,
              res.stopped ? "; ended by a stop token" : "");
    return 0;
}

}  // namespace

Run add_generate(CLI::App& app) {
    auto a = std::make_shared<GenerateArgs>();
    app.add_option("model", a->model, "model folder (default: the shipped model)");
    app.add_option("--prompt-ids", a->prompt_ids, "prompt as comma-separated token ids")
        ->required();
    app.add_option("--max-tokens", a->max_tokens, "tokens to generate at most (default 16)");
    app.add_option("--temperature", a->temperature, "0 = greedy (the only mode so far)");
    app.add_option("--tp", a->tp, "tensor-parallel ranks (default 1)");
    app.add_option("--device", a->device, "cpu (default)");
    app.add_option("--threads", a->threads, "CPU threads in all (default: all cores)");
    app.add_option("--prefill-chunk", a->prefill_chunk, "prefill in chunks of N tokens");
    app.add_flag("--ids", a->ids, "print generated token ids, comma-separated");
    return [a] { return run_generate(*a); };
}

}  // namespace myriad::cli
