// Token-mask cost of the grammar module (src/grammar) at the vocabularies of DeepSeek-V3 (128k)
// and o200k_base (200k), on a coding agent's edit-tool schema. One seeded walk of 20 documents
// takes a random allowed token at every step; the same token sequence is then replayed:
//   first   the walk itself: automaton states and transitions built as met, masks by trie walk
//   replay  a fresh vocabulary object (no cached masks), transitions known; the first fill of
//           each state is the trie walk alone
//   cached  the same vocabulary again: every mask a cached copy
// The yardstick is the copy of one mask (vocab/8 bytes) at the machine's memcpy bandwidth.
//   grammar_mask_bench [TOKENIZER_DIR...]   (default: the test fixtures in build/tokenizers)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <unordered_set>

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

static double us_since(Clock::time_point a) {
    return std::chrono::duration<double, std::micro>(Clock::now() - a).count();
}

// Runs the documents' token sequences (or, when `docs` is empty, makes them by a random walk);
// returns the mean microseconds of one fill_mask; `new_state_us`: the mean over the fills of a
// state met for the first time in this run.
static double run(const std::shared_ptr<const Grammar>& g,
                  const std::shared_ptr<const Vocabulary>& vocab,
                  std::vector<std::vector<TokenId>>& docs, size_t& steps, double& new_state_us) {
    std::unordered_set<StateId> seen;
    double new_total = 0;
    std::vector<uint32_t> mask(vocab->mask_words());
    const bool record = docs.empty();
    std::mt19937_64 rng(1);
    double total = 0;
    steps = 0;
    for (size_t d = 0; d < (record ? 20 : docs.size()); ++d) {
        if (record) docs.emplace_back();
        Matcher m(g, vocab);
        for (size_t i = 0; !m.is_terminated(); ++i) {
            auto a = Clock::now();
            m.fill_mask(mask);
            double us = us_since(a);
            total += us;
            ++steps;
            if (seen.insert(m.state()).second) new_total += us;
            if (!record) {
                m.accept_token(docs[d][i]);
                continue;
            }
            std::vector<TokenId> ok;
            for (size_t t = 0; t < vocab->size(); ++t)
                if (mask[t >> 5] >> (t & 31) & 1) ok.push_back(static_cast<TokenId>(t));
            TokenId pick = ok[rng() % ok.size()];
            if (m.steps() > 80) {  // end the document: EOS, or a token nearer the end
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
                if (m.is_accepting()) pick = vocab->eos_ids()[0];
            }
            m.accept_token(pick);
            docs[d].push_back(pick);
        }
    }
    new_state_us = new_total / seen.size();
    return total / steps;
}

int main(int argc, char** argv) {
    std::vector<std::string> dirs;
    for (int i = 1; i < argc; ++i) dirs.push_back(argv[i]);
    if (dirs.empty()) dirs = {"build/tokenizers/deepseek_v3", "build/tokenizers/o200k_base"};
    // memcpy bandwidth, for the yardstick.
    std::vector<char> src(size_t{64} << 20, 1), dst(size_t{64} << 20);
    auto c0 = Clock::now();
    for (int i = 0; i < 5; ++i) std::memcpy(dst.data(), src.data(), src.size());
    double gbps = 5.0 * 2 * src.size() / (us_since(c0) * 1e3);
    std::printf("memcpy %.1f GB/s (read + write)\n", gbps);
    for (const auto& dir : dirs) {
        auto tok = myriad::Tokenizer::load(dir);
        auto vocab = Vocabulary::from_tokenizer(*tok);
        auto t0 = Clock::now();
        // A per-directory variant of the schema, so each compile is a first compile.
        std::string schema = std::string(kSchema);
        schema.insert(1, "\"title\":\"" + dir + "\",");
        auto g = compile_json_schema_text(schema);
        double compile_us = us_since(t0);
        std::vector<std::vector<TokenId>> docs;
        size_t steps = 0;
        double first_new, walk, unused;
        double first = run(g, vocab, docs, steps, first_new);
        auto fresh = Vocabulary::from_tokenizer(*tok);
        double replay = run(g, fresh, docs, steps, walk);
        double cached = run(g, fresh, docs, steps, unused);
        size_t mask_bytes = vocab->mask_words() * 4;
        std::printf(
            "%-30s vocab %7zu  compile %4.0f us  %3zu states  mask per step (%zu steps): first "
            "run %5.1f us (new state %6.0f us), replay %5.1f us (trie walk %6.0f us), all "
            "cached %5.2f us; one mask copy %zu B = %.2f us\n",
            dir.c_str(), vocab->size(), compile_us, g->state_count(), steps, first, first_new,
            replay, walk, cached, mask_bytes, 2.0 * mask_bytes / (gbps * 1e3));
    }
}
