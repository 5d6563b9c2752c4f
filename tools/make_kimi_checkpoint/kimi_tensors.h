// The tensors of nvidia/Kimi-K2.5-NVFP4 (NVIDIA ModelOpt's NVFP4 export of the multimodal
// KimiK25ForConditionalGeneration), in the order the export's state dict lists them:
// vision_tower.*, mm_projector.*, then the DeepSeek-V3 text model under language_model.
//
// - Routed experts are NVFP4: `.weight` U8 [N, K/2] (two e2m1 codes a byte), `.weight_scale`
//   F8_E4M3 [N, K/16], `.weight_scale_2` and `.input_scale` F32 scalars (reference.md §2.2).
//   gate_proj and up_proj of one expert share weight_scale_2 and input_scale, as ModelOpt's export
//   makes them equal for fused layers.
// - Everything the exclude list names stays BF16 (lm_head, self_attn, shared experts, layer 0's
//   dense MLP, the router mlp.gate with its F32 e_score_correction_bias, vision tower, projector),
//   as do embeddings and norms.
// - The FP8 KV cache's per-layer scales: `self_attn.k_proj.k_scale` and `self_attn.v_proj.v_scale`,
//   F32 scalars, the names ModelOpt's postprocess_state_dict gives k_bmm_quantizer /
//   v_bmm_quantizer amaxes (amax / 448, clamped to at least 1.0 for FP8).
// - Vision tower (MoonViT) and projector names and shapes as moonshotai/Kimi-K2.5's index lists
//   them: patch_embed.proj [H, 3, 14, 14] + bias, patch_embed.pos_emb [64, 64, H], per block
//   wqkv [3H, H], wo [H, H], mlp.fc0 [F, H], mlp.fc1 [H, F], norm0/norm1 (weights and biases),
//   encoder.final_layernorm; mm_projector.pre_norm [H], proj.0 [4H, 4H], proj.2 [hidden, 4H].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor_fill.h"
#include "util/dtype.h"

namespace myriad::tools {

struct KimiShape {
    int64_t vocab = 163840, hidden = 7168, intermediate = 18432, moe_intermediate = 2048;
    int64_t layers = 61, first_dense = 1, heads = 64, q_lora_rank = 1536, kv_lora_rank = 512;
    int64_t qk_nope = 128, qk_rope = 64, v_head = 128, experts = 384, shared_experts = 1;
    int64_t vision_hidden = 1152, vision_mlp = 4304, vision_blocks = 27, patch = 14;
    int64_t pos_grid = 64;  // patch_embed.pos_emb is [pos_grid, pos_grid, vision_hidden]
};

struct PlannedTensor {
    std::string name;
    DType dtype = DType::BF16;
    std::vector<int64_t> shape;
    Fill fill;
    uint64_t bytes() const;
};

// Every tensor of the checkpoint for `shape`, in state-dict order. Throws (bad input) when a
// width cannot hold NVFP4 groups of 16.
std::vector<PlannedTensor> kimi_tensors(const KimiShape& shape);

}  // namespace myriad::tools
