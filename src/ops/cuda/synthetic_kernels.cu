// Synthetic weights written straight into device memory (bench-model --random): the same values
// as ops/synthetic_values.h gives the host, so the CPU backend can check the GPU on them.
#include <algorithm>

#include "ops/cuda/kernels.h"
#include "ops/synthetic_values.h"

namespace myriad::cuda {

namespace {

__global__ void synth_kernel(SynthKind kind, uint64_t seed, float center, float amplitude,
                             int64_t rows, int64_t cols, int64_t src_width, int64_t row0,
                             int64_t col0, void* out) {
    const int64_t n = rows * cols;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / cols, c = i % cols;
        const uint64_t g = static_cast<uint64_t>((row0 + r) * src_width + col0 + c);
        switch (kind) {
            case SynthKind::DenseBf16:
                static_cast<uint16_t*>(out)[i] = synth::dense_bf16(seed, g, center, amplitude);
                break;
            case SynthKind::DenseF32:
                static_cast<float*>(out)[i] =
                    synth::from_bf16(synth::dense_bf16(seed, g, center, amplitude));
                break;
            case SynthKind::Fp8Codes:
                static_cast<uint8_t*>(out)[i] = synth::fp8_code(seed, g);
                break;
            case SynthKind::Fp8Scales:
                static_cast<float*>(out)[i] = synth::fp8_scale(seed, g, amplitude);
                break;
            case SynthKind::Nvfp4Codes:
                static_cast<uint8_t*>(out)[i] = synth::nvfp4_byte(seed, g);
                break;
            case SynthKind::Nvfp4Scales:
                static_cast<uint8_t*>(out)[i] = synth::nvfp4_scale(seed, g);
                break;
        }
    }
}

}  // namespace

void synthesize(SynthKind kind, uint64_t seed, float center, float amplitude, int64_t rows,
                int64_t cols, int64_t src_width, int64_t row0, int64_t col0, void* out,
                cudaStream_t s) {
    const int64_t n = rows * cols;
    if (n == 0) return;
    const int64_t blocks = std::min<int64_t>((n + 255) / 256, 132 * 16);
    synth_kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(kind, seed, center, amplitude, rows,
                                                               cols, src_width, row0, col0, out);
}

}  // namespace myriad::cuda
