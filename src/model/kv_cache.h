// KvCache: the paged MLA latent cache of one rank — per layer, blocks of `block_size` tokens,
// each token holding kv_lora_rank latent values and qk_rope_head_dim rotated key values. MLA's
// latent is shared by all heads, so every tensor-parallel rank holds the whole cache.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/checkpoint.h"
#include "model/model_config.h"
#include "ops/ops.h"

namespace myriad {

// --kv-cache-dtype. Fp32 is the CPU backend's exact storage (what auto uses on the CPU when the
// checkpoint does not ask for FP8); Bf16 and Fp8 (e4m3 with a per-layer scale) save memory.
enum class KvCacheDtype : uint8_t { Auto, Fp32, Bf16, Fp8 };

// "auto", "bf16" (or "bfloat16"), "fp8" (or "fp8_e4m3"), "fp32" (or "float32"); anything else
// is bad input naming `flag`.
KvCacheDtype parse_kv_cache_dtype(std::string_view text,
                                  std::string_view flag = "--kv-cache-dtype");
std::string_view kv_cache_dtype_name(KvCacheDtype d);

// The storage dtype for `choice` on the CPU backend: auto follows the checkpoint (FP8 when its
// quantisation config declares an FP8 KV cache), else F32. `note` gets a one-line reason when
// the choice came from the checkpoint, else stays empty.
DType resolve_kv_cache_dtype(KvCacheDtype choice, const ModelConfig& config, std::string* note);

// The spellings of a layer's FP8 KV-cache scales after `model.layers.L.self_attn.`, in the order
// read_kv_scales tries them. K (the latent's scale): k_scale, kv_scale, attn.k_scale,
// k_proj.k_scale (what NVIDIA ModelOpt's export writes: its k_bmm_quantizer amax / 448) or
// kv_a_proj_with_mqa.k_scale; MLA's naming is unsettled (reference.md §2.2). V: v_scale,
// attn.v_scale, v_proj.v_scale (ModelOpt's); MLA caches no separate V, so these are not read.
const std::vector<std::string_view>& kv_k_scale_suffixes();
const std::vector<std::string_view>& kv_v_scale_suffixes();

// A tensor name (without the multimodal "language_model." prefix) that is one of those: its layer
// and whether it is a V scale.
struct KvScaleName {
    int64_t layer = 0;
    bool v = false;
};
std::optional<KvScaleName> parse_kv_scale_name(std::string_view name);

// Per-layer FP8 dequant scales of the latent cache from the checkpoint: an F32 scalar under one
// of kv_k_scale_suffixes(), 1.0 where absent.
// A scale of the wrong dtype, shape or value is bad input naming the file and tensor.
std::vector<float> read_kv_scales(const ModelConfig& config, const Checkpoint& checkpoint);

class KvCache {
  public:
    // `scales`: per layer (FP8 only; empty = 1.0).
    KvCache(const ModelConfig& config, Ops& ops, int64_t num_blocks, int64_t block_size,
            DType dtype = DType::F32, const std::vector<float>& scales = {});

    int64_t num_blocks() const { return num_blocks_; }
    int64_t block_size() const { return block_size_; }
    DType dtype() const { return dtype_; }
    const KvLayerView& layer(int64_t l) const { return layers_[static_cast<size_t>(l)]; }
    // Bytes per token across all layers.
    int64_t bytes_per_token() const;

  private:
    int64_t num_blocks_, block_size_;
    DType dtype_;
    std::vector<KvLayerView> layers_;
    std::vector<std::shared_ptr<void>> storage_;
};

}  // namespace myriad
