// Constrained decode for bench-model --json-schema (bench_constrained.h).
#include "cli/bench_constrained.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "grammar/grammar_cache.h"
#include "grammar/json_schema.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/text_file.h"

namespace myriad::cli {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

ConstrainedBatch::ConstrainedBatch(const std::string& schema_file, const std::string& tokenizer_dir,
                                   int64_t model_vocab)
    : model_vocab_(model_vocab), words_(static_cast<int32_t>((model_vocab + 31) / 32)) {
    const std::string text = read_text_file(schema_file, "--json-schema");
    const std::unique_ptr<Tokenizer> tok = Tokenizer::load(tokenizer_dir);
    vocab_ = grammar::Vocabulary::from_tokenizer(*tok);
    if (static_cast<int64_t>(vocab_->size()) > model_vocab)
        bad_input(
            "--json-schema: the tokenizer in {} has {} tokens, more than the model's {} "
            "logits a row; give the model's own tokenizer (--tokenizer)",
            tokenizer_dir, vocab_->size(), model_vocab);
    // The first compile of this text; the second is the cache's answer (GrammarCache::shared,
    // as the server's requests with the same schema get it).
    auto t = Clock::now();
    try {
        grammar_ = grammar::compile_json_schema_text(text);
    } catch (const Error& e) {
        bad_input("--json-schema {}: {}", schema_file, e.what());
    }
    compile_s_ = since(t);
    t = Clock::now();
    const auto again = grammar::compile_json_schema_text(text);
    cached_s_ = since(t);
    if (again != grammar_) internal_error("--json-schema: the grammar cache compiled it again");
}

void ConstrainedBatch::reset(int64_t batch) {
    matchers_.clear();
    for (int64_t i = 0; i < batch; ++i) matchers_.emplace_back(grammar_, vocab_);
    host_s_ = 0;
    documents_ = 0;
}

void ConstrainedBatch::fill(StepSampling& s) {
    const auto t = Clock::now();
    const size_t n = matchers_.size();
    s.rows.assign(n, SampleRow{});
    s.edits.clear();
    s.mask_words = words_;
    s.masks.assign(n * static_cast<size_t>(words_), 0u);
    for (size_t i = 0; i < n; ++i) {
        matchers_[i].fill_mask(std::span<uint32_t>(s.masks.data() + i * words_, words_));
        s.rows[i].mask = static_cast<int32_t>(i);
    }
    host_s_ += since(t);
}

void ConstrainedBatch::choose(const float* logits, std::vector<int32_t>& tokens) {
    const auto t = Clock::now();
    const size_t n = matchers_.size();
    tokens.assign(n, -1);
    mask_.assign(static_cast<size_t>(words_), 0u);
    for (size_t i = 0; i < n; ++i) {
        std::fill(mask_.begin(), mask_.end(), 0u);
        matchers_[i].fill_mask(mask_);
        const float* row = logits + static_cast<int64_t>(i) * model_vocab_;
        float best = -INFINITY;
        for (int64_t v = 0; v < model_vocab_; ++v)
            if ((mask_[v / 32] >> (v % 32) & 1u) && (tokens[i] < 0 || row[v] > best)) {
                best = row[v];
                tokens[i] = static_cast<int32_t>(v);
            }
    }
    host_s_ += since(t);
}

void ConstrainedBatch::accept(const std::vector<int32_t>& tokens) {
    const auto t = Clock::now();
    for (size_t i = 0; i < matchers_.size(); ++i) {
        grammar::Matcher& m = matchers_[i];
        if (tokens[i] < 0 || !m.accept_token(tokens[i]))
            internal_error(
                "bench-model --json-schema: sequence {} chose token {}, which its "
                "mask did not allow",
                i, tokens[i]);
        // A complete document (EOS accepted, or nothing more may follow) starts the next.
        if (m.is_terminated() || (m.is_accepting() && m.next_bytes().none())) {
            m.reset();
            ++documents_;
        }
    }
    host_s_ += since(t);
}

int64_t ConstrainedBatch::states() const {
    return static_cast<int64_t>(grammar_->state_count());
}

}  // namespace myriad::cli
