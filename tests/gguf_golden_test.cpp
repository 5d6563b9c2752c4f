// GGUF files made by llama.cpp's converter and quantizer (tests/goldens_gguf, made by
// tools/make_gguf_goldens.py) against numpy logits on their dequantised weights: F32, Q8_0 split
// in three files, and a Q4_K_M mixture (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, F16, BF16 tensors), at TP 1
// and 2. Per position max |ours - ref| <= tol * max |ref|.
#include <gtest/gtest.h>

#include <cstdio>

#include "format/checkpoint.h"
#include "golden_reference.h"
#include "model_runner.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace myriad::testing {
namespace {

struct GgufGolden {
    const char* folder;
    const char* file;
    double tol;
};
// F32 holds the checkpoint exactly: only float32-vs-float64 rounding separates the two.
const GgufGolden kGoldens[] = {
    {"f32", "tiny-F32.gguf", 1e-4},
    {"q8_0_split", "tiny-Q8_0-00001-of-00003.gguf", 1e-3},
    {"q4_k_m", "tiny-Q4_K_M.gguf", 1e-3},
};

std::string dir_of(const GgufGolden& g) {
    return std::string(MYRIAD_GGUF_GOLDENS_DIR) + "/" + g.folder;
}

std::unique_ptr<LoadedModel> load_gguf(const GgufGolden& g, int tp, bool ep) {
    return load_model(dir_of(g) + "/" + g.file, tp, {}, 16, KvCacheDtype::Fp32, ep);
}

// (golden, tp, expert parallel)
class GgufGoldenTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(GgufGoldenTest, PrefillThenDecode) {
    const auto& [index, tp, ep] = GetParam();
    const GgufGolden& g = kGoldens[index];
    GoldenReference ref = load_reference_in(dir_of(g));
    auto m = load_gguf(g, tp, ep);
    ASSERT_EQ(m->config.vocab_size, ref.vocab);
    double worst = 0.0;
    for (const GoldenPrompt& p : ref.p) {
        auto prefill = sequence_logits(*m->workers, p.ids, 0, 5);  // chunked prefill
        std::vector<int32_t> dec_in(p.generated.begin(), p.generated.end() - 1);
        auto decode = sequence_logits(*m->workers, dec_in, p.ids.size(), 1);
        const double e1 = max_row_rel_diff(prefill, p.prefill, ref.vocab);
        const double e2 = max_row_rel_diff(decode, p.decode, ref.vocab);
        EXPECT_LE(e1, g.tol) << "prefill";
        EXPECT_LE(e2, g.tol) << "decode";
        worst = std::max({worst, e1, e2});
    }
    std::printf("%-12s tp %d%s: max|ours - ref| / max|ref| = %.2e\n", g.folder, tp, ep ? " ep" : "",
                worst);
}

INSTANTIATE_TEST_SUITE_P(Files, GgufGoldenTest,
                         ::testing::Values(std::tuple{0, 1, false}, std::tuple{1, 1, false},
                                           std::tuple{2, 1, false}, std::tuple{0, 2, false},
                                           std::tuple{1, 2, false}, std::tuple{2, 2, false},
                                           std::tuple{0, 2, true}, std::tuple{1, 2, true},
                                           std::tuple{2, 2, true}),
                         [](const auto& info) {
                             return std::string(kGoldens[std::get<0>(info.param)].folder) + "_tp" +
                                    std::to_string(std::get<1>(info.param)) +
                                    (std::get<2>(info.param) ? "_ep" : "");
                         });

// The deepseek2 metadata the converter wrote maps back onto the checkpoint's config.json values
// (tools/make_gguf_goldens.py CONFIG).
TEST(GgufGoldenConfig, MetadataMapsOntoTheCheckpointConfig) {
    ModelConfig c = load_model_config(dir_of(kGoldens[2]) + "/" + kGoldens[2].file);
    EXPECT_EQ(c.vocab_size, 320);
    EXPECT_EQ(c.hidden_size, 256);
    EXPECT_EQ(c.num_hidden_layers, 2);
    EXPECT_EQ(c.first_k_dense_replace, 1);
    EXPECT_EQ(c.num_attention_heads, 2);
    EXPECT_EQ(c.q_lora_rank, 32);
    EXPECT_EQ(c.kv_lora_rank, 32);
    EXPECT_EQ(c.qk_nope_head_dim, 32);
    EXPECT_EQ(c.qk_rope_head_dim, 16);
    EXPECT_EQ(c.v_head_dim, 16);
    EXPECT_EQ(c.n_routed_experts, 4);
    EXPECT_EQ(c.num_experts_per_tok, 2);
    EXPECT_EQ(c.n_group, 2);
    EXPECT_EQ(c.topk_group, 1);
    EXPECT_EQ(c.n_shared_experts, 1);
    EXPECT_TRUE(c.norm_topk_prob);
    EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.5);
    ASSERT_TRUE(c.rope_scaling.yarn);
    EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096);
    EXPECT_NEAR(c.rope_scaling.mscale_all_dim, 1.0, 1e-6);
    EXPECT_EQ(c.bos_token_id, 0);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{1});
}

// The vocabulary of tokenizer.ggml.*: specials by name, the non-special added token, the
// converter's [PADn] fillers counted in the size, and text round trips.
TEST(GgufGoldenTokenizer, VocabularyFromMetadata) {
    auto tok = Tokenizer::load(dir_of(kGoldens[0]) + "/" + kGoldens[0].file);
    EXPECT_EQ(tok->vocab_size(), 320);
    EXPECT_EQ(tok->bos_id(), 0);
    EXPECT_EQ(tok->eos_id(), 1);
    EXPECT_TRUE(tok->is_special(0));
    auto think = tok->token_to_id("<think>");
    ASSERT_TRUE(think.has_value());
    EXPECT_FALSE(tok->is_special(*think));
    const std::string text = "Hello world <think>東京 2024!\n";
    EXPECT_EQ(tok->decode(tok->encode(text)), text);
    auto ids = tok->encode("<｜User｜>hi", false);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(tok->id_to_token(ids[0]), "<｜User｜>");
}

}  // namespace
}  // namespace myriad::testing
