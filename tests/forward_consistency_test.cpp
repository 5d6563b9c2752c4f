// The engine against itself on random checkpoints: the two MLA forms, chunked prefill, token-by-
// token decode, tensor-parallel ranks and multi-sequence batches must all give the same logits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <cstring>
#include <filesystem>

#include "format/safetensors_writer.h"
#include "model_runner.h"
#include "random_model.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {

constexpr double kTol = 1e-4;

class ForwardConsistency : public ::testing::Test {
  protected:
    void SetUp() override { write_random_model(dir_.path(), small_config(), 7); }
    std::vector<int32_t> prompt(int n, uint64_t seed = 3) const {
        std::mt19937 rng(static_cast<uint32_t>(seed));
        std::vector<int32_t> p;
        for (int i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(rng() % 128));
        return p;
    }
    TempDir dir_;
};

TEST_F(ForwardConsistency, NaiveAndAbsorbedFormsAgree) {
    auto naive = load_model(dir_.path(), 1, {AttentionMode::Naive, {}});
    auto absorbed = load_model(dir_.path(), 1, {AttentionMode::Absorbed, {}});
    auto p = prompt(40);
    auto a = sequence_logits(*naive->workers, p);
    auto b = sequence_logits(*absorbed->workers, p);
    EXPECT_LT(max_row_rel_diff(b, a, 128), kTol);
    // Decode steps after the prompt, both forms.
    auto d = prompt(6, 11);
    auto c1 = sequence_logits(*naive->workers, d, 40, 1);
    auto c2 = sequence_logits(*absorbed->workers, d, 40, 1);
    EXPECT_LT(max_row_rel_diff(c2, c1, 128), kTol);
}

TEST_F(ForwardConsistency, ChunkedPrefillAndDecodeEqualOneStep) {
    auto m = load_model(dir_.path(), 1);
    auto p = prompt(50);
    auto whole = sequence_logits(*m->workers, p);
    for (int64_t chunk : {1, 7, 16}) {
        auto parts = sequence_logits(*m->workers, p, 0, chunk);
        EXPECT_LT(max_row_rel_diff(parts, whole, 128), kTol) << "chunk " << chunk;
    }
}

TEST_F(ForwardConsistency, TensorParallelRanksAgree) {
    auto p = prompt(33), d = prompt(4, 5);
    auto one = load_model(dir_.path(), 1);
    auto ref = sequence_logits(*one->workers, p);
    auto ref_dec = sequence_logits(*one->workers, d, 33, 1);
    double spread = 0;  // logits must be far from constant for the comparison to mean anything
    for (size_t i = 1; i < ref.size(); ++i)
        spread = std::max(spread, double(std::fabs(ref[i] - ref[0])));
    EXPECT_GT(spread, 1.0);
    for (int tp : {2, 4}) {
        auto m = load_model(dir_.path(), tp);
        auto got = sequence_logits(*m->workers, p);
        EXPECT_LT(max_row_rel_diff(got, ref, 128), kTol) << "tp " << tp;
        auto dec = sequence_logits(*m->workers, d, 33, 1);
        EXPECT_LT(max_row_rel_diff(dec, ref_dec, 128), kTol) << "tp " << tp;
    }
}

TEST_F(ForwardConsistency, BatchOfSequencesEqualsEachAlone) {
    auto m = load_model(dir_.path(), 2);
    const int64_t bs = m->workers->options().kv_block_size;
    auto a = prompt(20, 1), b = prompt(13, 2);
    auto ref_a = sequence_logits(*m->workers, a);
    auto ref_b = sequence_logits(*m->workers, b);
    // One step: sequence a (blocks 0, 1) decodes its last token while b (blocks 4..) prefills.
    auto ctx_a = sequence_logits(*m->workers, std::vector<int32_t>(a.begin(), a.end() - 1));
    StepInput st;
    SeqSlice sa{0, 1, 20, {0, 1}};
    SeqSlice sb{1, 13, 13, {4}};
    st.token_ids.push_back(a.back());
    st.positions.push_back(19);
    st.slots.push_back(19);
    for (int i = 0; i < 13; ++i) {
        st.token_ids.push_back(b[i]);
        st.positions.push_back(i);
        st.slots.push_back(4 * bs + i);
    }
    st.seqs = {sa, sb};
    st.logit_rows = {0, 13};
    std::vector<float> logits(2 * 128);
    m->workers->step(st, logits.data());
    std::vector<float> want(ref_a.end() - 128, ref_a.end());
    want.insert(want.end(), ref_b.end() - 128, ref_b.end());
    EXPECT_LT(max_row_rel_diff(logits, want, 128), kTol);
}

}  // namespace
}  // namespace myriad::testing

namespace myriad::testing {
namespace {

// A checkpoint in F16 or BF16 and the same values in F32 must give the same logits.
void write_converted(const Checkpoint& src, DType dt, bool round_through_f16,
                     const std::string& dir) {
    std::vector<TensorToWrite> tensors;
    for (const auto& name : src.names()) {
        TensorView v = src.get(name);
        TensorToWrite w{name, dt, v.shape(), {}};
        const size_t n = v.nbytes() / dtype_size(v.dtype());
        std::vector<float> f(n);
        convert_to_f32(v.dtype(), v.data, f.data(), n);
        w.bytes.resize(n * dtype_size(dt));
        for (size_t i = 0; i < n; ++i) {
            float x = round_through_f16 ? f16_to_f32(f32_to_f16(f[i])) : f[i];
            if (dt == DType::F32) {
                std::memcpy(w.bytes.data() + 4 * i, &x, 4);
            } else {
                uint16_t h = f32_to_f16(x);
                std::memcpy(w.bytes.data() + 2 * i, &h, 2);
            }
        }
        tensors.push_back(std::move(w));
    }
    write_safetensors(dir + "/model.safetensors", tensors);
    std::filesystem::copy_file(src.path() + "/config.json", dir + "/config.json");
}

TEST(WeightDtypes, Bf16AndF16CheckpointsEqualTheirF32Copies) {
    TempDir bf16, f32_of_bf16, f16, f32_of_f16;
    write_random_model(bf16.path(), small_config(), 9);
    Checkpoint src = Checkpoint::open(bf16.path());
    write_converted(src, DType::F32, false, f32_of_bf16.path());
    write_converted(src, DType::F16, false, f16.path());
    write_converted(src, DType::F32, true, f32_of_f16.path());
    const std::vector<int32_t> p = {5, 9, 100, 3, 77, 12};
    auto logits = [&](const TempDir& d) {
        return sequence_logits(*load_model(d.path(), 1)->workers, p);
    };
    EXPECT_LT(max_row_rel_diff(logits(bf16), logits(f32_of_bf16), 128), 1e-6);
    EXPECT_LT(max_row_rel_diff(logits(f16), logits(f32_of_f16), 128), 1e-6);
    // F16 rounding of tiny values changes the model a little, not a lot.
    EXPECT_LT(max_row_rel_diff(logits(f16), logits(bf16), 128), 1e-2);
}

}  // namespace
}  // namespace myriad::testing
