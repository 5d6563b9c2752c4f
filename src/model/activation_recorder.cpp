#include "model/activation_recorder.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "util/error.h"

namespace myriad {

void ActivationRecorder::name_weights(const ModelWeights& weights) {
    auto add = [&](const Weight& w, const std::string& name) {
        if (w.format == WeightFormat::Dense && w.data.data) names_[w.data.data] = name;
    };
    auto mlp = [&](const MlpWeights& m, const std::string& p) {
        add(m.gate, p + "gate_proj");
        add(m.up, p + "up_proj");
        add(m.down, p + "down_proj");
    };
    for (size_t l = 0; l < weights.layers.size(); ++l) {
        const LayerWeights& lw = weights.layers[l];
        const std::string p = fmt::format("model.layers.{}.", l);
        const std::string a = p + "self_attn.";
        add(lw.attn.q_a, a + "q_a_proj");
        add(lw.attn.q_b, a + "q_b_proj");
        add(lw.attn.q, a + "q_proj");
        add(lw.attn.kv_a, a + "kv_a_proj_with_mqa");
        add(lw.attn.kv_b, a + "kv_b_proj");
        add(lw.attn.o, a + "o_proj");
        if (!lw.moe) {
            mlp(lw.dense, p + "mlp.");
            continue;
        }
        for (size_t e = 0; e < lw.experts.size(); ++e)
            mlp(lw.experts[e], fmt::format("{}mlp.experts.{}.", p, e));
        mlp(lw.shared, p + "mlp.shared_experts.");
    }
    add(weights.lm_head, "lm_head");
}

std::map<std::string, float> ActivationRecorder::input_amax() const {
    std::map<std::string, float> out;
    for (const auto& [ptr, amax] : amax_) {
        auto it = names_.find(ptr);
        if (it != names_.end()) out[it->second] = amax;
    }
    return out;
}

void ActivationRecorder::record(const Weight& w, const float* x, int64_t n) {
    if (w.format != WeightFormat::Dense || !w.data.data) return;
    float m = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
    float& slot = amax_[w.data.data];
    slot = std::max(slot, m);
}

void ActivationRecorder::linear(Tensor x, const Weight& w, Tensor out) {
    record(w, x.ptr<float>(), x.numel());
    CpuOps::linear(x, w, out);
}

void ActivationRecorder::moe_experts(Tensor x, Tensor ids, Tensor weights,
                                     const std::vector<MlpWeights>& experts, Tensor out) {
    const int64_t tokens = x.dim(0), hidden = x.dim(1), k = ids.dim(1);
    const int32_t* id = ids.ptr<int32_t>();
    for (size_t e = 0; e < experts.size(); ++e) {
        const MlpWeights& m = experts[e];
        if (m.gate.rows == 0) continue;
        std::vector<float> rows;
        for (int64_t t = 0; t < tokens; ++t)
            for (int64_t j = 0; j < k; ++j)
                if (id[t * k + j] == static_cast<int32_t>(e)) {
                    rows.insert(rows.end(), x.ptr<float>() + t * hidden,
                                x.ptr<float>() + (t + 1) * hidden);
                    break;
                }
        if (rows.empty()) continue;
        const int64_t n = static_cast<int64_t>(rows.size()) / hidden, inter = m.gate.rows;
        record(m.gate, rows.data(), n * hidden);
        record(m.up, rows.data(), n * hidden);
        // down_proj's input, computed as the expert does.
        std::vector<float> g(static_cast<size_t>(n * inter)), u(g.size()), h(g.size());
        Tensor xr(rows.data(), DType::F32, {n, hidden});
        Tensor gt(g.data(), DType::F32, {n, inter}), ut(u.data(), DType::F32, {n, inter}),
            ht(h.data(), DType::F32, {n, inter});
        CpuOps::linear(xr, m.gate, gt);
        CpuOps::linear(xr, m.up, ut);
        silu_mul(gt, ut, ht);
        record(m.down, h.data(), n * inter);
    }
    CpuOps::moe_experts(x, ids, weights, experts, out);
}

}  // namespace myriad
