// How the absorbed decode kernels split a query row's keys over blocks (flash decoding), shared
// by the kernels and the join of their partials: a split takes a multiple of 8 keys and at least
// kMinSplitKeys, so a short context leaves the later splits empty. This is decided on the
// device, because a captured graph keeps the host's split count while the context grows.
#pragma once

#include <cstdint>

namespace myriad::cuda {

constexpr int64_t kMinSplitKeys = 32;
__device__ __forceinline__ int64_t decode_chunk(int64_t n, int64_t splits) {
    const int64_t c = ((n + splits - 1) / splits + 7) / 8 * 8;
    return c > kMinSplitKeys ? c : kMinSplitKeys;
}
__device__ __forceinline__ int64_t decode_active_splits(int64_t n, int64_t splits) {
    const int64_t c = decode_chunk(n, splits);
    return (n + c - 1) / c;
}

}  // namespace myriad::cuda
