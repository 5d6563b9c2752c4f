// Mixture of experts on the CPU: the noaux_tc router of reference.md §1.7 and the routed
// experts, grouped by expert so each expert runs one matrix product over its tokens.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/cpu/cpu_ops.h"
#include "util/error.h"

namespace myriad {

void CpuOps::moe_route(Tensor x, const Weight& gate, const Weight& bias, const RouterParams& p,
                       Tensor ids, Tensor weights) {
    const int64_t t_count = x.dim(0), n_exp = p.n_experts, k = p.top_k;
    MYRIAD_CHECK(gate.rows == n_exp && bias.rows * bias.cols == n_exp,
                 "router: gate has {} rows and bias {} values for {} experts", gate.rows,
                 bias.rows * bias.cols, n_exp);
    Tensor logits = scratch(DType::F32, {t_count, n_exp});
    linear(x, gate, logits);
    const int64_t per_group = n_exp / p.n_group;
    const float* b = bias.data.ptr<float>();
    pool_.parallel_for(t_count, [&](int64_t tb, int64_t te) {
        std::vector<float> score(n_exp), choice(n_exp), group_score(p.n_group);
        std::vector<int64_t> order(std::max(n_exp, p.n_group));
        for (int64_t t = tb; t < te; ++t) {
            const float* lg = logits.ptr<float>() + t * n_exp;
            for (int64_t e = 0; e < n_exp; ++e) {
                score[e] = 1.0f / (1.0f + std::exp(-lg[e]));
                choice[e] = score[e] + b[e];
            }
            if (p.n_group > 1) {
                // A group's score is the sum of its two best biased scores; groups outside the
                // topk_group best are masked to -inf, so their experts are never chosen.
                for (int64_t g = 0; g < p.n_group; ++g) {
                    float best = -INFINITY, second = -INFINITY;
                    for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e) {
                        if (choice[e] > best) {
                            second = best;
                            best = choice[e];
                        } else if (choice[e] > second) {
                            second = choice[e];
                        }
                    }
                    group_score[g] = best + second;
                }
                std::iota(order.begin(), order.begin() + p.n_group, 0);
                std::stable_sort(
                    order.begin(), order.begin() + p.n_group,
                    [&](int64_t a, int64_t c) { return group_score[a] > group_score[c]; });
                for (int64_t r = p.topk_group; r < p.n_group; ++r)
                    for (int64_t e = order[r] * per_group; e < (order[r] + 1) * per_group; ++e)
                        choice[e] = -INFINITY;
            }
            std::iota(order.begin(), order.begin() + n_exp, 0);
            std::stable_sort(order.begin(), order.begin() + n_exp,
                             [&](int64_t a, int64_t c) { return choice[a] > choice[c]; });
            float sum = 0.0f;
            for (int64_t j = 0; j < k; ++j) sum += score[order[j]];
            for (int64_t j = 0; j < k; ++j) {
                float w = score[order[j]];
                if (p.norm_topk_prob) w /= (sum + 1e-20f);
                ids.ptr<int32_t>()[t * k + j] = static_cast<int32_t>(order[j]);
                weights.ptr<float>()[t * k + j] = w * p.routed_scaling_factor;
            }
        }
    });
}

void CpuOps::moe_experts(Tensor x, Tensor ids, Tensor weights,
                         const std::vector<MlpWeights>& experts, Tensor out) {
    const int64_t t_count = x.dim(0), hidden = x.dim(1), k = ids.dim(1);
    const int64_t n_exp = static_cast<int64_t>(experts.size());
    std::fill(out.ptr<float>(), out.ptr<float>() + out.numel(), 0.0f);
    // Tokens of each expert, in token order.
    std::vector<std::vector<std::pair<int64_t, float>>> assigned(n_exp);
    for (int64_t t = 0; t < t_count; ++t)
        for (int64_t j = 0; j < k; ++j) {
            int32_t e = ids.ptr<int32_t>()[t * k + j];
            MYRIAD_CHECK(e >= 0 && e < n_exp, "router chose expert {} of {}", e, n_exp);
            assigned[e].emplace_back(t, weights.ptr<float>()[t * k + j]);
        }
    for (int64_t e = 0; e < n_exp; ++e) {
        const auto& rows = assigned[e];
        const MlpWeights& w = experts[e];
        if (rows.empty() || w.gate.rows == 0) continue;
        const int64_t n = static_cast<int64_t>(rows.size()), inter = w.gate.rows;
        Tensor xe = scratch(DType::F32, {n, hidden});
        for (int64_t i = 0; i < n; ++i)
            std::copy_n(x.ptr<float>() + rows[i].first * hidden, hidden,
                        xe.ptr<float>() + i * hidden);
        Tensor g = scratch(DType::F32, {n, inter});
        Tensor u = scratch(DType::F32, {n, inter});
        linear(xe, w.gate, g);
        linear(xe, w.up, u);
        silu_mul(g, u, g);
        Tensor y = scratch(DType::F32, {n, hidden});
        linear(g, w.down, y);
        for (int64_t i = 0; i < n; ++i) {
            float* o = out.ptr<float>() + rows[i].first * hidden;
            const float* yi = y.ptr<float>() + i * hidden;
            const float wt = rows[i].second;
            for (int64_t d = 0; d < hidden; ++d) o[d] += wt * yi[d];
        }
    }
}

}  // namespace myriad
