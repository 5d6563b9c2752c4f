#include "engine/device_choice.h"

#include "model/linear_format.h"
#include "ops/backend.h"
#include "util/error.h"

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

GpuKernelPlan gpu_kernel_plan(const ModelConfig& config, const Checkpoint& checkpoint, DType kv,
                              int device, const Layout& layout) {
    GpuInfo gpu;
    if (!cuda_device_info(device, &gpu)) {
        std::string why;
        const int n = cuda_device_count(&why);
        GpuKernelPlan p;
        p.stop = n > 0         ? fmt::format("GPU {} requested but {} found", device, n)
                 : why.empty() ? "no CUDA device"
                               : why;
        return p;
    }
    const KernelShapes shapes =
        kernel_shapes(config, checkpoint_linear_formats(config, checkpoint), layout, kv);
    return plan_gpu_kernels(gpu, cuda_built_architectures(),
                            KernelChoices::from_environment(gpu, shapes));
}

Device choose_device(const std::string& flag, int tp, const ModelConfig& config,
                     const Checkpoint& checkpoint, std::string* note, const std::string& devices) {
    Device d = resolve_device(flag, tp, note, devices);
    if (d != Device::Cuda) return d;
    // The latent cache's dtype does not decide whether the GPU can run (every kernel reads all
    // three); the workers print the plan with the real one.
    const GpuKernelPlan plan = gpu_kernel_plan(config, checkpoint, DType::BF16);
    if (plan.stop.empty()) return d;
    if (flag == "cuda") bad_input("--device cuda: {}", plan.stop);
    if (note) *note = "device: cpu (the GPU cannot run this model: " + plan.stop + ")";
    return Device::Cpu;
}

}  // namespace myriad
