// bench-model --json-schema: every sequence of a timed decode step constrained to one JSON
// schema, as the server constrains a structured-output request. Each sequence has a matcher
// over the schema's grammar; before a step its allowed-token mask goes into the step's sampling
// input (applied where the logits are: on the device, or here for host-chosen rows), and after
// it the chosen token advances the matcher. A finished document starts the next one, so every
// step stays constrained. The host's share of the step (masks filled, tokens accepted) is timed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"
#include "ops/step_sampling.h"

namespace myriad::cli {

class ConstrainedBatch {
  public:
    // `schema_file`'s grammar over `tokenizer_dir`'s vocabulary, for a model of `model_vocab`
    // logits a row (ids past the tokenizer's are never allowed). Compiles the schema twice to
    // time a compile and a cache hit.
    ConstrainedBatch(const std::string& schema_file, const std::string& tokenizer_dir,
                     int64_t model_vocab);

    // The matchers of `batch` sequences, each at the start of a document.
    void reset(int64_t batch);
    // Rows 0..batch-1 of the next step: row i masked by sequence i's matcher (greedy).
    void fill(StepSampling& s);
    // Host-chosen rows: the masked argmax of each of the batch's logit rows (lowest id on ties).
    void choose(const float* logits, std::vector<int32_t>& tokens);
    // The step's chosen tokens: each advances its sequence (a token the mask forbade is a bug
    // and stops the benchmark).
    void accept(const std::vector<int32_t>& tokens);

    double compile_s() const { return compile_s_; }
    double cached_compile_s() const { return cached_s_; }
    double host_s() const { return host_s_; }         // since reset()
    int64_t documents() const { return documents_; }  // finished since reset()
    int64_t states() const;                           // the grammar's automaton states so far

  private:
    std::shared_ptr<const grammar::Grammar> grammar_;
    std::shared_ptr<const grammar::Vocabulary> vocab_;
    int64_t model_vocab_ = 0;
    int32_t words_ = 0;  // mask words for the model's vocabulary
    std::vector<grammar::Matcher> matchers_;
    std::vector<uint32_t> mask_;  // choose(): one row's mask
    double compile_s_ = 0, cached_s_ = 0, host_s_ = 0;
    int64_t documents_ = 0;
};

}  // namespace myriad::cli
