// The noaux_tc router with hand-computed expert sets (reference.md §1.7): biases choose, the
// unbiased sigmoid scores weigh, and experts of dropped groups are never chosen — also when
// every kept expert's biased score is negative (masking with 0.0 would pick dropped ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ops/cpu/cpu_ops.h"

namespace myriad {
namespace {

struct RouterCase {
    std::vector<float> scores;  // wanted sigmoid scores, one per expert
    std::vector<float> bias;
    RouterParams params;
};

void route(const RouterCase& c, std::vector<int32_t>& ids, std::vector<float>& weights) {
    CpuOps ops(1);
    const int64_t n = static_cast<int64_t>(c.scores.size()), hidden = 2;
    HostTensor x(DType::F32, {1, hidden}), gate(DType::F32, {n, hidden}), bias(DType::F32, {n});
    x.f32()[0] = 1.0f;  // logits = gate[:, 0]
    for (int64_t e = 0; e < n; ++e) {
        gate.f32()[e * hidden] = std::log(c.scores[e] / (1.0f - c.scores[e]));
        bias.f32()[e] = c.bias[e];
    }
    Weight g{WeightFormat::Dense, n, hidden, gate.t, nullptr, {}};
    Weight b{WeightFormat::Dense, 1, n, bias.t, nullptr, {}};
    HostTensor id_t(DType::I32, {1, c.params.top_k}), w_t(DType::F32, {1, c.params.top_k});
    ops.moe_route(x.t, g, b, c.params, id_t.t, w_t.t);
    ids.assign(id_t.t.ptr<int32_t>(), id_t.t.ptr<int32_t>() + c.params.top_k);
    weights.assign(w_t.f32(), w_t.f32() + c.params.top_k);
}

TEST(Router, DroppedGroupsNeverChosenWithNegativeBiases) {
    RouterCase c;
    c.scores = {0.9f, 0.8f, 0.3f, 0.2f, 0.7f, 0.6f, 0.1f, 0.05f};
    c.bias.assign(8, -1.0f);  // every biased score negative
    c.params = {8, 3, 4, 2, true, 2.5f};
    // Group scores (sum of the two best biased): g0 -0.3, g1 -1.5, g2 -0.7, g3 -1.85 -> keep
    // g0 and g2; best three of experts {0, 1, 4, 5}: 0, 1, 4.
    std::vector<int32_t> ids;
    std::vector<float> w;
    route(c, ids, w);
    EXPECT_EQ(std::set<int32_t>(ids.begin(), ids.end()), (std::set<int32_t>{0, 1, 4}));
    const float sum = 0.9f + 0.8f + 0.7f;
    for (size_t j = 0; j < ids.size(); ++j)
        EXPECT_NEAR(w[j], c.scores[ids[j]] / sum * 2.5f, 1e-5) << "expert " << ids[j];
}

TEST(Router, BiasChoosesButDoesNotWeigh) {
    RouterCase c;
    c.scores = {0.9f, 0.8f, 0.3f, 0.2f, 0.7f, 0.6f, 0.1f, 0.05f};
    c.bias = {0, 0, 0, 0, 0, 0.5f, 0, 0};
    c.params = {8, 2, 1, 1, false, 2.0f};
    std::vector<int32_t> ids;
    std::vector<float> w;
    route(c, ids, w);
    // Biased: expert 5 = 1.1 beats expert 0 = 0.9; weights are the unbiased scores, not normed.
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(std::set<int32_t>(ids.begin(), ids.end()), (std::set<int32_t>{5, 0}));
    for (size_t j = 0; j < 2; ++j) EXPECT_NEAR(w[j], c.scores[ids[j]] * 2.0f, 1e-5);
}

TEST(Router, GroupLimitChangesTheChoice) {
    // Without groups the best three are 0, 2, 4; with 2 of 4 groups, group 1 (experts 2, 3)
    // loses to group 0 {0, 1} and group 2 {4, 5}, whose pair sums are larger.
    RouterCase c;
    c.scores = {0.95f, 0.5f, 0.9f, 0.1f, 0.6f, 0.55f, 0.05f, 0.02f};
    c.bias.assign(8, 0.01f);
    c.params = {8, 3, 4, 2, true, 1.0f};
    std::vector<int32_t> ids;
    std::vector<float> w;
    route(c, ids, w);
    EXPECT_EQ(std::set<int32_t>(ids.begin(), ids.end()), (std::set<int32_t>{0, 4, 5}));
    c.params.n_group = 1;
    c.params.topk_group = 1;
    route(c, ids, w);
    EXPECT_EQ(std::set<int32_t>(ids.begin(), ids.end()), (std::set<int32_t>{0, 2, 4}));
}

}  // namespace
}  // namespace myriad
