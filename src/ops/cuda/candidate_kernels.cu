// Sampling across vocabulary slices on the device (ops/sample_candidates.h is the reference): a
// slice's top k of a row by k rounds of a block-wide selection (each round the best entry after
// the previous one in the order logit descending, ties by column: k is at most 64, so the rounds
// cost less than a sort of the slice), and the merge of the ranks' gathered lists by counting
// each entry's place among them (at most 8 x 64 entries a row).
#include <climits>

#include "ops/cuda/kernels.h"

namespace myriad::cuda {

namespace {

constexpr int kTopkThreads = 256;
constexpr int kMergeThreads = 256;

// Whether (la, ia) comes before (lb, ib): logit descending, ties by id.
__device__ __forceinline__ bool before(float la, int ia, float lb, int ib) {
    return la > lb || (la == lb && ia < ib);
}

__global__ void __launch_bounds__(kTopkThreads)
    slice_topk_kernel(const float* logits, int64_t shard, const int32_t* rows, int64_t k,
                      int64_t vocab_begin, float* out) {
    __shared__ float warp_l[kTopkThreads / 32];
    __shared__ int warp_i[kTopkThreads / 32];
    __shared__ float prev_l;
    __shared__ int prev_i;
    const float* l = logits + int64_t(rows[blockIdx.x]) * shard;
    float* o = out + int64_t(blockIdx.x) * 2 * k;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float pl = INFINITY;  // every entry comes after (+inf, -1)
    int pi = -1;
    for (int64_t r = 0; r < k; ++r) {
        float bl = -INFINITY;
        int bi = INT_MAX;  // none yet: every entry comes before it
        for (int64_t c = threadIdx.x; c < shard; c += kTopkThreads) {
            const float x = l[c];
            const int ci = static_cast<int>(c);
            if (before(pl, pi, x, ci) && before(x, ci, bl, bi)) {
                bl = x;
                bi = ci;
            }
        }
        for (int off = 16; off > 0; off >>= 1) {
            const float ol = __shfl_down_sync(0xffffffffu, bl, off);
            const int oi = __shfl_down_sync(0xffffffffu, bi, off);
            if (before(ol, oi, bl, bi)) {
                bl = ol;
                bi = oi;
            }
        }
        if (lane == 0) {
            warp_l[warp] = bl;
            warp_i[warp] = bi;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < kTopkThreads / 32; ++w)
                if (before(warp_l[w], warp_i[w], bl, bi)) {
                    bl = warp_l[w];
                    bi = warp_i[w];
                }
            o[r] = bl;
            o[k + r] = __int_as_float(static_cast<int>(vocab_begin + bi));
            prev_l = bl;
            prev_i = bi;
        }
        __syncthreads();
        pl = prev_l;
        pi = prev_i;
        __syncthreads();
    }
}

__global__ void __launch_bounds__(kMergeThreads)
    merge_candidates_kernel(const float* gathered, int64_t world, int64_t k, const int32_t* rows,
                            const SampleRow* meta, float* keys, int32_t* vals, int32_t* tokens) {
    const int64_t j = blockIdx.x, count = world * k;
    float* key = keys + j * count;
    int32_t* val = vals + j * count;
    for (int64_t e = threadIdx.x; e < count; e += kMergeThreads) {
        const float* list = gathered + (j * world + e / k) * 2 * k;
        const float x = list[e % k];
        const int id = __float_as_int(list[k + e % k]);
        int64_t place = 0;  // the entries before this one
        for (int64_t f = 0; f < count; ++f) {
            const float* other = gathered + (j * world + f / k) * 2 * k;
            place += before(other[f % k], __float_as_int(other[k + f % k]), x, id) ? 1 : 0;
        }
        key[place] = x;
        val[place] = id;
    }
    __syncthreads();
    if (threadIdx.x == 0 && meta[rows[j]].greedy) tokens[rows[j]] = val[0];
}

}  // namespace

void slice_topk(const float* logits, int64_t shard, const int32_t* rows, int64_t m, int64_t k,
                int64_t vocab_begin, float* out, cudaStream_t s) {
    if (m > 0 && k > 0)
        slice_topk_kernel<<<static_cast<unsigned>(m), kTopkThreads, 0, s>>>(logits, shard, rows, k,
                                                                            vocab_begin, out);
}

void merge_candidates(const float* gathered, int64_t world, int64_t m, int64_t k,
                      const int32_t* rows, const SampleRow* meta, float* keys, int32_t* vals,
                      int32_t* tokens, cudaStream_t s) {
    if (m > 0 && k > 0)
        merge_candidates_kernel<<<static_cast<unsigned>(m), kMergeThreads, 0, s>>>(
            gathered, world, k, rows, meta, keys, vals, tokens);
}

}  // namespace myriad::cuda
