// Mixture of experts on the GPU: the noaux_tc router (sigmoid, bias for selection, group-limited
// top-k) in one kernel, and the device-side grouping of (token, choice) pairs by expert that
// lets one grouped launch run every expert (reference.md §1.7).

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/pdl.cuh"

namespace myriad::cuda {

namespace {

constexpr int kRouteWarps = 4;  // tokens per block

// (value, index) order of the CPU's stable sort by value, descending: larger value first, the
// lower index among equals; index -1 is "none" and loses to everything.
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
    if (i < 0) return false;
    if (bi < 0) return true;
    return v > bv || (v == bv && i < bi);
}

// One warp per token; scores and choices of its experts, and the chosen ids, in shared memory
// (the weights read the ids from there: read back from global memory, one after another, they
// cost a round trip each, and the kernel took 7 us at batch 1 on the H200).
//
// Each lane's experts (e = lane + 32 j, at most kRouteMaxPerLane of them) are loaded at once into
// registers: the bias before waiting for the router's product (no kernel of the step writes it),
// the logits after. One at a time, a round trip each, the 12 a lane of Kimi-K2's 384 experts kept
// the kernel at 23.5 us a layer at batch 1 (CUPTI, H200).
constexpr int kRouteMaxPerLane = 1536 / kWarp;  // moe_route's largest expert count

__global__ void __launch_bounds__(kWarp* kRouteWarps) route_kernel(RouteArgs a) {
    extern __shared__ float smem[];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const int64_t t = int64_t(blockIdx.x) * kRouteWarps + warp;
    const int e_count = static_cast<int>(a.experts);
    float bias[kRouteMaxPerLane];
#pragma unroll
    for (int j = 0; j < kRouteMaxPerLane; ++j) {
        const int e = lane + j * kWarp;
        bias[j] = e < e_count ? a.bias[e] : 0.0f;
    }
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    if (t >= a.tokens) return;
    float* score = smem + warp * (2 * e_count + a.top_k);
    float* choice = score + e_count;
    int* chosen = reinterpret_cast<int*>(choice + e_count);
    const float* lg = a.logits + t * e_count;
    float logit[kRouteMaxPerLane];
#pragma unroll
    for (int j = 0; j < kRouteMaxPerLane; ++j) {
        const int e = lane + j * kWarp;
        logit[j] = e < e_count ? lg[e] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kRouteMaxPerLane; ++j) {
        const int e = lane + j * kWarp;
        if (e < e_count) {
            const float s = 1.0f / (1.0f + expf(-logit[j]));
            score[e] = s;
            choice[e] = s + bias[j];
        }
    }
    __syncwarp();
    if (a.n_group > 1) {
        // A group's score is the sum of its two best biased scores; all but the topk_group best
        // groups are masked to -inf (lane 0, serially: groups are few).
        if (lane == 0) {
            const int64_t per = e_count / a.n_group;
            float gs[32];
            bool keep[32];
            for (int64_t g = 0; g < a.n_group; ++g) {
                float best = -INFINITY, second = -INFINITY;
                for (int64_t e = g * per; e < (g + 1) * per; ++e) {
                    if (choice[e] > best) {
                        second = best;
                        best = choice[e];
                    } else if (choice[e] > second) {
                        second = choice[e];
                    }
                }
                gs[g] = best + second;
                keep[g] = false;
            }
            for (int64_t r = 0; r < a.topk_group; ++r) {
                int bi = -1;
                float bv = 0.0f;
                for (int g = 0; g < a.n_group; ++g)
                    if (!keep[g] && better(gs[g], g, bv, bi)) bv = gs[g], bi = g;
                if (bi >= 0) keep[bi] = true;
            }
            for (int64_t g = 0; g < a.n_group; ++g)
                if (!keep[g])
                    for (int64_t e = g * per; e < (g + 1) * per; ++e) choice[e] = -INFINITY;
        }
        __syncwarp();
    }
    // top-k by rounds of a warp-wide arg-max; a taken expert is marked NaN and skipped.
    float sum = 0.0f;
    for (int64_t j = 0; j < a.top_k; ++j) {
        float bv = 0.0f;
        int bi = -1;
        for (int64_t e = lane; e < e_count; e += kWarp) {
            const float v = choice[e];
            if (v == v && better(v, static_cast<int>(e), bv, bi)) bv = v, bi = static_cast<int>(e);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
        }
        if (lane == 0) {
            chosen[j] = bi;
            choice[bi] = __uint_as_float(0x7fc00000u);
        }
        sum += score[bi];
        __syncwarp();
    }
    for (int64_t j = lane; j < a.top_k; j += kWarp) {
        const int id = chosen[j];
        float w = score[id];
        if (a.norm_topk_prob) w /= (sum + 1e-20f);
        a.ids[t * a.top_k + j] = id;
        a.weights[t * a.top_k + j] = w * a.scaling;
    }
}

__global__ void count_kernel(const int32_t* ids, int64_t pairs, int32_t* counts) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < pairs;
         i += int64_t(gridDim.x) * blockDim.x)
        atomicAdd(&counts[ids[i]], 1);
}

// Exclusive prefix of the counts into offsets [E + 1] (the cursors of the scatter start there),
// and the tiles of each expert that has rows, by one block of kThreads: each thread takes up to
// kPerThread consecutive experts, and warp shuffles scan the rows and tiles of all threads.
// (One thread walking the experts cost 14 us for 64 of them.) `counts` and `cursor` may be in
// global or shared memory, and may be the same array.
constexpr int kPerThread = 4;
template <int kThreads>
__device__ __forceinline__ void scan_experts(const int32_t* counts, int32_t* cursor,
                                             int64_t experts, int32_t* offsets, int32_t tile_rows,
                                             int32_t* tiles, int32_t* tile_count) {
    constexpr int kWarps = kThreads / kWarp;
    static_assert(kWarps <= kWarp, "one warp scans the warps' totals");
    __shared__ int32_t warp_rows[kWarps], warp_tiles[kWarps];
    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
    const int64_t per = (experts + kThreads - 1) / kThreads;
    const int64_t e0 = tid * per;
    int32_t c[kPerThread], my_rows = 0, my_tiles = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        c[i] = (i < per && e0 + i < experts) ? counts[e0 + i] : 0;
        my_rows += c[i];
        my_tiles += (c[i] + tile_rows - 1) / tile_rows;
    }
    int32_t rows = my_rows, tl = my_tiles;  // inclusive scans over the warp
#pragma unroll
    for (int o = 1; o < kWarp; o <<= 1) {
        const int32_t r = __shfl_up_sync(0xffffffffu, rows, o);
        const int32_t t = __shfl_up_sync(0xffffffffu, tl, o);
        if (lane >= o) rows += r, tl += t;
    }
    if (lane == kWarp - 1) warp_rows[warp] = rows, warp_tiles[warp] = tl;
    __syncthreads();
    if (warp == 0) {  // inclusive scan of the warps' totals
        int32_t wr = lane < kWarps ? warp_rows[lane] : 0, wt = lane < kWarps ? warp_tiles[lane] : 0;
#pragma unroll
        for (int o = 1; o < kWarp; o <<= 1) {
            const int32_t r = __shfl_up_sync(0xffffffffu, wr, o);
            const int32_t t = __shfl_up_sync(0xffffffffu, wt, o);
            if (lane >= o) wr += r, wt += t;
        }
        if (lane < kWarps) warp_rows[lane] = wr, warp_tiles[lane] = wt;
    }
    __syncthreads();
    int32_t row = rows - my_rows + (warp > 0 ? warp_rows[warp - 1] : 0);
    int32_t tile = tl - my_tiles + (warp > 0 ? warp_tiles[warp - 1] : 0);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int64_t e = e0 + i;
        if (i >= per || e >= experts) break;
        offsets[e] = row;
        cursor[e] = row;
        for (int32_t r = 0; r < c[i]; r += tile_rows, ++tile) {
            tiles[2 * tile] = static_cast<int32_t>(e);
            tiles[2 * tile + 1] = row + r;
        }
        row += c[i];
    }
    if (tid == 0) {
        offsets[experts] = warp_rows[kWarps - 1];
        *tile_count = warp_tiles[kWarps - 1];
    }
}

constexpr int kSortThreads = 512;  // experts up to kSortThreads * kPerThread = 2048
__global__ void __launch_bounds__(kSortThreads)
    offsets_kernel(int32_t* counts, int64_t experts, int32_t* offsets, int32_t tile_rows,
                   int32_t* tiles, int32_t* tile_count) {
    scan_experts<kSortThreads>(counts, counts, experts, offsets, tile_rows, tiles, tile_count);
}

// The whole grouping in one block, for decode-size steps: counts in shared memory, the scan,
// then the scatter with shared-memory cursors. It replaces a memset and three launches (count,
// offsets, scatter), each a graph node of a few microseconds, with one. Its outputs equal the
// three kernels' except for the order of an expert's rows, which atomics decide in both.
constexpr int kFusedSortThreads = 1024;
constexpr int64_t kFusedSortMaxPairs = 8192;
constexpr int64_t kFusedSortMaxExperts = int64_t{kFusedSortThreads} * kPerThread;
__global__ void __launch_bounds__(kFusedSortThreads)
    sort_one_block_kernel(const int32_t* ids, int64_t pairs, int64_t top_k, int64_t experts,
                          int32_t* offsets, int32_t* sorted_token, int32_t* pair_row,
                          int32_t tile_rows, int32_t* tiles, int32_t* tile_count) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    extern __shared__ int32_t cnt[];  // [experts]: the counts, then the cursors
    for (int64_t e = threadIdx.x; e < experts; e += blockDim.x) cnt[e] = 0;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < pairs; i += blockDim.x) atomicAdd(&cnt[ids[i]], 1);
    __syncthreads();
    scan_experts<kFusedSortThreads>(cnt, cnt, experts, offsets, tile_rows, tiles, tile_count);
    __syncthreads();
    for (int64_t i = threadIdx.x; i < pairs; i += blockDim.x) {
        const int32_t row = atomicAdd(&cnt[ids[i]], 1);
        sorted_token[row] = static_cast<int32_t>(i / top_k);
        pair_row[i] = row;
    }
}

__global__ void scatter_kernel(const int32_t* ids, int64_t pairs, int64_t top_k, int32_t* cursor,
                               int32_t* sorted_token, int32_t* pair_row) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < pairs;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int32_t row = atomicAdd(&cursor[ids[i]], 1);
        sorted_token[row] = static_cast<int32_t>(i / top_k);
        pair_row[i] = row;
    }
}

// out[t] = sum over j in choice order of w[t, j] * y[row of (t, j)], experts held only. The
// token's choices are read once into shared memory; a block takes 1024 elements of the hidden
// row (grid.y), four per thread, and loads eight choices' rows before adding any (the loads one
// after another cost a round trip each: 4 us a layer at batch 1 on the H200).
constexpr int kCombineMaxK = 32, kCombineThreads = 256, kCombineBatch = 8;
__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(const float* y, int64_t hidden, const int32_t* ids, const float* w,
                   const int32_t* pair_row, const uint8_t* held, int64_t top_k, bool add,
                   float* out) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    __shared__ float weight[kCombineMaxK];
    __shared__ int64_t base[kCombineMaxK];
    const int64_t t = blockIdx.x;
    if (threadIdx.x < top_k) {
        const int64_t p = t * top_k + threadIdx.x;
        weight[threadIdx.x] = held[ids[p]] ? w[p] : 0.0f;
        base[threadIdx.x] = int64_t(pair_row[p]) * hidden;
    }
    __syncthreads();
    const int64_t span = int64_t(kCombineThreads) * 4;
    if (hidden % 4 == 0) {
        const int64_t d = int64_t(blockIdx.y) * span + int64_t(threadIdx.x) * 4;
        if (d >= hidden) return;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int64_t j0 = 0; j0 < top_k; j0 += kCombineBatch) {
            float4 v[kCombineBatch];
#pragma unroll
            for (int u = 0; u < kCombineBatch; ++u) {
                const int64_t j = j0 + u;
                v[u] = j < top_k && weight[j] != 0.0f
                           ? *reinterpret_cast<const float4*>(y + base[j] + d)
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < kCombineBatch; ++u) {
                const int64_t j = j0 + u;
                if (j >= top_k || weight[j] == 0.0f) continue;  // not held here (or a zero weight)
                acc.x += weight[j] * v[u].x;
                acc.y += weight[j] * v[u].y;
                acc.z += weight[j] * v[u].z;
                acc.w += weight[j] * v[u].w;
            }
        }
        float4* o = reinterpret_cast<float4*>(out + t * hidden + d);
        if (add) {  // out + acc, as add_kernel would after a plain combine
            const float4 prev = *o;
            acc = make_float4(prev.x + acc.x, prev.y + acc.y, prev.z + acc.z, prev.w + acc.w);
        }
        *o = acc;
        return;
    }
    for (int64_t d = int64_t(blockIdx.y) * span + threadIdx.x;
         d < hidden && d < (int64_t(blockIdx.y) + 1) * span; d += kCombineThreads) {
        float acc = 0.0f;
        for (int64_t j = 0; j < top_k; ++j)
            if (weight[j] != 0.0f) acc += weight[j] * y[base[j] + d];
        out[t * hidden + d] = add ? out[t * hidden + d] + acc : acc;
    }
}

unsigned pair_grid(int64_t pairs) {
    const int64_t g = (pairs + 255) / 256;
    return static_cast<unsigned>(g < 1 ? 1 : (g > 4096 ? 4096 : g));
}

}  // namespace

void moe_route(const RouteArgs& a, cudaStream_t s) {
    if (a.tokens == 0) return;
    const size_t smem = kRouteWarps * (2 * a.experts + a.top_k) * sizeof(float);
    launch_pdl(route_kernel, static_cast<unsigned>((a.tokens + kRouteWarps - 1) / kRouteWarps),
               kWarp * kRouteWarps, smem, s, a);
}

void moe_sort(const int32_t* ids, int64_t pairs, int64_t top_k, int64_t experts, int32_t* counts,
              int32_t* offsets, int32_t* sorted_token, int32_t* pair_row, int32_t tile_rows,
              int32_t* tiles, int32_t* tile_count, const KernelChoices& kc, cudaStream_t s) {
    // The one-block grouping where it fits; moe_sort_fused false keeps the four launches (a
    // memset, count, offsets, scatter), to compare.
    if (kc.moe_sort_fused && pairs <= kFusedSortMaxPairs && experts <= kFusedSortMaxExperts) {
        launch_pdl(sort_one_block_kernel, 1, kFusedSortThreads, experts * sizeof(int32_t), s, ids,
                   pairs, top_k, experts, offsets, sorted_token, pair_row, tile_rows, tiles,
                   tile_count);
        return;
    }
    cudaMemsetAsync(counts, 0, experts * sizeof(int32_t), s);
    if (pairs > 0) count_kernel<<<pair_grid(pairs), 256, 0, s>>>(ids, pairs, counts);
    offsets_kernel<<<1, kSortThreads, 0, s>>>(counts, experts, offsets, tile_rows, tiles,
                                              tile_count);
    if (pairs > 0)
        scatter_kernel<<<pair_grid(pairs), 256, 0, s>>>(ids, pairs, top_k, counts, sorted_token,
                                                        pair_row);
}

void moe_combine(const float* y, int64_t hidden, const int32_t* ids, const float* w,
                 const int32_t* pair_row, const uint8_t* held, int64_t tokens, int64_t top_k,
                 bool add, float* out, cudaStream_t s) {
    const int64_t span = int64_t(kCombineThreads) * 4;
    if (tokens > 0)
        launch_pdl(
            combine_kernel,
            dim3(static_cast<unsigned>(tokens), static_cast<unsigned>((hidden + span - 1) / span)),
            kCombineThreads, 0, s, y, hidden, ids, w, pair_row, held, top_k, add, out);
}

}  // namespace myriad::cuda
