#include "model/kernel_shapes.h"

namespace myriad {

KernelShapes kernel_shapes(const ModelConfig& config, const std::set<WeightFormat>& formats,
                           const Layout& layout, DType kv) {
    KernelShapes s;
    s.hidden = config.hidden_size;
    s.heads = layout.local_heads(config.num_attention_heads);
    s.latent = config.kv_lora_rank;
    s.rope = config.qk_rope_head_dim;
    s.experts = config.n_routed_experts;
    s.local_experts = layout.expert_parallel() ? layout.experts(config.n_routed_experts).size()
                                               : config.n_routed_experts;
    s.top_k = config.num_experts_per_tok;
    s.expert_rows = layout.expert_parallel() ? config.moe_intermediate_size
                                             : layout.part(config.moe_intermediate_size).size();
    s.vocab = layout.vocab(config.vocab_size).size();
    s.bf16 = formats.count(WeightFormat::Dense) > 0;
    s.fp8_block = formats.count(WeightFormat::Fp8Block) > 0;
    s.nvfp4 = formats.count(WeightFormat::Nvfp4) > 0;
    s.int4 = formats.count(WeightFormat::Int4Group) > 0;
    s.gguf = formats.count(WeightFormat::GgufBlock) > 0;
    s.kv_bytes = kv == DType::F8_E4M3 ? 1 : (kv == DType::F32 ? 4 : 2);
    return s;
}

}  // namespace myriad
