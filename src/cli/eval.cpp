// myriad eval: what a quantisation costs, measured on a text in a minute. MODEL and REF (usually
// the BF16 original) read the same tokens in windows of --context tokens, each window a fresh
// sequence; at every position after a window's first both predict the next token. Reported:
// perplexity of each, KL(REF || MODEL) of the next-token distributions (mean and 99th
// percentile, in nats), and how often their top-1 tokens agree; then a verdict:
//   excellent  KL mean <= 0.005 and top-1 >= 98 %
//   good       KL mean <= 0.02  and top-1 >= 95 %
//   usable     KL mean <= 0.1   and top-1 >= 90 %
//   unusable   otherwise
// (KL around 0.01 is where quantised models are commonly reported indistinguishable in use;
// above 0.1 answers visibly change.)
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "engine/sequence_logits.h"
#include "engine/worker_group.h"
#include "format/checkpoint.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text_file.h"

namespace myriad::cli {

namespace {

struct EvalArgs {
    std::string model, reference, text;
    bool json = false;
    int64_t context = 512;
    int64_t max_tokens = 4096;
    int tp = 1;
    int threads = 0;
};

struct Loaded {
    ModelConfig config;
    std::unique_ptr<Checkpoint> checkpoint;
    std::unique_ptr<WorkerGroup> workers;
};

Loaded load(const std::string& dir, const EvalArgs& a) {
    Loaded m;
    m.config = load_model_config(dir);
    m.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.tp = a.tp;
    wo.threads = a.threads;
    wo.kv_blocks = a.context / wo.kv_block_size + 1;
    m.workers = std::make_unique<WorkerGroup>(m.config, *m.checkpoint, wo);
    return m;
}

// log-softmax of `x` [vocab] into `out`, in double.
void log_softmax(const float* x, int64_t vocab, std::vector<double>& out) {
    out.resize(static_cast<size_t>(vocab));
    const double mx = *std::max_element(x, x + vocab);
    double sum = 0;
    for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(x[i]) - mx);
    const double lse = mx + std::log(sum);
    for (int64_t i = 0; i < vocab; ++i) out[static_cast<size_t>(i)] = double(x[i]) - lse;
}

// Logits of every position of `tokens` (one fresh sequence), [n, vocab].
const char* verdict(double kl_mean, double top1) {
    if (kl_mean <= 0.005 && top1 >= 0.98) return "excellent";
    if (kl_mean <= 0.02 && top1 >= 0.95) return "good";
    if (kl_mean <= 0.1 && top1 >= 0.90) return "usable";
    return "unusable";
}

int run_eval(const EvalArgs& a) {
    if (a.context < 2) bad_input("--context {} must be at least 2", a.context);
    if (a.max_tokens < 2) bad_input("--max-tokens {} must be at least 2", a.max_tokens);
    const std::string text = read_text_file(a.text, "--text");
    const std::string dir = resolve_model(a.model);
    auto tokenizer = Tokenizer::load(dir);
    std::vector<TokenId> ids = tokenizer->encode(text, false);
    if (static_cast<int64_t>(ids.size()) > a.max_tokens) ids.resize(a.max_tokens);
    if (ids.size() < 2) bad_input("--text {}: fewer than 2 tokens", a.text);

    Loaded m = load(dir, a), r = load(a.reference, a);
    const int64_t vocab = m.config.vocab_size;
    if (r.config.vocab_size != vocab)
        bad_input(
            "--reference {}: vocabulary of {} tokens, MODEL has {}; compare models that "
            "share a tokenizer",
            a.reference, r.config.vocab_size, vocab);
    for (TokenId t : ids)
        if (t >= vocab)
            bad_input("--text: token id {} is outside the model's vocabulary of {}", t, vocab);

    double nll_m = 0, nll_r = 0;
    int64_t agree = 0;
    std::vector<double> kls, lm, lr;
    for (size_t begin = 0; begin + 1 < ids.size(); begin += static_cast<size_t>(a.context)) {
        const size_t end = std::min(ids.size(), begin + static_cast<size_t>(a.context));
        std::vector<TokenId> win(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                 ids.begin() + static_cast<std::ptrdiff_t>(end));
        if (win.size() < 2) break;
        const std::vector<float> xm = sequence_logits(*m.workers, win, 0, 256);
        const std::vector<float> xr = sequence_logits(*r.workers, win, 0, 256);
        for (size_t i = 0; i + 1 < win.size(); ++i) {
            const float* pm = xm.data() + i * static_cast<size_t>(vocab);
            const float* pr = xr.data() + i * static_cast<size_t>(vocab);
            log_softmax(pm, vocab, lm);
            log_softmax(pr, vocab, lr);
            const auto next = static_cast<size_t>(win[i + 1]);
            nll_m -= lm[next];
            nll_r -= lr[next];
            double kl = 0;
            for (int64_t v = 0; v < vocab; ++v) {
                const auto j = static_cast<size_t>(v);
                kl += std::exp(lr[j]) * (lr[j] - lm[j]);
            }
            kls.push_back(std::max(kl, 0.0));
            agree +=
                (std::max_element(pm, pm + vocab) - pm) == (std::max_element(pr, pr + vocab) - pr);
        }
    }
    const auto n = static_cast<double>(kls.size());
    double kl_sum = 0;
    for (double k : kls) kl_sum += k;
    std::vector<double> sorted = kls;
    std::sort(sorted.begin(), sorted.end());
    const double kl_p99 =
        sorted[std::min(sorted.size() - 1, static_cast<size_t>(std::ceil(0.99 * n)) - 1)];
    const double ppl = std::exp(nll_m / n), ppl_ref = std::exp(nll_r / n), kl_mean = kl_sum / n,
                 top1 = agree / n;
    const char* v = verdict(kl_mean, top1);
    if (a.json) {
        nlohmann::ordered_json out = {{"ppl", ppl},
                                      {"ppl_reference", ppl_ref},
                                      {"kl_mean", kl_mean},
                                      {"kl_p99", kl_p99},
                                      {"top1_agreement", top1},
                                      {"verdict", v},
                                      {"positions", kls.size()}};
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("%-22s %14s %14s\n", "", "MODEL", "REFERENCE");
    std::printf("%-22s %14.4f %14.4f\n", "perplexity", ppl, ppl_ref);
    std::printf("%-22s %14.6f\n", "KL mean (nats)", kl_mean);
    std::printf("%-22s %14.6f\n", "KL p99 (nats)", kl_p99);
    std::printf("%-22s %13.2f%%\n", "top-1 agreement", 100 * top1);
    std::printf("%-22s %14zu\n", "positions", kls.size());
    std::printf(
        "verdict: %s (KL mean %.4f, top-1 %.1f %%; excellent <= 0.005 / 98 %%, good <= "
        "0.02 / 95 %%, usable <= 0.1 / 90 %%)\n",
        v, kl_mean, 100 * top1);
    return 0;
}

}  // namespace

Run add_eval(CLI::App& app) {
    auto a = std::make_shared<EvalArgs>();
    app.add_option("model", a->model, "the model to judge (e.g. a quantised one)")->required();
    app.add_option("--reference", a->reference, "the model to compare with (e.g. BF16)")
        ->required();
    app.add_option("--text", a->text, "a text file; MODEL's tokenizer reads it")->required();
    app.add_flag("--json", a->json,
                 "print only a JSON object: ppl, ppl_reference, kl_mean, kl_p99, "
                 "top1_agreement, verdict, positions");
    app.add_option("--context", a->context, "tokens per window (default 512)");
    app.add_option("--max-tokens", a->max_tokens, "tokens of the text used at most (default 4096)");
    app.add_option("--tp", a->tp, "tensor-parallel ranks (default 1)");
    app.add_option("--threads", a->threads, "CPU threads in all (default: all cores)");
    return [a] { return run_eval(*a); };
}

}  // namespace myriad::cli
