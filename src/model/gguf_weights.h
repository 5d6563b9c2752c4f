// Our tensors (Hugging Face names, tensor_layout.h) from llama.cpp's deepseek2 GGUF tensors
// (reference.md §3.2): blk.L.attn_q_a, ffn_{gate,up,down}_exps (3-D, one slice per expert),
// exp_probs_b.bias, ... kv_b_proj is rebuilt from attn_k_b (stored transposed per head) and
// attn_v_b, or read from attn_kv_b in older files.
//
// Quantised linears stay in the file's blocks (WeightFormat::GgufBlock, zero copy). Blocks run
// along the input dimension, so a rank's rows are free to slice; a rank's columns that do not
// start and end on block boundaries (row-parallel linears at an unusual --tp) are dequantised to
// dense at load instead of refused.
#pragma once

#include <string>
#include <vector>

#include "format/gguf.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "ops/weight.h"

namespace myriad {

// The GGUF tensor holding our tensor `name`, and which expert slice of it (-1: all of it).
struct GgufTensorRef {
    std::string name;
    int64_t expert = -1;
};
// kv_b_proj has none (it is two tensors, or attn_kv_b): returns {""} for it.
GgufTensorRef gguf_tensor_for(std::string_view name);

// The whole (unsharded) source of `t`. Shapes and types are checked; errors name the file and
// the GGUF tensor. kv_b_proj is assembled as F32 into `scratch` (which must outlive the use of
// the result) unless `assemble` is false (validation only).
WeightSource gguf_weight_source(const ModelConfig& config, const GgufModel& model,
                                const ExpectedTensor& t, std::vector<float>& scratch,
                                bool assemble = true);

// Checks every tensor the forward pass reads. Logs once when GGUF tensors are unused.
void validate_gguf_weights(const ModelConfig& config, const GgufModel& model);

}  // namespace myriad
