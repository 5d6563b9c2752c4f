// Token-mask cost of the grammar module (src/grammar) at the vocabularies of DeepSeek-V3 (128k)
// and o200k_base (200k), on a tool-call schema: a walk fills the mask at every step and takes
// one allowed token. Reports the first (uncached) fill of a state, the cached fill, and the
// mean per step; the limit to compare with is the copy of one mask (vocab/8 bytes).
//   grammar_mask_bench TOKENIZER_DIR...   (default: the test fixtures in build/tokenizers)
#include <chrono>
#include <cstdio>
#include <random>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

using namespace myriad::grammar;
using Clock = std::chrono::steady_clock;

static const char* kSchema = R"({"type":"object","properties":{
  "path":{"type":"string","description":"file to edit"},
  "old_string":{"type":"string"},"new_string":{"type":"string"},
  "replace_all":{"type":"boolean"},"line":{"type":"integer","minimum":1},
  "mode":{"enum":["insert","replace","delete"]}},
  "required":["path","old_string","new_string"],"additionalProperties":false})";

int main(int argc, char** argv) {
    std::vector<std::string> dirs;
    for (int i = 1; i < argc; ++i) dirs.push_back(argv[i]);
    if (dirs.empty()) dirs = {"build/tokenizers/deepseek_v3", "build/tokenizers/o200k_base"};
    for (const auto& dir : dirs) {
        auto tok = myriad::Tokenizer::load(dir);
        auto vocab = Vocabulary::from_tokenizer(*tok);
        auto t0 = Clock::now();
        auto g = compile_json_schema_text(kSchema);
        double compile_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        std::vector<uint32_t> mask(vocab->mask_words());
        std::mt19937_64 rng(1);
        double cold = 0, warm = 0, total = 0;
        size_t cold_n = 0, warm_n = 0, steps = 0;
        for (int pass = 0; pass < 2; ++pass) {  // the second pass finds every state's mask cached
            rng.seed(1);
            for (int doc = 0; doc < 20; ++doc) {
                Matcher m(g, vocab);
                while (!m.is_terminated() && m.steps() < 300) {
                    size_t states = g->state_count();
                    auto a = Clock::now();
                    m.fill_mask(mask);
                    double us = std::chrono::duration<double, std::micro>(Clock::now() - a).count();
                    bool was_cold = pass == 0 && g->state_count() > states;
                    (was_cold ? cold : warm) += us;
                    (was_cold ? cold_n : warm_n) += 1;
                    total += us;
                    ++steps;
                    std::vector<TokenId> ok;
                    for (size_t t = 0; t < vocab->size(); ++t)
                        if (mask[t >> 5] >> (t & 31) & 1) ok.push_back(static_cast<TokenId>(t));
                    TokenId pick = ok[rng() % ok.size()];
                    if (m.steps() > 80 && m.is_accepting()) pick = vocab->eos_ids()[0];
                    if (m.steps() > 80 && !m.is_accepting()) {
                        uint64_t before = m.min_bytes_to_accept();
                        for (TokenId t : ok) {
                            if (vocab->is_eos(t) || !m.accept_token(t)) continue;
                            bool shorter = m.min_bytes_to_accept() < before;
                            m.rollback(1);
                            if (shorter) {
                                pick = t;
                                break;
                            }
                        }
                    }
                    m.accept_token(pick);
                }
            }
        }
        std::printf(
            "%-32s vocab %7zu  compile (or cache hit) %7.0f us  states %5zu  mask: fills meeting "
            "new states %8.1f us "
            "(%zu)  cached/other %6.2f us (%zu)  mean %6.2f us over %zu steps  (one mask "
            "copy: %zu bytes)\n",
            dir.c_str(), vocab->size(), compile_us, g->state_count(), cold_n ? cold / cold_n : 0.0,
            cold_n, warm_n ? warm / warm_n : 0.0, warm_n, total / steps, steps,
            vocab->mask_words() * 4);
    }
}
