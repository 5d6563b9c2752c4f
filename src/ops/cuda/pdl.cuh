// Programmatic dependent launch (sm_90 and later): a kernel launched with launch_pdl may start
// while the kernel before it in the stream is still running. Its blocks load what does not
// depend on that kernel (a linear layer's weights) and then wait in pdl_wait for it to finish
// and its writes to be visible. Between a decode step's ~540 short kernels this overlaps each
// one's start (launch, first weight loads) with the end of the one before. The kernels of the
// decode path use it; cuBLASLt's, the prefill-only ones and the sampler's launch as usual.
//
// The rule that keeps it correct: a kernel launched with launch_pdl calls pdl_wait in every block
// before it reads anything an earlier kernel wrote and before it writes anything (an earlier
// kernel may still read it), early exits included (so that it never finishes before its
// predecessor, which the next kernel relies on). pdl_launch_dependents lets the next kernel's
// blocks be scheduled before this one's end; it changes no ordering.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace myriad::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launch_pdl asks for early starts on stream `s`: KernelChoices::pdl off (the backend
// registers its stream with set_stream_pdl, kernels.h) turns them off, to compare; the kernels'
// waits then return at once.
bool pdl_enabled(cudaStream_t s);

template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                Args&&... args) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = pdl_enabled(s) ? 1 : 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace myriad::cuda
