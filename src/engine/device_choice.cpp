#include "engine/device_choice.h"

#include "model/linear_format.h"
#include "ops/backend.h"
#include "util/error.h"

namespace myriad {

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
