#include "plan/weight_inventory.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "format/gguf_quants.h"
#include "model/gguf_weights.h"
#include "model/kv_cache.h"
#include "model/linear_format.h"
#include "util/error.h"

namespace myriad::plan {

namespace {

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

int64_t dense_esize(const ModelConfig& c) {
    if (c.torch_dtype == "float32") return 4;
    return 2;  // bfloat16, float16, or unknown: the published checkpoints are BF16
}

std::string dense_kind(const ModelConfig& c) {
    if (c.torch_dtype == "float32") return "F32";
    if (c.torch_dtype == "float16") return "F16";
    return "BF16";
}

bool is_routed_expert(std::string_view name) {
    return name.find(".mlp.experts.") != std::string_view::npos;
}

std::string_view strip_prefix(const ModelConfig& c, std::string_view name) {
    constexpr std::string_view lm = "language_model.";
    if (c.multimodal && name.starts_with(lm)) name.remove_prefix(lm.size());
    return name;
}

}  // namespace

int64_t WeightInventory::total_bytes() const {
    int64_t total = 0;
    for (const auto& e : entries) total += e.bytes;
    return total;
}

std::map<std::string, int64_t> WeightInventory::bytes_by_kind() const {
    std::map<std::string, int64_t> out;
    for (const auto& e : entries) out[e.kind] += e.bytes;
    return out;
}

WeightInventory weights_from_config(const ModelConfig& c) {
    WeightInventory inv;
    inv.source = "config.json";
    const int64_t esize = dense_esize(c);
    for (const ExpectedTensor& t : expected_tensors(c)) {
        const bool expert = is_routed_expert(t.name);
        if (!is_linear_weight(t.name)) {
            const bool bias = t.name.ends_with("e_score_correction_bias");
            inv.entries.push_back({t.name, numel(t.shape) * (bias ? 4 : esize), t.shard, expert,
                                   bias ? "F32" : dense_kind(c)});
            continue;
        }
        const WeightFormat f = linear_format(c, t.name, "");
        for (const StoredTensor& st : stored_tensors(c, t, f, "")) {
            const int64_t size = f == WeightFormat::Dense      ? esize
                                 : st.dtypes[0] == DType::BF16 ? 2  // INT4 group scales
                                                               : dtype_size(st.dtypes[0]);
            inv.entries.push_back(
                {st.name, numel(st.shape) * size, st.scalar ? ShardKind::Replicated : t.shard,
                 expert,
                 f == WeightFormat::Dense ? dense_kind(c) : std::string(weight_format_name(f))});
        }
    }
    // An FP8 KV cache carries a per-layer F32 dequant scale (reference.md §2.2; one k_scale per
    // MLA layer, the spelling myriad's quantiser writes).
    if (c.quant.kv_cache_fp8)
        for (int64_t l = 0; l < c.num_hidden_layers; ++l)
            inv.entries.push_back({fmt::format("model.layers.{}.self_attn.k_scale", l), 4,
                                   ShardKind::Replicated, false, "F32"});
    return inv;
}

WeightInventory weights_from_headers(const ModelConfig& c, const std::vector<TensorInfo>& tensors) {
    const WeightInventory predicted = weights_from_config(c);
    std::unordered_map<std::string_view, const WeightEntry*> expected;
    for (const auto& e : predicted.entries) expected.emplace(e.name, &e);
    WeightInventory inv;
    inv.source = "safetensors headers";
    std::unordered_map<std::string_view, bool> seen;
    for (const TensorInfo& t : tensors) {
        const std::string_view name = strip_prefix(c, t.name);
        const auto bytes = static_cast<int64_t>(t.end - t.begin);
        if (is_ignored_tensor(c, name)) {
            inv.skipped_bytes += bytes;
            continue;
        }
        auto it = expected.find(name);
        if (it == expected.end()) {
            // An FP8 KV-cache scale in another spelling (ModelOpt's self_attn.k_proj.k_scale)
            // is the layer's predicted k_scale; a V scale (ModelOpt writes one; MLA reads none)
            // is a known F32 scalar, not a surprise.
            if (const auto kv = parse_kv_scale_name(name)) {
                const std::string k = fmt::format("model.layers.{}.self_attn.k_scale", kv->layer);
                if (!kv->v && expected.contains(k) && !seen.contains(k)) {
                    it = expected.find(k);
                } else {
                    inv.entries.push_back(
                        {std::string(name), bytes, ShardKind::Replicated, false, "F32"});
                    continue;
                }
            }
        }
        if (it == expected.end()) {
            inv.unexpected.emplace_back(name);
            inv.entries.push_back({std::string(name), bytes, ShardKind::Replicated,
                                   is_routed_expert(name), std::string(dtype_name(t.dtype))});
            continue;
        }
        seen[it->first] = true;
        const WeightEntry& e = *it->second;
        // A quantised linear's tensors carry its format; others their stored dtype.
        const bool quantised = e.kind != "BF16" && e.kind != "F16" && e.kind != "F32";
        inv.entries.push_back({e.name, bytes, e.shard, e.routed_expert,
                               quantised ? e.kind : std::string(dtype_name(t.dtype))});
    }
    for (const auto& e : predicted.entries)
        if (!seen.contains(e.name)) inv.missing.push_back(e.name);
    return inv;
}

WeightInventory weights_from_gguf(const ModelConfig& c, const GgufModel& m) {
    WeightInventory inv;
    inv.source = "GGUF tensor infos";
    for (const ExpectedTensor& t : expected_tensors(c)) {
        const bool expert = is_routed_expert(t.name);
        const GgufTensorRef ref = gguf_tensor_for(t.name);
        const GgufTensorInfo* g = ref.name.empty() ? nullptr : m.tensor(ref.name);
        if (!g) {  // kv_b_proj (two GGUF tensors, rebuilt), or a tensor the file lacks
            if (!ref.name.empty()) inv.missing.push_back(ref.name);
            inv.entries.push_back({t.name, numel(t.shape) * 2, t.shard, expert, "BF16"});
            continue;
        }
        const int64_t bytes = static_cast<int64_t>(g->nbytes) /
                              (ref.expert >= 0 ? std::max<int64_t>(1, c.n_routed_experts) : 1);
        inv.entries.push_back({t.name, bytes, t.shard, expert, "gguf " + gguf_type_name(g->type)});
    }
    return inv;
}

GpuWeightBytes weight_bytes_per_gpu(const WeightInventory& inv, const ModelConfig& c, int tp,
                                    int ep) {
    MYRIAD_CHECK(ep == 1 || ep == tp, "expert parallelism over {} of {} ranks", ep, tp);
    GpuWeightBytes out;
    const myriad::Layout layout(tp, ep > 1);
    for (const auto& e : inv.entries) {
        const int64_t b = layout.rank_bytes(e.bytes, e.shard, e.routed_expert, c.n_routed_experts);
        (e.shard == ShardKind::Replicated && !(ep > 1 && e.routed_expert) ? out.replicated
                                                                          : out.sharded) += b;
    }
    return out;
}

}  // namespace myriad::plan
