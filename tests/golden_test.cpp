// The forward pass against Hugging Face transformers: logits of tiny checkpoints computed by
// transformers in float32 (tests/goldens, made by tools/make_goldens.py). Per position,
// max |ours - ref| <= 1e-3 * max |ref|. Control tests prove the comparison can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <filesystem>

#include "format/checkpoint.h"
#include "format/safetensors_writer.h"
#include "golden_reference.h"
#include "model_runner.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {

constexpr double kTol = 1e-3;

using Prompt = GoldenPrompt;
using Reference = GoldenReference;

Reference load_reference(const std::string& name) {
    return load_golden_reference(name);
}

// Argmax of each row; the test compares tokens only where the reference's top-2 margin is clear.
void expect_same_greedy_tokens(const std::vector<float>& ours, const std::vector<float>& ref,
                               int64_t vocab, const std::string& what) {
    const size_t rows = ref.size() / vocab;
    for (size_t r = 0; r < rows; ++r) {
        const float* a = ours.data() + r * vocab;
        const float* b = ref.data() + r * vocab;
        std::vector<float> sorted(b, b + vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        float scale = 0;
        for (int64_t i = 0; i < vocab; ++i) scale = std::max(scale, std::fabs(b[i]));
        if (sorted[0] - sorted[1] < 1e-2f * scale) continue;
        EXPECT_EQ(std::max_element(a, a + vocab) - a, std::max_element(b, b + vocab) - b)
            << what << " row " << r;
    }
}

const char* const* const kModels = kGoldenModels;

// (model, tp, expert parallel)
class Golden : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {
  protected:
    void SetUp() override {
        ref_ = load_reference(std::get<0>(GetParam()));
        model_ = load_model(golden_dir(std::get<0>(GetParam())), std::get<1>(GetParam()), {}, 64,
                            KvCacheDtype::Auto, std::get<2>(GetParam()));
        ASSERT_EQ(model_->config.vocab_size, ref_.vocab);
    }
    WorkerGroup& workers() { return *model_->workers; }
    std::vector<int32_t> decode_inputs(const Prompt& p) const {
        return std::vector<int32_t>(p.generated.begin(), p.generated.begin() + 8);
    }
    Reference ref_;
    std::unique_ptr<LoadedModel> model_;
};

TEST_P(Golden, PrefillThenDecode) {
    for (const Prompt& p : ref_.p) {
        auto prefill = sequence_logits(workers(), p.ids);
        EXPECT_LE(max_row_rel_diff(prefill, p.prefill, ref_.vocab), kTol);
        expect_same_greedy_tokens(prefill, p.prefill, ref_.vocab, "prefill");
        auto decode = sequence_logits(workers(), decode_inputs(p), p.ids.size(), 1);
        EXPECT_LE(max_row_rel_diff(decode, p.decode, ref_.vocab), kTol);
        expect_same_greedy_tokens(decode, p.decode, ref_.vocab, "decode");
    }
}

TEST_P(Golden, TokenByTokenDecodeOfTheWholePrompt) {
    const Prompt& p = ref_.p[1];
    auto all = sequence_logits(workers(), p.ids, 0, 1);
    EXPECT_LE(max_row_rel_diff(all, p.prefill, ref_.vocab), kTol);
    auto decode = sequence_logits(workers(), decode_inputs(p), p.ids.size(), 1);
    EXPECT_LE(max_row_rel_diff(decode, p.decode, ref_.vocab), kTol);
}

TEST_P(Golden, DecodeAfterChunkedPrefill) {
    const Prompt& p = ref_.p[0];
    auto chunks = sequence_logits(workers(), p.ids, 0, 13);
    EXPECT_LE(max_row_rel_diff(chunks, p.prefill, ref_.vocab), kTol);
    auto decode = sequence_logits(workers(), decode_inputs(p), p.ids.size(), 1);
    EXPECT_LE(max_row_rel_diff(decode, p.decode, ref_.vocab), kTol);
}

TEST_P(Golden, BothPromptsInOneBatch) {
    // p0 in blocks 0.., p1 in blocks 16..: one prefill step for both, then decode steps that
    // carry both sequences.
    const int64_t bs = workers().options().kv_block_size, base1 = 16;
    const int64_t vocab = ref_.vocab;
    auto blocks = [&](int64_t first, int64_t tokens) {
        std::vector<BlockId> t;
        for (int64_t b = 0; b * bs < tokens; ++b) t.push_back(static_cast<BlockId>(first + b));
        return t;
    };
    const Prompt& a = ref_.p[0];
    const Prompt& b = ref_.p[1];
    const int64_t na = a.ids.size(), nb = b.ids.size();
    for (int64_t step = -1; step < 8; ++step) {
        StepInput st;
        auto add = [&](const std::vector<int32_t>& toks, int64_t past, int64_t first_block) {
            SeqSlice s;
            s.q_begin = st.num_tokens();
            s.q_len = toks.size();
            s.ctx_len = past + s.q_len;
            s.block_table = blocks(first_block, s.ctx_len);
            for (int64_t i = 0; i < s.q_len; ++i) {
                st.token_ids.push_back(toks[i]);
                st.positions.push_back(static_cast<int32_t>(past + i));
                st.slots.push_back(first_block * bs + past + i);
            }
            st.logit_rows.push_back(static_cast<int32_t>(s.q_begin + s.q_len - 1));
            st.seqs.push_back(std::move(s));
        };
        if (step < 0) {
            add(a.ids, 0, 0);
            add(b.ids, 0, base1);
        } else {
            add({a.generated[step]}, na + step, 0);
            add({b.generated[step]}, nb + step, base1);
        }
        std::vector<float> logits(2 * vocab);
        workers().step(st, logits.data());
        std::vector<float> want;
        auto row = [&](const std::vector<float>& m, int64_t r) {
            want.insert(want.end(), m.begin() + r * vocab, m.begin() + (r + 1) * vocab);
        };
        if (step < 0) {
            row(a.prefill, na - 1);
            row(b.prefill, nb - 1);
        } else {
            row(a.decode, step);
            row(b.decode, step);
        }
        EXPECT_LE(max_row_rel_diff(logits, want, vocab), kTol) << "step " << step;
    }
}

// TP 1, 2 and 4 (the goldens' 4 heads), and 2 and 4 with whole experts per rank.
std::vector<std::tuple<std::string, int, bool>> golden_params() {
    std::vector<std::tuple<std::string, int, bool>> out;
    for (const char* m : kGoldenModels) {
        for (int tp : {1, 2, 4}) out.emplace_back(m, tp, false);
        for (int tp : {2, 4}) out.emplace_back(m, tp, true);
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Models, Golden, ::testing::ValuesIn(golden_params()),
                         [](const auto& info) {
                             return std::get<0>(info.param) + "_tp" +
                                    std::to_string(std::get<1>(info.param)) +
                                    (std::get<2>(info.param) ? "_ep" : "");
                         });

// Control tests: each deliberate mistake must move the logits beyond the tolerance.
double prefill_error(const std::string& name, ModelFaults faults) {
    Reference ref = load_reference(name);
    auto m = load_model(golden_dir(name), 1, {AttentionMode::Auto, faults});
    return max_row_rel_diff(sequence_logits(*m->workers, ref.p[0].ids), ref.p[0].prefill,
                            ref.vocab);
}

TEST(GoldenControl, HalfSplitRopeFails) {
    ModelFaults f;
    f.rope_half_split = true;
    for (const char* m : kGoldenModels) EXPECT_GT(prefill_error(m, f), kTol) << m;
}

TEST(GoldenControl, SoftmaxScaleWithoutMscaleSquaredFails) {
    ModelFaults f;
    f.no_mscale_squared = true;
    for (const char* m : {"v3_grouped_yarn", "yarn_params_mscale", "kimi_k2", "kimi_k25"})
        EXPECT_GT(prefill_error(m, f), kTol) << m;
}

TEST(GoldenControl, DroppedSharedExpertFails) {
    ModelFaults f;
    f.drop_shared_experts = true;
    for (const char* m : kGoldenModels) EXPECT_GT(prefill_error(m, f), kTol) << m;
}

TEST(GoldenControl, UnfaultedModelPasses) {
    for (const char* m : kGoldenModels) {
        const double err = prefill_error(m, {});
        std::printf("%-22s prefill max|ours - ref| / max|ref| = %.2e\n", m, err);
        EXPECT_LE(err, kTol) << m;
    }
}

}  // namespace
}  // namespace myriad::testing

namespace myriad::testing {
namespace {

// Kimi-K2.5's text model loads whether its tensors carry the `language_model.` prefix or not.
TEST(GoldenLayout, KimiK25WithoutThePrefixGivesTheSameLogits) {
    TempDir dir;
    Checkpoint src = Checkpoint::open(golden_dir("kimi_k25"));
    std::vector<TensorToWrite> tensors;
    for (const auto& name : src.names()) {
        TensorView v = src.get(name);
        std::string out = name.starts_with("language_model.") ? name.substr(15) : name;
        tensors.push_back(
            {out, v.dtype(), v.shape(), std::vector<uint8_t>(v.data, v.data + v.nbytes())});
    }
    write_safetensors(dir.file("model.safetensors"), tensors);
    std::filesystem::copy_file(golden_dir("kimi_k25") + "/config.json", dir.file("config.json"));
    GoldenReference ref = load_golden_reference("kimi_k25");
    auto m = load_model(dir.path(), 2);
    EXPECT_LE(
        max_row_rel_diff(sequence_logits(*m->workers, ref.p[0].ids), ref.p[0].prefill, ref.vocab),
        kTol);
}

}  // namespace
}  // namespace myriad::testing
