#include "sampling_runs.h"

#include <gtest/gtest.h>

#include "golden_reference.h"
#include "grammar/json_schema.h"
#include "model_runner.h"

namespace myriad::testing {

std::shared_ptr<const grammar::Vocabulary> synthetic_vocabulary() {
    static const auto vocab = [] {
        std::vector<std::string> bytes;
        for (char c = ' '; c <= '~'; ++c) bytes.emplace_back(1, c);
        const std::string chars = "{}[]\":,0123456789abcdefgh";
        for (char a : chars)
            for (char b : chars)
                if (bytes.size() < 318) bytes.push_back(std::string{a, b});
        bytes.resize(320);  // kThinkOpen, kThinkClose: no bytes
        return std::make_shared<const grammar::Vocabulary>(std::move(bytes),
                                                           std::vector<grammar::TokenId>{});
    }();
    return vocab;
}

std::shared_ptr<const grammar::Grammar> constrained_schema_grammar() {
    return grammar::compile_json_schema_text(
        R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": -50},
            "s": {"type": "string", "maxLength": 6}, "k": {"enum": ["ab", "c9", [1, 2]]},
            "xs": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}},
            "required": ["n", "s", "k"], "additionalProperties": false})");
}

std::vector<SamplingParams> request_kinds() {
    std::vector<SamplingParams> kinds;
    auto base = [](double t) {
        SamplingParams p;
        p.temperature = t;
        p.max_tokens = 20;
        p.ignore_eos = true;
        p.seed = 7;
        return p;
    };
    kinds.push_back(base(0));    // greedy
    kinds.push_back(base(1.0));  // plain temperature
    kinds.push_back(base(0.6));
    kinds.back().top_p = 0.9;
    kinds.push_back(base(1.3));
    kinds.back().top_k = 5;
    kinds.push_back(base(0.8));
    kinds.back().min_p = 0.05;
    kinds.push_back(base(0.9));
    kinds.back().top_k = 40;
    kinds.back().top_p = 0.8;
    kinds.back().min_p = 0.02;
    kinds.push_back(base(0.7));
    kinds.back().repetition_penalty = 1.3;
    kinds.push_back(base(1.0));
    kinds.back().presence_penalty = 0.8;
    kinds.back().frequency_penalty = 0.4;
    kinds.push_back(base(0));  // greedy with penalties and bias
    kinds.back().frequency_penalty = 1.5;
    kinds.back().logit_bias = {{5, 3.0f}, {9, -100.0f}, {5, 1.0f}};
    kinds.push_back(base(1.0));  // stop ids masked until min_tokens
    kinds.back().ignore_eos = false;
    kinds.back().stop_token_ids = {3, 4, 11};
    kinds.back().min_tokens = 6;
    kinds.push_back(base(0.9));  // logprobs: a host row
    kinds.back().top_logprobs = 3;
    kinds.push_back(base(1.0));  // forced first tokens: host rows, then the backend samples
    kinds.back().forced_tokens = {17, 18, 19};
    kinds.push_back(base(1.0));  // top_k 1 is greedy
    kinds.back().top_k = 1;
    auto constrained = [&](double t) {
        kinds.push_back(base(t));
        kinds.back().max_tokens = 48;  // room for the shortest document, 23 bytes
    };
    auto constraint = std::make_shared<OutputConstraint>();
    constraint->grammar = constrained_schema_grammar();
    constraint->vocab = synthetic_vocabulary();
    constrained(0);  // structured output: greedy
    kinds.back().constraint = constraint;
    constrained(1.2);  // sampled, cut by top-k and top-p, penalised
    kinds.back().constraint = constraint;
    kinds.back().top_k = 30;
    kinds.back().top_p = 0.95;
    kinds.back().frequency_penalty = 0.5;
    auto gated = std::make_shared<OutputConstraint>(*constraint);
    gated->think_open = kThinkOpen;
    gated->think_close = kThinkClose;
    constrained(1.0);  // the grammar after a reasoning gate (closed in time)
    kinds.back().constraint = gated;
    kinds.back().logit_bias = {{kThinkOpen, 8.0f}};
    constrained(0.8);  // with logprobs: the mask on a host row
    kinds.back().constraint = constraint;
    kinds.back().top_logprobs = 2;
    return kinds;
}

void ReplayDrafter::propose(const std::vector<Sequence*>& seqs) {
    for (Sequence* seq : seqs) {
        seq->draft.clear();
        const size_t i = static_cast<size_t>(seq->id - 1);
        if (i >= outputs_.size()) continue;
        const std::vector<TokenId>& want = outputs_[i];
        const size_t n = static_cast<size_t>(seq->num_output());
        for (size_t j = 0; j < static_cast<size_t>(seq->draft_limit); ++j)
            seq->draft.push_back(
                n + j < want.size()
                    ? want[n + j]
                    : static_cast<TokenId>((j * 7 + 5) % static_cast<size_t>(vocab_)));
        if (++calls_ % 3 == 0 && !seq->draft.empty())
            seq->draft.back() = static_cast<TokenId>((seq->draft.back() + 1) % vocab_);
    }
}

std::vector<std::vector<TokenId>> outcome_tokens(const std::vector<SamplingOutcome>& outcomes) {
    std::vector<std::vector<TokenId>> out;
    for (const SamplingOutcome& o : outcomes) out.push_back(o.tokens);
    return out;
}

std::vector<SamplingOutcome> run_request_kinds(Device device, BackendSampling mode, WarmUp warm,
                                               std::shared_ptr<Drafter> drafter, int64_t draft_len,
                                               EngineStats* stats, const KindsRun& run) {
    std::vector<std::vector<TokenId>> prompts;
    for (const auto& p : load_golden_reference(run.golden).p) prompts.push_back(p.ids);
    const std::string dir = golden_dir(run.golden);
    LoadedModel m;
    m.config = load_model_config(dir);
    m.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    WorkerGroupOptions wo;
    wo.threads = 1;
    wo.kv_blocks = 256;
    wo.device = device;
    wo.sampling = mode;
    wo.tp = run.tp;
    wo.devices = run.devices;
    m.workers = std::make_unique<WorkerGroup>(m.config, *m.checkpoint, wo);
    EXPECT_EQ(m.workers->backend_samples(),
              run.tp > 1 ? mode != BackendSampling::Off
                         : mode == BackendSampling::On ||
                               (mode == BackendSampling::Auto && device == Device::Cuda));
    EngineConfig ec;
    ec.check_invariants = true;
    ec.warm_up = warm;
    ec.drafter = std::move(drafter);
    ec.pad_drafts = run.pad;
    ec.speculative.rest_after_misses = run.rest_after_misses;
    ec.speculative.num_speculative_tokens = draft_len;
    Engine engine(*m.workers, ec);
    auto kinds = request_kinds();
    if (!run.only.empty()) {
        std::vector<SamplingParams> chosen;
        for (size_t i : run.only) chosen.push_back(kinds.at(i));
        kinds = std::move(chosen);
    }
    if (run.top_k_everywhere)
        for (SamplingParams& p : kinds)
            if (p.temperature > 0 && p.top_k == 0) p.top_k = 20;
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (size_t i = 0; i < kinds.size(); ++i)
        handles.push_back(engine.submit(prompts[i % prompts.size()], kinds[i]));
    engine.run_until_idle();
    std::vector<SamplingOutcome> out;
    for (auto& h : handles) {
        SamplingOutcome o;
        RequestOutput r;
        while (h->try_next(r)) {
            o.tokens.insert(o.tokens.end(), r.tokens.begin(), r.tokens.end());
            for (const SampleResult& s : r.logprobs) {
                o.logprobs.push_back(s.logprob);
                for (const TokenLogprob& t : s.top) o.logprobs.push_back(t.logprob);
            }
            if (r.finished) o.reason = r.reason;
        }
        out.push_back(std::move(o));
    }
    if (stats) *stats = engine.stats();
    if (run.gathered_bytes) *run.gathered_bytes = m.workers->gathered_bytes();
    return out;
}

void expect_same_outcomes(const std::vector<SamplingOutcome>& got,
                          const std::vector<SamplingOutcome>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE(::testing::Message() << "request kind " << i);
        EXPECT_EQ(got[i].tokens, want[i].tokens);
        EXPECT_EQ(got[i].logprobs, want[i].logprobs);
        EXPECT_EQ(got[i].reason, want[i].reason);
    }
}

}  // namespace myriad::testing
