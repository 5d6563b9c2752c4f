// Will a model fit, and how: for each layout (TP 1, 2, 4, 8; EP with data-parallel attention
// where the experts divide), the bytes one GPU holds, the reserves, the KV cache that is left and
// the context it allows; then the smallest layout that fits, and why each other one does not.
//
// Per-GPU memory = weights + activations + workspace + CUDA graphs + KV cache, where
//   activations = 2 bytes * T * (3*hidden + heads/tp * (qk_head_dim + v_head_dim)
//                                + kv_lora_rank + qk_rope_head_dim + 2*ffn/tp)
//                 + 4 bytes * max_num_seqs * vocab/tp                          (F32 logits)
//                 + 4 bytes * L * (kv_lora_rank + qk_rope_head_dim
//                                  + heads/tp * (qk_nope_head_dim + v_head_dim))
//                 + 2 bytes * L * kv_lora_rank + 4 bytes * T * heads/tp
//                   (the naive attention's fixed workspace: L = naive_context_tokens context
//                   rows in F32, a BF16 copy of their latent on the GPU, each row's log-sum-exp)
//     T = max_batched_tokens (one prefill chunk), ffn = max(intermediate_size,
//     num_experts_per_tok * moe_intermediate_size): the widest MLP activation of a token
//     (EP layouts: heads and ffn are not divided, a rank may receive every routed token);
//   workspace   = 1 GiB (CUDA context, cuBLASLt workspace, NCCL buffers);
//   CUDA graphs = 1 GiB (decode graphs for batch sizes up to max_num_seqs);
//   KV cache: MLA keeps kv_lora_rank + qk_rope_head_dim values per token per layer, the same on
//     every TP rank (BF16 2 bytes, FP8 1 byte), in blocks of block_size tokens.
// A layout fits when weights and reserves leave room for `concurrency` sequences of `context`
// tokens on each GPU (EP layouts: each data-parallel rank serves ceil(concurrency / ep) of them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/naive_context.h"
#include "plan/gpu_spec.h"
#include "plan/weight_inventory.h"

namespace myriad::plan {

struct PlanOptions {
    std::vector<Gpu> gpus;    // empty: capacity unknown, no layout fits
    int64_t context = 0;      // tokens per sequence; 0: max_position_embeddings
    int64_t concurrency = 1;  // sequences at once
    KvCacheDtype kv_cache_dtype = KvCacheDtype::Auto;  // auto: FP8 when the checkpoint says so
    int64_t max_batched_tokens = 8192;
    int64_t naive_context_tokens = kNaiveContextTokens;  // ModelOptions::naive_context_tokens
    int64_t max_num_seqs = 256;
    int64_t block_size = 64;
    int64_t workspace_bytes = int64_t{1} << 30;
    int64_t cuda_graph_bytes = int64_t{1} << 30;
};

// One candidate layout of the plan and what it leaves for the KV cache (the parallel layout itself,
// who holds which shard, is myriad::Layout in parallel/layout.h).
struct LayoutFit {
    int gpus = 1, tp = 1, ep = 1, dp = 1;
    bool fits = false;
    GpuWeightBytes weights;  // per GPU
    int64_t activation_bytes = 0, workspace_bytes = 0, cuda_graph_bytes = 0;
    int64_t gpu_bytes = 0;           // capacity of the smallest GPU used; 0 when unknown
    int64_t free_bytes = 0;          // left for the KV cache per GPU (negative: does not fit)
    int64_t kv_bytes_per_token = 0;  // per GPU (replicated on every TP rank)
    int64_t kv_capacity_tokens = 0;  // tokens the layout caches (summed over DP ranks)
    int64_t max_context = 0;         // longest context at the requested concurrency
    std::string reason;              // why it does not fit; empty when it does

    int64_t reserve_bytes() const { return activation_bytes + workspace_bytes + cuda_graph_bytes; }
    std::string label() const;  // "TP=4" or "TP=8+EP" (whole experts per GPU: --expert-parallel)
};

struct Plan {
    std::vector<LayoutFit> layouts;
    std::optional<size_t> chosen;  // index into layouts
    DType kv_dtype = DType::BF16;
    std::string kv_note;   // where the KV dtype came from
    std::string moe_note;  // how the chosen layout places the routed experts, and why
    int64_t context = 0, concurrency = 1;
};

// KV bytes per token on one GPU: layers * (kv_lora_rank + qk_rope_head_dim) * element size.
int64_t kv_bytes_per_token(const ModelConfig& config, DType kv_dtype);
// The activation reserve above for one GPU of a layout.
int64_t activation_bytes(const ModelConfig& config, const PlanOptions& options, int tp, int ep);

Plan make_plan(const ModelConfig& config, const WeightInventory& weights,
               const PlanOptions& options);

// "150.2 GB" (10^9 bytes, one decimal).
std::string gb(int64_t bytes);

}  // namespace myriad::plan
