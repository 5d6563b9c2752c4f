#include "model/kv_cache.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/weights.h"
#include "util/error.h"

namespace myriad {

KvCacheDtype parse_kv_cache_dtype(std::string_view text, std::string_view flag) {
    if (text == "auto") return KvCacheDtype::Auto;
    if (text == "bf16" || text == "bfloat16") return KvCacheDtype::Bf16;
    if (text == "fp8" || text == "fp8_e4m3") return KvCacheDtype::Fp8;
    if (text == "fp32" || text == "float32") return KvCacheDtype::Fp32;
    bad_input("{} {}: expected auto, bf16, fp8 or fp32", flag, text);
}

std::string_view kv_cache_dtype_name(KvCacheDtype d) {
    switch (d) {
        case KvCacheDtype::Auto:
            return "auto";
        case KvCacheDtype::Fp32:
            return "fp32";
        case KvCacheDtype::Bf16:
            return "bf16";
        case KvCacheDtype::Fp8:
            return "fp8";
    }
    return "?";
}

DType resolve_kv_cache_dtype(KvCacheDtype choice, const ModelConfig& c, std::string* note) {
    switch (choice) {
        case KvCacheDtype::Fp32:
            return DType::F32;
        case KvCacheDtype::Bf16:
            return DType::BF16;
        case KvCacheDtype::Fp8:
            return DType::F8_E4M3;
        case KvCacheDtype::Auto:
            break;
    }
    if (!c.quant.kv_cache_fp8) return DType::F32;
    if (note)
        *note = fmt::format(
            "KV cache: fp8 e4m3 with per-layer scales, as {} declares "
            "(--kv-cache-dtype auto; bf16 or fp32 to override)",
            c.quant.kv_cache_field);
    return DType::F8_E4M3;
}

const std::vector<std::string_view>& kv_k_scale_suffixes() {
    static const std::vector<std::string_view> s = {"k_scale", "kv_scale", "attn.k_scale",
                                                    "k_proj.k_scale", "kv_a_proj_with_mqa.k_scale"};
    return s;
}

const std::vector<std::string_view>& kv_v_scale_suffixes() {
    static const std::vector<std::string_view> s = {"v_scale", "attn.v_scale", "v_proj.v_scale"};
    return s;
}

std::optional<KvScaleName> parse_kv_scale_name(std::string_view name) {
    constexpr std::string_view layers = "model.layers.";
    if (!name.starts_with(layers)) return std::nullopt;
    name.remove_prefix(layers.size());
    int64_t layer = 0;
    size_t digits = 0;
    while (digits < name.size() && digits < 9 && name[digits] >= '0' && name[digits] <= '9')
        layer = layer * 10 + (name[digits++] - '0');
    if (digits == 0) return std::nullopt;
    name.remove_prefix(digits);
    constexpr std::string_view attn = ".self_attn.";
    if (!name.starts_with(attn)) return std::nullopt;
    name.remove_prefix(attn.size());
    for (std::string_view s : kv_k_scale_suffixes())
        if (name == s) return KvScaleName{layer, false};
    for (std::string_view s : kv_v_scale_suffixes())
        if (name == s) return KvScaleName{layer, true};
    return std::nullopt;
}

std::vector<float> read_kv_scales(const ModelConfig& c, const Checkpoint& ckpt) {
    const std::string prefix = text_model_prefix(c, ckpt);
    std::vector<float> scales(static_cast<size_t>(c.num_hidden_layers), 1.0f);
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        const std::string a = fmt::format("{}model.layers.{}.self_attn.", prefix, l);
        for (std::string_view suffix : kv_k_scale_suffixes()) {
            const std::string name = a + std::string(suffix);
            if (!ckpt.has(name)) continue;
            TensorView v = ckpt.get(name);
            if (v.dtype() != DType::F32 || v.info->numel() != 1 || v.shape().size() > 1)
                bad_input(
                    "{}: tensor {} has dtype {} and shape {}, expected an F32 scalar (the "
                    "layer's FP8 KV-cache scale)",
                    *v.file, name, dtype_name(v.dtype()), v.shape_str());
            float s;
            std::memcpy(&s, v.data, 4);
            if (!std::isfinite(s) || s <= 0.0f)
                bad_input("{}: tensor {} is {}, expected a positive finite KV-cache scale", *v.file,
                          name, s);
            scales[static_cast<size_t>(l)] = s;
            break;
        }
    }
    return scales;
}

KvCache::KvCache(const ModelConfig& c, Ops& ops, int64_t num_blocks, int64_t block_size,
                 DType dtype, const std::vector<float>& scales)
    : num_blocks_(num_blocks), block_size_(block_size), dtype_(dtype) {
    MYRIAD_CHECK(num_blocks > 0 && block_size > 0, "KV cache of {} blocks of {} tokens", num_blocks,
                 block_size);
    MYRIAD_CHECK(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F8_E4M3,
                 "KV cache dtype {}", dtype_name(dtype));
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        KvLayerView v;
        v.block_size = block_size;
        v.latent_dim = c.kv_lora_rank;
        v.rope_dim = c.qk_rope_head_dim;
        v.dtype = dtype;
        if (dtype == DType::F8_E4M3 && static_cast<size_t>(l) < scales.size())
            v.scale = scales[static_cast<size_t>(l)];
        v.data = Tensor(nullptr, dtype, {num_blocks, block_size, v.latent_dim + v.rope_dim});
        storage_.push_back(ops.allocate(v.data));
        layers_.push_back(v);
    }
}

int64_t KvCache::bytes_per_token() const {
    int64_t total = 0;
    for (const auto& l : layers_) total += (l.latent_dim + l.rope_dim) * dtype_size(l.data.dtype);
    return total;
}

}  // namespace myriad
