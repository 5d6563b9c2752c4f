// Quantised checkpoints against transformers on their dequantised weights (tests/goldens_quant,
// made by tools/make_quant_goldens.py): ModelOpt NVFP4 (both config forms), DeepSeek FP8 blocks
// and compressed-tensors INT4, at TP 1, 2 and 4. Per position max |ours - ref| <= 1e-3 max |ref|.
#include <gtest/gtest.h>

#include <cstdio>

#include "golden_reference.h"
#include "model/linear_format.h"
#include "model_runner.h"

namespace myriad::testing {
namespace {

constexpr double kTol = 1e-3;
const char* const kQuantModels[] = {"nvfp4_experts", "nvfp4_all_linear", "fp8_block", "int4_kimi"};

std::string quant_dir(const std::string& name) {
    return std::string(MYRIAD_GOLDENS_ROOT) + "/goldens_quant/" + name;
}

// The goldens' references keep the latent cache exact: F32 storage even where the checkpoint
// declares an FP8 KV cache (nvfp4_all_linear).
std::unique_ptr<LoadedModel> load_exact(const std::string& name, int tp, bool ep = false) {
    return load_model(quant_dir(name), tp, {}, 64, KvCacheDtype::Fp32, ep);
}

// (model, tp, expert parallel)
class QuantGolden : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

TEST_P(QuantGolden, PrefillThenDecode) {
    const auto& [name, tp, ep] = GetParam();
    GoldenReference ref = load_reference_in(quant_dir(name));
    auto m = load_exact(name, tp, ep);
    ASSERT_EQ(m->config.vocab_size, ref.vocab);
    double worst = 0.0;
    for (const GoldenPrompt& p : ref.p) {
        auto prefill = sequence_logits(*m->workers, p.ids, 0, 29);  // chunked prefill
        std::vector<int32_t> dec_in(p.generated.begin(), p.generated.begin() + 8);
        auto decode = sequence_logits(*m->workers, dec_in, p.ids.size(), 1);
        const double e1 = max_row_rel_diff(prefill, p.prefill, ref.vocab);
        const double e2 = max_row_rel_diff(decode, p.decode, ref.vocab);
        EXPECT_LE(e1, kTol) << "prefill";
        EXPECT_LE(e2, kTol) << "decode";
        worst = std::max({worst, e1, e2});
    }
    std::printf("%-18s tp %d%s: max|ours - ref| / max|ref| = %.2e\n", name.c_str(), tp,
                ep ? " ep" : "", worst);
}

std::vector<std::tuple<std::string, int, bool>> params() {
    std::vector<std::tuple<std::string, int, bool>> out;
    for (const char* m : kQuantModels) {
        for (int tp : {1, 2, 4}) out.emplace_back(m, tp, false);
        for (int tp : {2, 4}) out.emplace_back(m, tp, true);
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Models, QuantGolden, ::testing::ValuesIn(params()), [](const auto& info) {
    return std::get<0>(info.param) + "_tp" + std::to_string(std::get<1>(info.param)) +
           (std::get<2>(info.param) ? "_ep" : "");
});

// Each golden's config decides the format of every linear as its packer did.
TEST(QuantGoldenFormats, EachConfigQuantisesTheIntendedLinears) {
    struct Want {
        const char* model;
        WeightFormat format;
        int quantised;
    };
    for (const Want& w : {Want{"nvfp4_experts", WeightFormat::Nvfp4, 12},
                          Want{"nvfp4_all_linear", WeightFormat::Nvfp4, 28},
                          Want{"fp8_block", WeightFormat::Fp8Block, 28},
                          Want{"int4_kimi", WeightFormat::Int4Group, 12}}) {
        ModelConfig c = load_model_config(quant_dir(w.model));
        int quantised = 0, other = 0;
        for (const auto& t : expected_tensors(c)) {
            const WeightFormat f = linear_format(c, t.name, "");
            if (f == w.format)
                ++quantised;
            else if (f != WeightFormat::Dense)
                ++other;
            if (t.name == "lm_head.weight") {
                EXPECT_EQ(f, WeightFormat::Dense) << w.model;
            }
        }
        EXPECT_EQ(quantised, w.quantised) << w.model;
        EXPECT_EQ(other, 0) << w.model;
    }
}

TEST(QuantGoldenFormats, QuantisedWeightsStayPacked) {
    // Zero copy: the NVFP4 experts cost about 0.56 bytes per weight, not 4 (F32).
    auto dense = load_exact("nvfp4_experts", 1);
    ModelConfig c = dense->config;
    const double expert_params = 3.0 * c.hidden_size * c.moe_intermediate_size * c.n_routed_experts;
    const double f32_bytes = 4.0 * expert_params;
    // Everything else is small next to the experts; held bytes must be well under all-F32.
    EXPECT_LT(static_cast<double>(dense->workers->weight_bytes_per_rank()), f32_bytes);
}

}  // namespace
}  // namespace myriad::testing
