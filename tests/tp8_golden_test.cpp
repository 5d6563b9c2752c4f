// The goldens that shard at TP 8 (8 heads, intermediate and moe_intermediate 256; BF16 in
// tests/goldens/tp8_bf16, FP8 blocks, NVFP4 and INT4 in tests/goldens_quant/tp8_*) against
// transformers at TP 1, 2, 4 and 8 and with whole experts per rank at 2, 4 and 8, on the CPU.
// Per position max |ours - ref| <= 1e-3 max |ref|, prefill in chunks and decode.
//
// Compiled in when tests/CMakeLists.txt sets MYRIAD_TP8_GOLDENS (once the outputs of
// tools/make_goldens.py --tp8-only and tools/make_quant_goldens.py --tp8-only are committed);
// a missing golden then fails naming the script that makes it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "golden_reference.h"
#include "model_runner.h"

#if MYRIAD_TP8_GOLDENS

namespace myriad::testing {
namespace {

constexpr double kTol = 1e-3;

struct Tp8Golden {
    const char* dir;     // under the build's golden root
    const char* script;  // what makes it
};
const Tp8Golden kTp8Goldens[] = {
    {"goldens/tp8_bf16", "tools/make_goldens.py --tp8-only"},
    {"goldens_quant/tp8_fp8_block", "tools/make_quant_goldens.py --tp8-only"},
    {"goldens_quant/tp8_nvfp4", "tools/make_quant_goldens.py --tp8-only"},
    {"goldens_quant/tp8_int4", "tools/make_quant_goldens.py --tp8-only"},
};

class Tp8GoldenTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(Tp8GoldenTest, PrefillThenDecode) {
    const auto& [index, tp, ep] = GetParam();
    const Tp8Golden& g = kTp8Goldens[index];
    const std::string dir = std::string(MYRIAD_GOLDENS_ROOT) + "/" + g.dir;
    ASSERT_TRUE(std::filesystem::exists(dir + "/reference.safetensors"))
        << dir << " is missing: make it with " << g.script << " (needs transformers) and commit it";
    GoldenReference ref = load_reference_in(dir);
    auto m = load_model(dir, tp, {}, 64, KvCacheDtype::Fp32, ep);
    ASSERT_EQ(m->config.vocab_size, ref.vocab);
    double worst = 0.0;
    for (const GoldenPrompt& p : ref.p) {
        auto prefill = sequence_logits(*m->workers, p.ids, 0, 29);
        std::vector<int32_t> dec_in(p.generated.begin(), p.generated.begin() + 8);
        auto decode = sequence_logits(*m->workers, dec_in, p.ids.size(), 1);
        const double e1 = max_row_rel_diff(prefill, p.prefill, ref.vocab);
        const double e2 = max_row_rel_diff(decode, p.decode, ref.vocab);
        EXPECT_LE(e1, kTol) << "prefill";
        EXPECT_LE(e2, kTol) << "decode";
        worst = std::max({worst, e1, e2});
    }
    std::printf("%-28s tp %d%s: max|ours - ref| / max|ref| = %.2e\n", g.dir, tp, ep ? " ep" : "",
                worst);
}

std::vector<std::tuple<int, int, bool>> params() {
    std::vector<std::tuple<int, int, bool>> out;
    for (int i = 0; i < 4; ++i) {
        for (int tp : {1, 2, 4, 8}) out.emplace_back(i, tp, false);
        for (int tp : {2, 4, 8}) out.emplace_back(i, tp, true);
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Models, Tp8GoldenTest, ::testing::ValuesIn(params()),
                         [](const auto& info) {
                             const std::string d = kTp8Goldens[std::get<0>(info.param)].dir;
                             return d.substr(d.rfind('/') + 1) + "_tp" +
                                    std::to_string(std::get<1>(info.param)) +
                                    (std::get<2>(info.param) ? "_ep" : "");
                         });

}  // namespace
}  // namespace myriad::testing

#endif  // MYRIAD_TP8_GOLDENS
