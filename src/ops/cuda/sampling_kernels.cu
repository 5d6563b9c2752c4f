// Sampling on the device (ops/token_choice.h is the reference): the rows' edits, then argmax for
// greedy rows, and for the others a segmented sort by logit (descending, ties by id, as the
// stable radix sort keeps ids ascending) and one block per row that cuts to top-k / top-p /
// min-p and draws, in double as the host does.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "ops/cuda/kernels.h"

namespace myriad::cuda {

namespace {

constexpr int kChooseThreads = 512;

// One thread per row, the edits in order (they are few: a row's distinct tokens at most).
// A piece of the list at a time: edits[e - first] for e in [first, first + count).
__global__ void apply_edits_kernel(float* logits, int64_t rows, int64_t vocab,
                                   const SampleRow* meta, const LogitEdit* edits, int64_t first,
                                   int64_t count) {
    const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
    if (r >= rows || meta[r].host) return;
    float* l = logits + r * vocab;
    const int64_t begin = meta[r].edits_begin > first ? meta[r].edits_begin : first;
    const int64_t end = meta[r].edits_end < first + count ? meta[r].edits_end : first + count;
    for (int64_t e = begin; e < end; ++e) {
        const LogitEdit ed = edits[e - first];
        if (ed.token < 0 || ed.token >= vocab) continue;
        float& x = l[ed.token];
        if (ed.kind == LogitEdit::Repetition)
            x = x > 0 ? x / ed.value : x * ed.value;
        else if (ed.kind == LogitEdit::Add)
            x += ed.value;
        else
            x = -INFINITY;
    }
}

// One thread per 32 tokens of a row (one mask word): the row's mask index from its meta, the
// word read once, the disallowed logits set to -inf. Rows without a mask return at once.
__global__ void apply_token_masks_kernel(float* logits, int64_t vocab, const SampleRow* meta,
                                         const uint32_t* masks, int32_t words) {
    const int64_t r = blockIdx.y;
    const int32_t m = meta[r].mask;
    if (m < 0 || meta[r].host) return;
    const int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
    if (w >= words) return;
    const uint32_t bits = masks[int64_t(m) * words + w];
    if (bits == 0xffffffffu) return;
    float* l = logits + r * vocab;
    const int64_t first = w * 32;
    for (int b = 0; b < 32 && first + b < vocab; ++b)
        if (!(bits >> b & 1u)) l[first + b] = -INFINITY;
}

// keys[j, :] = logits[rows[j], :], vals[j, :] = 0..vocab-1, offsets[j] = j * vocab.
__global__ void gather_sort_input_kernel(const float* logits, int64_t vocab, const int32_t* rows,
                                         int64_t m, float* keys, int32_t* vals, int32_t* offsets) {
    const int64_t j = blockIdx.y;
    const float* src = logits + int64_t(rows[j]) * vocab;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < vocab;
         i += int64_t(gridDim.x) * blockDim.x) {
        keys[j * vocab + i] = src[i];
        vals[j * vocab + i] = static_cast<int32_t>(i);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        offsets[j] = static_cast<int32_t>(j * vocab);
        if (j == m - 1) offsets[m] = static_cast<int32_t>(m * vocab);
    }
}

using Reduce = cub::BlockReduce<double, kChooseThreads>;
using Scan = cub::BlockScan<double, kChooseThreads>;

struct ChooseShared {
    union {
        typename Reduce::TempStorage reduce;
        typename Scan::TempStorage scan;
    } cub;
    double total;
    int found;
};

// The normalised probability of sorted candidate i (as the host: exp in double of the logit
// times the float 1/T, less the float max times 1/T; divided by the sum).
__device__ __forceinline__ double cand_prob(const float* key, int64_t i, float inv_t, float mx,
                                            double sum) {
    return exp(double(key[i]) * inv_t - mx) / sum;
}

// The first i in [0, n) whose inclusive prefix sum of q exceeds (strict) or reaches `target`;
// n when none does. Every thread gets the answer.
template <bool Strict>
__device__ int64_t first_prefix_over(const float* key, int64_t n, float inv_t, float mx, double sum,
                                     double target, ChooseShared& sh) {
    double running = 0.0;
    for (int64_t base = 0; base < n; base += kChooseThreads) {
        const int64_t i = base + threadIdx.x;
        const double q = i < n ? cand_prob(key, i, inv_t, mx, sum) : 0.0;
        double incl = 0.0, chunk = 0.0;
        Scan(sh.cub.scan).InclusiveSum(q, incl, chunk);
        incl += running;
        if (threadIdx.x == 0) sh.found = 0x7fffffff;
        __syncthreads();
        const bool hit = i < n && (Strict ? target < incl : incl >= target);
        if (hit) atomicMin(&sh.found, static_cast<int>(threadIdx.x));
        __syncthreads();
        const int f = sh.found;
        __syncthreads();
        if (f != 0x7fffffff) return base + f;
        running += chunk;
    }
    return n;
}

__global__ void __launch_bounds__(kChooseThreads)
    choose_kernel(const float* keys, const int32_t* vals, int64_t vocab, const int32_t* rows,
                  const int32_t* slots, const SampleRow* meta, int32_t* tokens) {
    __shared__ ChooseShared sh;
    const int64_t j = blockIdx.x, at_row = slots ? slots[j] : j;
    const SampleRow row = meta[rows[j]];
    const float* key = keys + at_row * vocab;
    const int32_t* val = vals + at_row * vocab;
    int64_t keep = row.top_k > 0 && row.top_k < vocab ? row.top_k : vocab;
    const float inv_t = row.inv_temperature;
    const float mx = key[0] * inv_t;
    double part = 0.0;
    for (int64_t i = threadIdx.x; i < keep; i += kChooseThreads)
        part += exp(double(key[i]) * inv_t - mx);
    const double s = Reduce(sh.cub.reduce).Sum(part);
    if (threadIdx.x == 0) sh.total = s;
    __syncthreads();
    const double sum = sh.total;
    __syncthreads();
    if (row.top_p < 1.0) {
        const int64_t n = first_prefix_over<false>(key, keep, inv_t, mx, sum, row.top_p, sh);
        keep = n < keep ? n + 1 : keep;
        if (keep < 1) keep = 1;
    }
    if (row.min_p > 0.0) {
        // Sorted descending, so the candidates at least min_p * q0 are a prefix: count them.
        const double floor = row.min_p * cand_prob(key, 0, inv_t, mx, sum);
        double cnt = 0.0;
        for (int64_t i = 1 + threadIdx.x; i < keep; i += kChooseThreads)
            cnt += cand_prob(key, i, inv_t, mx, sum) >= floor ? 1.0 : 0.0;
        const double c = Reduce(sh.cub.reduce).Sum(cnt);
        if (threadIdx.x == 0) sh.total = c;
        __syncthreads();
        keep = 1 + static_cast<int64_t>(sh.total);
        __syncthreads();
    }
    double kept = 0.0;
    for (int64_t i = threadIdx.x; i < keep; i += kChooseThreads)
        kept += cand_prob(key, i, inv_t, mx, sum);
    const double k = Reduce(sh.cub.reduce).Sum(kept);
    if (threadIdx.x == 0) sh.total = k;
    __syncthreads();
    const double target = row.uniform * sh.total;
    __syncthreads();
    const int64_t at = first_prefix_over<true>(key, keep, inv_t, mx, sum, target, sh);
    if (threadIdx.x == 0) tokens[rows[j]] = val[at < keep ? at : keep - 1];
}

}  // namespace

void apply_edits(float* logits, int64_t rows, int64_t vocab, const SampleRow* meta,
                 const LogitEdit* edits, int64_t first, int64_t count, cudaStream_t s) {
    if (rows > 0 && count > 0)
        apply_edits_kernel<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, s>>>(
            logits, rows, vocab, meta, edits, first, count);
}

void apply_token_masks(float* logits, int64_t rows, int64_t vocab, const SampleRow* meta,
                       const uint32_t* masks, int32_t words, cudaStream_t s) {
    if (rows <= 0 || words <= 0) return;
    const dim3 grid(static_cast<unsigned>((words + 127) / 128), static_cast<unsigned>(rows));
    apply_token_masks_kernel<<<grid, 128, 0, s>>>(logits, vocab, meta, masks, words);
}

size_t sort_workspace_bytes(int64_t m, int64_t vocab) {
    size_t cub_bytes = 0;
    cub::DeviceSegmentedRadixSort::SortPairsDescending(
        nullptr, cub_bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
        static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), int(m * vocab),
        int(m), static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(nullptr));
    const size_t n = static_cast<size_t>(m * vocab);
    // Five arrays, each start rounded up to 256 bytes, then CUB's own space.
    return 2 * n * sizeof(float) + 2 * n * sizeof(int32_t) + (m + 1) * sizeof(int32_t) + 256 * 6 +
           cub_bytes;
}

cudaError_t sample_sorted(const float* logits, int64_t vocab, const int32_t* rows, int64_t m,
                          const SampleRow* meta, int32_t* tokens, void* workspace, size_t bytes,
                          cudaStream_t s) {
    if (m <= 0) return cudaSuccess;
    const size_t n = static_cast<size_t>(m * vocab);
    auto* p = static_cast<uint8_t*>(workspace);
    auto take = [&](size_t b) {
        void* q = p;
        p += (b + 255) / 256 * 256;
        return q;
    };
    auto* keys_in = static_cast<float*>(take(n * sizeof(float)));
    auto* keys_out = static_cast<float*>(take(n * sizeof(float)));
    auto* vals_in = static_cast<int32_t*>(take(n * sizeof(int32_t)));
    auto* vals_out = static_cast<int32_t*>(take(n * sizeof(int32_t)));
    auto* offsets = static_cast<int32_t*>(take((m + 1) * sizeof(int32_t)));
    size_t cub_bytes = bytes - static_cast<size_t>(p - static_cast<uint8_t*>(workspace));
    gather_sort_input_kernel<<<dim3(static_cast<unsigned>(
                                        (vocab + 1023) / 1024 < 64 ? (vocab + 1023) / 1024 : 64),
                                    static_cast<unsigned>(m)),
                               256, 0, s>>>(logits, vocab, rows, m, keys_in, vals_in, offsets);
    const cudaError_t e = cub::DeviceSegmentedRadixSort::SortPairsDescending(
        p, cub_bytes, keys_in, keys_out, vals_in, vals_out, int(n), int(m), offsets, offsets + 1, 0,
        32, s);
    if (e != cudaSuccess) return e;
    choose_kernel<<<static_cast<unsigned>(m), kChooseThreads, 0, s>>>(keys_out, vals_out, vocab,
                                                                      rows, nullptr, meta, tokens);
    return cudaGetLastError();
}

void choose_among_sorted(const float* keys, const int32_t* vals, int64_t count,
                         const int32_t* slots, const int32_t* rows, int64_t m,
                         const SampleRow* meta, int32_t* tokens, cudaStream_t s) {
    if (m > 0)
        choose_kernel<<<static_cast<unsigned>(m), kChooseThreads, 0, s>>>(keys, vals, count, rows,
                                                                          slots, meta, tokens);
}

}  // namespace myriad::cuda
