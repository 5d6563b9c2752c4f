// CudaOps: the MoE router and the routed experts as grouped launches (no host loop over experts).
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/expert_stats.h"
#include "util/error.h"

namespace myriad::cuda {

void CudaOps::moe_route(Tensor x, const Weight& gate, const Weight& bias, const RouterParams& p,
                        Tensor ids, Tensor weights) {
    const int64_t t_count = x.dim(0), n_exp = p.n_experts;
    MYRIAD_CHECK(gate.rows == n_exp && bias.rows * bias.cols == n_exp,
                 "router: gate has {} rows and bias {} values for {} experts", gate.rows,
                 bias.rows * bias.cols, n_exp);
    MYRIAD_CHECK(bias.data.dtype == DType::F32, "router bias must be F32 on the GPU");
    MYRIAD_CHECK(p.n_group >= 1 && p.n_group <= 32 && n_exp % p.n_group == 0 &&
                     p.topk_group <= p.n_group && p.top_k <= n_exp && n_exp <= 1536,
                 "router: {} experts in {} groups (top {} groups, top {}) is not supported", n_exp,
                 p.n_group, p.topk_group, p.top_k);
    // Router logits in F32 from F32 activations for any batch: a BF16-rounded input could
    // change which experts are chosen where scores are close.
    Tensor logits = scratch(DType::F32, {t_count, n_exp});
    router_logits(x, gate, logits);
    RouteArgs a;
    a.logits = logits.ptr<float>();
    a.bias = bias.data.ptr<float>();
    a.tokens = t_count;
    a.experts = n_exp;
    a.top_k = p.top_k;
    a.n_group = p.n_group;
    a.topk_group = p.topk_group;
    a.norm_topk_prob = p.norm_topk_prob;
    a.scaling = p.routed_scaling_factor;
    a.ids = ids.ptr<int32_t>();
    a.weights = weights.ptr<float>();
    cuda::moe_route(a, stream_);
    check("moe_route");
}

const CudaOps::ExpertTable& CudaOps::expert_table(const std::vector<MlpWeights>& experts) {
    // Keyed by the vector, checked against its contents: a freed vector's address may be reused.
    const void* key = experts.data();
    const void* first_codes = experts.empty() ? nullptr : matrix(experts[0].gate).codes;
    auto it = expert_tables_.find(key);
    if (it != expert_tables_.end() && it->second.count == experts.size() &&
        it->second.first_codes == first_codes)
        return it->second;
    if (it != expert_tables_.end()) expert_tables_.erase(it);
    ExpertTable t;
    t.count = experts.size();
    t.first_codes = first_codes;
    std::vector<QMatrix> mats(experts.size() * 3);
    std::vector<uint8_t> held(experts.size(), 0);
    bool first = true;
    for (size_t e = 0; e < experts.size(); ++e) {
        const MlpWeights& w = experts[e];
        if (w.gate.rows == 0) continue;
        const QFormat f = qformat(w.gate);
        MYRIAD_CHECK(qformat(w.up) == f && qformat(w.down) == f,
                     "expert {}: gate, up and down in different formats", e);
        if (first) {
            t.format = f;
            t.inter = w.gate.rows;
            first = false;
        }
        MYRIAD_CHECK(f == t.format && w.gate.rows == t.inter && w.up.rows == t.inter &&
                         w.down.cols == t.inter,
                     "expert {}: format or intermediate size differs from the layer's others", e);
        mats[e * 3] = matrix(w.gate);
        mats[e * 3 + 1] = matrix(w.up);
        mats[e * 3 + 2] = matrix(w.down);
        for (int i = 0; i < 3; ++i) t.mma_v2 = t.mma_v2 && grouped_mma_v2_reads(f, mats[e * 3 + i]);
        held[e] = 1;
    }
    t.mats = DeviceBuffer(std::max<size_t>(mats.size() * sizeof(QMatrix), 1));
    t.held = DeviceBuffer(std::max<size_t>(held.size(), 1));
    check_cuda(cudaMemcpyAsync(t.mats.data(), mats.data(), mats.size() * sizeof(QMatrix),
                               cudaMemcpyHostToDevice, stream_),
               "expert table");
    check_cuda(
        cudaMemcpyAsync(t.held.data(), held.data(), held.size(), cudaMemcpyHostToDevice, stream_),
        "expert table");
    synchronize("expert table");
    grouped_mma_prepare();
    return expert_tables_.emplace(key, std::move(t)).first->second;
}

// Pairs (token, choice) are sorted by expert on the device, which also lists the tiles of
// rows each expert has; one launch computes silu(x W_gate^T) * (x W_up^T) for every tile, one
// the down projection, one the weighted sum back into token order.
void CudaOps::moe_experts(Tensor x, Tensor ids, Tensor weights,
                          const std::vector<MlpWeights>& experts, Tensor out) {
    run_experts(x, ids, weights, experts, out, false);
}

// The combine adds into `out` (one launch fewer than moe_experts and add).
void CudaOps::moe_experts_add(Tensor x, Tensor ids, Tensor weights,
                              const std::vector<MlpWeights>& experts, Tensor out) {
    run_experts(x, ids, weights, experts, out, true);
}

void CudaOps::run_experts(Tensor x, Tensor ids, Tensor weights,
                          const std::vector<MlpWeights>& experts, Tensor out, bool add) {
    const int64_t t_count = x.dim(0), hidden = x.dim(1), k = ids.dim(1);
    const int64_t n_exp = static_cast<int64_t>(experts.size()), pairs = t_count * k;
    MYRIAD_CHECK(out.dim(0) == t_count && out.dim(1) == hidden, "moe output {} for input {}",
                 out.shape_str(), x.shape_str());
    MYRIAD_CHECK(k <= 32 && n_exp <= 2048,
                 "moe: {} experts per token of {} (the CUDA kernels take up to 32 of 2048)", k,
                 n_exp);
    const ExpertTable& table = expert_table(experts);
    if (t_count == 0) return;
    if (ExpertStats& stats = expert_stats(); stats.enabled && capturing_ < 0) {
        std::vector<int32_t> chosen(static_cast<size_t>(pairs));
        check_cuda(cudaMemcpyAsync(chosen.data(), ids.data, chosen.size() * 4,
                                   cudaMemcpyDeviceToHost, stream_),
                   "expert statistics");
        synchronize("expert statistics");
        std::sort(chosen.begin(), chosen.end());
        stats.distinct += std::unique(chosen.begin(), chosen.end()) - chosen.begin();
        stats.tokens += t_count;
        ++stats.layer_steps;
    }
    if (table.inter == 0) {  // no expert of this layer is held here
        if (!add) fill_f32(out.ptr<float>(), out.numel(), 0.0f, stream_);
        check("moe_experts");
        return;
    }
    Tensor counts = scratch(DType::I32, {n_exp});
    Tensor offsets = scratch(DType::I32, {n_exp + 1});
    Tensor sorted_token = scratch(DType::I32, {pairs});
    Tensor pair_row = scratch(DType::I32, {pairs});
    // Tile height from the mean rows of an expert that has any (decode: one or two). Past four
    // rows, or from eight tokens (KernelChoices::moe_tensor_cores), the tensor cores take the
    // tiles (F32 inputs rounded to BF16, as cuBLASLt's are for the dense layers), unless exact
    // mode asks for F32 products throughout; their kernel picks the height (16 or 64 rows).
    const int64_t mean_rows = pairs / std::max<int64_t>(1, std::min(pairs, n_exp));
    const bool mma =
        choices_.moe_tensor_cores(t_count, mean_rows) && hidden % 32 == 0 && table.inter % 32 == 0;
    const int32_t tile_rows = mma ? grouped_mma_tile_rows(mean_rows, table.mma_v2, choices_)
                                  : (mean_rows <= 4 ? 4 : (mean_rows <= 8 ? 8 : 16));
    const int64_t max_tiles = moe_max_tiles(pairs, n_exp, tile_rows);
    Tensor tiles = scratch(DType::I32, {2 * max_tiles});
    Tensor tile_count = scratch(DType::I32, {1});
    moe_sort(ids.ptr<int32_t>(), pairs, k, n_exp, counts.ptr<int32_t>(), offsets.ptr<int32_t>(),
             sorted_token.ptr<int32_t>(), pair_row.ptr<int32_t>(), tile_rows, tiles.ptr<int32_t>(),
             tile_count.ptr<int32_t>(), choices_, stream_);
    check("moe_experts (sort)");

    const auto* mats = static_cast<const QMatrix*>(table.mats.data());
    Tensor act = scratch(DType::F32, {pairs, table.inter});
    SkinnyArgs up;
    up.x = x.ptr<float>();
    up.ldx = hidden;
    up.x_rows = sorted_token.ptr<int32_t>();
    up.table = mats;
    up.table_stride = 3;
    up.table_first = 0;
    up.row_begin = offsets.ptr<int32_t>();
    up.groups = n_exp;
    up.max_rows = t_count;  // a token chooses an expert at most once
    up.tiles = tiles.ptr<int32_t>();
    up.tile_count = tile_count.ptr<int32_t>();
    up.max_tiles = max_tiles;
    up.tile_rows = tile_rows;
    up.glu = true;
    up.n = table.inter;
    up.k = hidden;
    up.out = act.ptr<float>();
    up.ldo = table.inter;
    if (mma) {
        MYRIAD_CHECK(grouped_mma_fits(up), "moe: the tensor-core path does not fit");
        grouped_mma(table.format, up, table.mma_v2, choices_, stream_);
    } else {
        skinny_linear(table.format, up, choices_, stream_);
    }
    check("moe_experts (gate, up)");

    Tensor y = scratch(DType::F32, {pairs, hidden});
    SkinnyArgs down = up;
    down.x = act.ptr<float>();
    down.ldx = table.inter;
    down.x_rows = nullptr;
    down.table_first = 2;
    down.glu = false;
    down.n = hidden;
    down.k = table.inter;
    down.out = y.ptr<float>();
    down.ldo = hidden;
    if (mma)
        grouped_mma(table.format, down, table.mma_v2, choices_, stream_);
    else
        skinny_linear(table.format, down, choices_, stream_);
    check("moe_experts (down)");

    moe_combine(y.ptr<float>(), hidden, ids.ptr<int32_t>(), weights.ptr<float>(),
                pair_row.ptr<int32_t>(), static_cast<const uint8_t*>(table.held.data()), t_count, k,
                add, out.ptr<float>(), stream_);
    check("moe_experts (combine)");
}

}  // namespace myriad::cuda
