// The EAGLE3 drafter (engine/eagle3_drafter.h, model/eagle3_*.h): the draft's logits against a
// torch reference of the EAGLE3 forward (tests/goldens_eagle3, tools/make_eagle3_golden.py) for two
// drafts of moonlight_plain (YaRN, GQA, a given head_dim, a reduced vocabulary through d2t and its
// own embedding; llama3 rope, the target's embedding shared, norm_before_residual, the default aux
// layers), as one chunk, in pieces through its cache, and chained; the target's aux hidden states
// as the drafter gets them against transformers'; the drafter's first proposal after a prompt is
// the reference's chain; greedy output with --speculative eagle3 is token for token the output
// without (batch 1 and mixed batches, TP 1 and 2); drafts that are always right are accepted; and
// bad draft folders are refused naming the file and the field or tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "drafter_runs.h"
#include "engine/eagle3_drafter.h"
#include "engine/engine.h"
#include "engine/mtp_drafter.h"
#include "format/json_file.h"
#include "format/safetensors_writer.h"
#include "golden_reference.h"
#include "model_runner.h"
#include "random_model.h"
#include "temp_dir.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

constexpr double kTol = 1e-4;        // max |ours - ref| <= kTol * max |ref| per row
constexpr double kHiddenTol = 1e-3;  // the target's states: as the MTP golden's
const char* const kDrafts[] = {"moonlight_a", "moonlight_b"};

std::unique_ptr<LoadedModel> target(int tp = 1, int64_t kv_blocks = 64) {
    return load_model(golden_dir("moonlight_plain"), tp, {}, kv_blocks);
}

class Eagle3Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Eagle3Golden, LogitsMatchTheReference) {
    const Eagle3Reference ref = load_eagle3_reference(GetParam());
    auto m = target();
    Eagle3Drafter drafter(*m->workers, eagle3_golden_dir(GetParam()));
    const Eagle3Draft& d = drafter.draft();
    const int64_t T = static_cast<int64_t>(ref.prompt.size()), W = d.aux_width();
    const int64_t H = d.config().hidden_size, Vd = d.config().draft_vocab_size;
    ASSERT_EQ(static_cast<int64_t>(ref.aux.size()), T * W);
    ASSERT_EQ(static_cast<int64_t>(ref.logits.size()), T * Vd);
    std::vector<int32_t> next(ref.prompt.begin() + 1, ref.prompt.end());
    next.push_back(ref.g0);

    // One chunk.
    Eagle3Cache cache;
    std::vector<float> logits(static_cast<size_t>(T * Vd), NAN), out(static_cast<size_t>(T * H));
    d.forward(cache, 0, next, ref.aux.data(), true, out.data(), 0, logits.data());
    EXPECT_LE(max_row_rel_diff(logits, ref.logits, Vd), kTol);
    EXPECT_EQ(cache.length, T);
    // A prefix chunk, then row by row through the cache (a fresh cache).
    Eagle3Cache pieced_cache;
    const int64_t split = T - 6;
    std::vector<float> pieced(static_cast<size_t>(split * Vd));
    std::vector<int32_t> head(next.begin(), next.begin() + split);
    d.forward(pieced_cache, 0, head, ref.aux.data(), true, nullptr, 0, pieced.data());
    for (int64_t p = split; p < T; ++p) {
        std::vector<float> row(static_cast<size_t>(Vd));
        d.forward(pieced_cache, p, {next[static_cast<size_t>(p)]}, ref.aux.data() + p * W, true,
                  nullptr, 0, row.data());
        pieced.insert(pieced.end(), row.begin(), row.end());
    }
    EXPECT_LE(max_row_rel_diff(pieced, ref.logits, Vd), kTol);

    // Chained: the reference's draft tokens, each row fed our layer's own last output.
    ASSERT_EQ(ref.chain.size(), 3u);
    EXPECT_EQ(d.to_target(argmax_token(logits.data() + (T - 1) * Vd, Vd)), ref.chain[0]);
    std::vector<float> prev(out.end() - H, out.end()), chained, row(static_cast<size_t>(Vd)),
        o(static_cast<size_t>(H));
    for (size_t j = 1; j < ref.chain.size(); ++j) {
        const int64_t p = T + static_cast<int64_t>(j) - 1;
        d.forward(cache, p, {ref.chain[j - 1]}, prev.data(), false, o.data(), 0, row.data());
        chained.insert(chained.end(), row.begin(), row.end());
        EXPECT_EQ(d.to_target(argmax_token(row.data(), Vd)), ref.chain[j]) << "chained draft " << j;
        prev = o;
    }
    EXPECT_LE(max_row_rel_diff(chained, ref.chain_logits, Vd), kTol);
    // Cutting the cache back (a rejected chain) and redoing a row gives the same logits.
    std::vector<float> again(static_cast<size_t>(Vd));
    d.forward(cache, T - 1, {next.back()}, ref.aux.data() + (T - 1) * W, true, nullptr, 0,
              again.data());
    EXPECT_EQ(cache.length, T);
    std::vector<float> last(logits.end() - Vd, logits.end());
    EXPECT_LE(max_row_rel_diff(again, last, Vd), 1e-6);
}

// The target's layer inputs, as the drafter asks for them, match transformers' hidden_states.
TEST_P(Eagle3Golden, TargetAuxHiddenStatesMatchTheReference) {
    const Eagle3Reference ref = load_eagle3_reference(GetParam());
    for (int tp : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp);
        auto m = target(tp);
        Eagle3Drafter drafter(*m->workers, eagle3_golden_dir(GetParam()));
        const std::vector<int64_t> layers = drafter.hidden_layers();
        ASSERT_EQ(layers.size(), 3u);
        const int64_t T = static_cast<int64_t>(ref.prompt.size()), H = m->config.hidden_size;
        StepInput st = single_sequence_step(ref.prompt, 0, m->workers->options().kv_block_size,
                                            {static_cast<int32_t>(T - 1)});
        st.eager = true;
        std::vector<float> logits(static_cast<size_t>(m->config.vocab_size));
        std::vector<float> major(static_cast<size_t>(3 * T * H), NAN);
        LayerInputs in{layers, major.data()};
        m->workers->step(st, logits.data(), nullptr, nullptr, nullptr, nullptr, &in);
        std::vector<float> rows(major.size());
        for (int64_t r = 0; r < T; ++r)
            for (int64_t i = 0; i < 3; ++i)
                std::copy_n(major.begin() + (i * T + r) * H, H, rows.begin() + (r * 3 + i) * H);
        EXPECT_LE(max_row_rel_diff(rows, ref.aux, 3 * H), kHiddenTol);
        EXPECT_EQ(argmax_token(logits.data(), m->config.vocab_size), ref.g0);
    }
}

INSTANTIATE_TEST_SUITE_P(Drafts, Eagle3Golden, ::testing::ValuesIn(kDrafts));

TEST(Eagle3Config, AuxLayersAndDefaults) {
    const Eagle3Config a = read_eagle3_config(eagle3_golden_dir("moonlight_a"));
    EXPECT_EQ(eagle3_aux_layers(a, 3), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(a.head_dim, 24);
    EXPECT_EQ(a.draft_vocab_size, 128);
    EXPECT_EQ(a.rope, Eagle3Rope::Yarn);
    const Eagle3Config b = read_eagle3_config(eagle3_golden_dir("moonlight_b"));
    EXPECT_EQ(eagle3_aux_layers(b, 3), (std::vector<int64_t>{2, 1, 0}));  // vLLM's 2, L/2, L-3
    EXPECT_EQ(eagle3_aux_layers(b, 61), (std::vector<int64_t>{2, 30, 58}));
    EXPECT_EQ(b.head_dim, 16);
    EXPECT_TRUE(b.norm_before_residual);
    EXPECT_EQ(b.rope, Eagle3Rope::Llama3);
    EXPECT_EQ(parse_speculative_method("eagle3"), SpeculativeMethod::Eagle3);
}

TEST(Eagle3Drafter, FirstProposalIsTheReferenceChain) {
    for (const char* name : kDrafts) {
        SCOPED_TRACE(name);
        const Eagle3Reference ref = load_eagle3_reference(name);
        auto m = target();
        auto rec = std::make_shared<RecordingDrafter>(
            std::make_unique<Eagle3Drafter>(*m->workers, eagle3_golden_dir(name)));
        const EngineRun r = run_engine(*m->workers, {ref.prompt}, {greedy(6)}, 512,
                                       SpeculativeMethod::Eagle3, 3, "", rec);
        ASSERT_EQ(r.tokens.size(), 1u);
        ASSERT_FALSE(r.tokens[0].empty());
        EXPECT_EQ(r.tokens[0][0], ref.g0);
        ASSERT_EQ(rec->drafts.size(), 1u);
        const auto& drafts = rec->drafts.begin()->second;
        ASSERT_FALSE(drafts.empty());
        EXPECT_EQ(drafts[0], ref.chain);  // after the prompt's step, k = 3 chained
    }
}

// Batch 1, then mixed batches: prompts prefilling in chunks while others decode, the prefix cache
// (a prompt twice), max_tokens inside a run; greedy, and two seeded sampled requests. The random
// drafts are mostly wrong: the output must not change.
void check_unchanged(const char* draft, int tp) {
    const Eagle3Reference ref = load_eagle3_reference(draft);
    auto m = target(tp, 256);
    const std::string dir = eagle3_golden_dir(draft);
    {
        SCOPED_TRACE("batch 1");
        const EngineRun plain =
            run_engine(*m->workers, {ref.prompt}, {greedy(30)}, 512, SpeculativeMethod::None, 3);
        const EngineRun spec = run_engine(*m->workers, {ref.prompt}, {greedy(30)}, 512,
                                          SpeculativeMethod::Eagle3, 3, dir);
        EXPECT_EQ(spec.tokens, plain.tokens);
        EXPECT_GT(spec.stats.spec_drafts, 0);
    }
    std::vector<std::vector<TokenId>> prompts = {
        ref.prompt,
        std::vector<TokenId>(ref.prompt.begin(), ref.prompt.begin() + 9),
        std::vector<TokenId>(ref.prompt.begin() + 5, ref.prompt.end()),
        ref.prompt,  // again: from the prefix cache
        {7}};
    std::vector<SamplingParams> params = {greedy(30), greedy(24), greedy(17), greedy(11),
                                          greedy(20)};
    for (uint64_t seed : {11u, 12u}) {
        prompts.push_back(std::vector<TokenId>(ref.prompt.begin() + 3, ref.prompt.begin() + 20));
        SamplingParams p = greedy(25);
        p.temperature = 0.8;
        p.top_p = 0.95;
        p.seed = seed;
        params.push_back(p);
    }
    const EngineRun plain =
        run_engine(*m->workers, prompts, params, 24, SpeculativeMethod::None, 3);
    for (int64_t k : {1, 3}) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp << ", draft length " << k);
        const EngineRun spec =
            run_engine(*m->workers, prompts, params, 24, SpeculativeMethod::Eagle3, k, dir);
        EXPECT_EQ(spec.tokens, plain.tokens);
        EXPECT_GT(spec.stats.spec_drafts, 0);
        EXPECT_GT(spec.stats.spec_draft_tokens, 0);
        EXPECT_LE(spec.stats.spec_accepted_tokens, spec.stats.spec_draft_tokens);
    }
}

TEST(SpeculativeEagle3, GreedyOutputUnchangedInMixedBatches) {
    for (const char* d : kDrafts) {
        SCOPED_TRACE(d);
        check_unchanged(d, 1);
    }
}
TEST(SpeculativeEagle3, GreedyOutputUnchangedTensorParallel) {
    check_unchanged("moonlight_a", 2);
}

// A draft for `config` (a random target's) with random F32 weights, the whole vocabulary and the
// target's embedding; `lm_head_zero`: every draft logit equal (the draft always picks id 0).
void write_random_draft(const std::string& dir, const nlohmann::ordered_json& config,
                        bool lm_head_zero) {
    const int64_t H = config["hidden_size"], V = config["vocab_size"], heads = 2, hd = 16, I = 32;
    nlohmann::ordered_json c = {{"architectures", {"LlamaForCausalLMEagle3"}},
                                {"hidden_size", H},
                                {"num_attention_heads", heads},
                                {"num_key_value_heads", 1},
                                {"head_dim", hd},
                                {"intermediate_size", I},
                                {"rms_norm_eps", 1e-5},
                                {"rope_theta", 10000.0},
                                {"vocab_size", V}};
    std::ofstream(dir + "/config.json") << c.dump(2);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<TensorToWrite> t;
    auto add = [&](const std::string& name, int64_t rows, int64_t cols, float scale, float base) {
        TensorToWrite w{name,
                        DType::F32,
                        cols > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows},
                        {}};
        const int64_t n = rows * std::max<int64_t>(cols, 1);
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = base + scale * nd(rng);
        w.bytes.resize(v.size() * 4);
        std::memcpy(w.bytes.data(), v.data(), w.bytes.size());
        t.push_back(std::move(w));
    };
    const float s = 1.0f / std::sqrt(static_cast<float>(H));
    add("fc.weight", H, 3 * H, s / std::sqrt(3.0f), 0);
    add("midlayer.input_layernorm.weight", H, 0, 0.1f, 1);
    add("midlayer.hidden_norm.weight", H, 0, 0.1f, 1);
    add("midlayer.self_attn.q_proj.weight", heads * hd, 2 * H, s, 0);
    add("midlayer.self_attn.k_proj.weight", hd, 2 * H, s, 0);
    add("midlayer.self_attn.v_proj.weight", hd, 2 * H, s, 0);
    add("midlayer.self_attn.o_proj.weight", H, heads * hd, 0.25f, 0);
    add("midlayer.post_attention_layernorm.weight", H, 0, 0.1f, 1);
    add("midlayer.mlp.gate_proj.weight", I, H, s, 0);
    add("midlayer.mlp.up_proj.weight", I, H, s, 0);
    add("midlayer.mlp.down_proj.weight", H, I, 0.2f, 0);
    add("norm.weight", H, 0, 0.1f, 1);
    add("lm_head.weight", V, H, lm_head_zero ? 0.0f : s, 0);
    write_safetensors(dir + "/model.safetensors", t);
}

// A target whose head gives every token the same logit and a draft whose head does too: both pick
// token 0, so every draft is accepted: steps take several tokens, the counters move, the cache is
// cut and regrown every step, and the output is still the plain one.
TEST(SpeculativeEagle3, AcceptedDraftsCountedAndOutputUnchanged) {
    TempDir dir, draft;
    const nlohmann::ordered_json c = small_config();
    write_random_model(dir.path(), c, 5, {{"lm_head.weight", 0.0f}});
    write_random_draft(draft.path(), c, true);
    for (int tp : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << "tp " << tp);
        auto m = load_model(dir.path(), tp, {}, 64);
        const std::vector<std::vector<TokenId>> prompts = {{3, 9, 27, 81}, {5, 6}};
        const std::vector<SamplingParams> params = {greedy(20), greedy(13)};
        const EngineRun plain =
            run_engine(*m->workers, prompts, params, 64, SpeculativeMethod::None, 3);
        const EngineRun spec = run_engine(*m->workers, prompts, params, 64,
                                          SpeculativeMethod::Eagle3, 3, draft.path());
        EXPECT_EQ(spec.tokens, plain.tokens);
        EXPECT_GT(spec.stats.spec_accepted_tokens, 0);
        EXPECT_EQ(spec.stats.spec_accepted_tokens, spec.stats.spec_draft_tokens);
        EXPECT_LT(spec.stats.steps, plain.stats.steps);
    }
}

// A copy of golden draft `name` in `dir`, config.json edited by `edit`, tensor `drop` left out.
void copy_draft(const std::string& name, const std::string& dir,
                const std::function<void(nlohmann::ordered_json&)>& edit,
                const std::string& drop = "") {
    const std::string src = eagle3_golden_dir(name);
    nlohmann::ordered_json c = read_json_file(src + "/config.json");
    if (edit) edit(c);
    std::ofstream(dir + "/config.json") << c.dump(2);
    const Checkpoint ckpt = Checkpoint::open(src + "/model.safetensors");
    std::vector<TensorToWrite> t;
    for (const std::string& n : ckpt.names()) {
        if (n == drop) continue;
        const TensorView v = ckpt.get(n);
        t.push_back({n, v.dtype(), v.shape(), std::vector<uint8_t>(v.data, v.data + v.nbytes())});
    }
    write_safetensors(dir + "/model.safetensors", t);
}

// The error of building the drafter for `dir` on `w`; "" when it built.
std::string refusal(WorkerGroup& w, const std::string& dir) {
    try {
        Eagle3Drafter d(w, dir);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        return e.what();
    }
    return "";
}

TEST(Eagle3Loading, BadDraftFoldersRefusedByName) {
    auto m = target();
    WorkerGroup& w = *m->workers;
    using J = nlohmann::ordered_json;
    struct Case {
        const char* what;
        std::function<void(J&)> edit;
        std::string drop;
        std::vector<std::string> named;  // each must be in the message
    };
    const std::vector<Case> cases = {
        {"no config field",
         [](J& c) { c.erase("hidden_size"); },
         "",
         {"config.json", "hidden_size"}},
        {"architecture",
         [](J& c) { c["architectures"] = {"Eagle3DeepseekV2ForCausalLM"}; },
         "",
         {"config.json", "architectures", "Eagle3DeepseekV2ForCausalLM"}},
        {"kv heads",
         [](J& c) { c["num_key_value_heads"] = 3; },
         "",
         {"config.json", "num_key_value_heads"}},
        {"aux id",
         [](J& c) {
             c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = {0, 1, 3};
         },
         "",
         {"config.json", "eagle_aux_hidden_state_layer_ids", "3"}},
        {"aux count",
         [](J& c) {
             c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = {0, 1};
         },
         "",
         {"fc.weight", "eagle_aux_hidden_state_layer_ids"}},
        {"vocab", [](J& c) { c["vocab_size"] = 300; }, "", {"config.json", "vocab_size"}},
        {"rope",
         [](J& c) { c["rope_scaling"]["rope_type"] = "dynamic"; },
         "",
         {"config.json", "rope_scaling.rope_type"}},
        {"tensor",
         nullptr,
         "midlayer.self_attn.q_proj.weight",
         {"model.safetensors", "midlayer.self_attn.q_proj.weight", "missing"}},
        {"d2t", nullptr, "d2t", {"d2t", "draft_vocab_size"}},
        {"shape",
         [](J& c) { c["head_dim"] = 16; },
         "",
         {"model.safetensors", "midlayer.self_attn.q_proj.weight"}},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(k.what);
        TempDir dir;
        copy_draft("moonlight_a", dir.path(), k.edit, k.drop);
        const std::string msg = refusal(w, dir.path());
        ASSERT_FALSE(msg.empty()) << "a bad draft folder was taken";
        for (const std::string& n : k.named) EXPECT_NE(msg.find(n), std::string::npos) << msg;
    }
    // No config.json at all, and no --draft-model.
    TempDir empty;
    EXPECT_NE(refusal(w, empty.path()).find("config.json"), std::string::npos);
    EXPECT_NE(refusal(w, "").find("--draft-model"), std::string::npos);
    // The unchanged copy is taken (the cases above fail for their own reason).
    TempDir good;
    copy_draft("moonlight_a", good.path(), nullptr);
    EXPECT_EQ(refusal(w, good.path()), "");
}

}  // namespace
}  // namespace myriad::testing
