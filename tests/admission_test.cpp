// Admission never leaks: a request the engine refuses after it took its slots (n = 128, the most
// a request may ask) gives every slot back, whatever the refusal; token ids outside the vocabulary
// are refused by the API layer before admission.
#include <gtest/gtest.h>

#include <functional>

#include "api/api_error.h"
#include "api/generation.h"
#include "api/server_state.h"
#include "engine/engine.h"
#include "model_runner.h"
#include "tokenizer/tokenizer.h"

namespace myriad::testing {
namespace {

using api::SequenceSpec;

constexpr int64_t kN = 128;

struct Rig {
    std::unique_ptr<LoadedModel> model;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<Tokenizer> tokenizer;
    std::unique_ptr<api::ServerState> state;

    Rig() {
        const std::string dir = std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny";
        model = load_model(dir, 1);
        EngineConfig ec;
        ec.scheduler.max_num_seqs = kN;
        engine = std::make_unique<Engine>(*model->workers, ec);
        tokenizer = Tokenizer::load(dir);
        api::ServerOptions o;
        o.max_num_seqs = kN;
        o.max_queue = 0;  // the server takes exactly one request of n = 128
        state = std::make_unique<api::ServerState>(o);
        api::LoadedServerModel m;
        m.engine = engine.get();
        m.tokenizer = tokenizer.get();
        m.max_model_len = engine->max_model_len();
        state->set_ready(m);
    }
};

SamplingParams good() {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 4;
    return p;
}

TEST(Admission, EveryEngineRefusalGivesTheSlotsBack) {
    Rig r;
    const int64_t vocab = r.engine->vocab_size();
    const std::vector<TokenId> prompt = {100, 200, 300};
    struct Case {
        const char* what;
        std::function<void(SequenceSpec&)> spoil;
    };
    const std::vector<Case> cases = {
        {"empty prompt", [](SequenceSpec& s) { s.prompt.clear(); }},
        {"prompt id", [&](SequenceSpec& s) { s.prompt.push_back(static_cast<TokenId>(vocab)); }},
        {"prompt length",
         [&](SequenceSpec& s) {
             s.prompt.assign(static_cast<size_t>(r.engine->max_model_len()), 1);
         }},
        {"temperature", [](SequenceSpec& s) { s.params.temperature = -1; }},
        {"top_p", [](SequenceSpec& s) { s.params.top_p = 0; }},
        {"top_k", [](SequenceSpec& s) { s.params.top_k = -2; }},
        {"min_p", [](SequenceSpec& s) { s.params.min_p = 2; }},
        {"repetition_penalty", [](SequenceSpec& s) { s.params.repetition_penalty = 0; }},
        {"presence_penalty", [](SequenceSpec& s) { s.params.presence_penalty = 3; }},
        {"frequency_penalty", [](SequenceSpec& s) { s.params.frequency_penalty = -3; }},
        {"max_tokens", [](SequenceSpec& s) { s.params.max_tokens = 0; }},
        {"min_tokens", [](SequenceSpec& s) { s.params.min_tokens = 5; }},
        {"top_logprobs", [](SequenceSpec& s) { s.params.top_logprobs = 21; }},
        {"logit_bias",
         [&](SequenceSpec& s) {
             s.params.logit_bias = {{static_cast<TokenId>(vocab), 1.f}};
         }},
        {"stop_token_ids",
         [&](SequenceSpec& s) { s.params.stop_token_ids = {static_cast<TokenId>(vocab + 7)}; }},
        {"forced_tokens", [](SequenceSpec& s) { s.params.forced_tokens = {-1}; }},
    };
    api::GenerationFields g;
    for (const Case& c : cases) {
        // The refused sequence first (nothing submitted yet) and last (127 submitted first).
        for (bool last : {false, true}) {
            std::vector<SequenceSpec> specs(kN, SequenceSpec{prompt, good()});
            c.spoil(last ? specs.back() : specs.front());
            try {
                api::Generation gen(*r.state, std::move(specs), g, false);
                ADD_FAILURE() << c.what << ": the engine accepted it";
            } catch (const api::ApiError& e) {
                EXPECT_EQ(e.status(), 400) << c.what << ": " << e.what();
            }
            EXPECT_EQ(r.state->in_flight(), 0) << c.what << (last ? " (last)" : " (first)");
        }
    }
    // All 128 slots are free: a full request is admitted, and gives them back when done.
    {
        api::Generation gen(*r.state, std::vector<SequenceSpec>(kN, SequenceSpec{prompt, good()}),
                            g, false);
        EXPECT_EQ(r.state->in_flight(), kN);
        try {
            api::Generation more(*r.state, {SequenceSpec{prompt, good()}}, g, false);
            ADD_FAILURE() << "a 129th sequence was admitted";
        } catch (const api::ApiError& e) {
            EXPECT_EQ(e.status(), 429);
        }
    }
    EXPECT_EQ(r.state->in_flight(), 0);
}

TEST(Admission, TokenIdsOutsideTheVocabularyAreRefusedBeforeAdmission) {
    Rig r;
    const TokenId vocab = static_cast<TokenId>(r.engine->vocab_size());
    api::GenerationFields bias;
    bias.logit_bias = {{5, 1.f}, {vocab, 2.f}};
    api::GenerationFields stop;
    stop.stop_token_ids = {vocab - 1, vocab};
    for (const auto& [g, field] : {std::pair{bias, "logit_bias"}, {stop, "stop_token_ids"}}) {
        try {
            api::sampling_params(*r.state, g);
            ADD_FAILURE() << field << " accepted";
        } catch (const api::ApiError& e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_EQ(e.param(), field);
            EXPECT_NE(std::string(e.what()).find(std::to_string(vocab)), std::string::npos)
                << e.what();
        }
    }
    api::GenerationFields ok;
    ok.logit_bias = {{vocab - 1, -100.f}};
    ok.stop_token_ids = {0};
    const SamplingParams p = api::sampling_params(*r.state, ok);
    EXPECT_EQ(p.logit_bias.size(), 1u);
    EXPECT_EQ(r.state->in_flight(), 0);
}

}  // namespace
}  // namespace myriad::testing
