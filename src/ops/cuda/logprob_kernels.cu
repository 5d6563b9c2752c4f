// Logprobs at chosen rows (prompt logprobs; ops/logprob_rows.h is the reference): one block per
// row walks its logits three times — the max, the sum of exponentials in double, and each
// thread's own best top_n — then top_n rounds of a block-wide argmax over the threads' heads
// pick the row's best. Only the target's logprob and the top_n pairs leave the device.
#include <cub/block/block_reduce.cuh>

#include <climits>

#include "ops/cuda/kernels.h"

namespace myriad::cuda {

namespace {

constexpr int kLogprobThreads = 256;
constexpr int kMaxTop = 20;  // kMaxTopLogprobs (ops/logprob_rows.h)

// A candidate: higher logit first, then lower id (INT_MAX: none).
struct Cand {
    float v;
    int id;
};

struct BetterCand {
    __device__ __forceinline__ Cand operator()(const Cand& a, const Cand& b) const {
        if (a.id == INT_MAX) return b;
        if (b.id == INT_MAX) return a;
        return (b.v > a.v || (b.v == a.v && b.id < a.id)) ? b : a;
    }
};

struct MaxF {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

using ReduceF = cub::BlockReduce<float, kLogprobThreads>;
using ReduceD = cub::BlockReduce<double, kLogprobThreads>;
using ReduceC = cub::BlockReduce<Cand, kLogprobThreads>;

struct LogprobShared {
    union {
        typename ReduceF::TempStorage f;
        typename ReduceD::TempStorage d;
        typename ReduceC::TempStorage c;
    } cub;
    float max;
    double lse;
    Cand winner;
};

// Row i's column c sits at ((c / shard) * n + i) * shard + c % shard; a thread visits its
// columns in increasing order (slice by slice), which keeps its own ties in id order.
__global__ void __launch_bounds__(kLogprobThreads)
    logprob_rows_kernel(const float* logits, int64_t slices, int64_t n, int64_t shard,
                        int64_t width, const int32_t* targets, int64_t top_n, float* target,
                        int32_t* top_ids, float* top) {
    __shared__ LogprobShared sh;
    const int64_t i = blockIdx.x;
    auto at = [&](int64_t c) { return logits[((c / shard) * n + i) * shard + c % shard]; };

    float m = -INFINITY;
    for (int64_t r = 0; r < slices; ++r) {
        const float* row = logits + (r * n + i) * shard;
        for (int64_t j = threadIdx.x; j < shard && r * shard + j < width; j += kLogprobThreads)
            m = fmaxf(m, row[j]);
    }
    const float bm = ReduceF(sh.cub.f).Reduce(m, MaxF());
    if (threadIdx.x == 0) sh.max = bm;
    __syncthreads();
    m = sh.max;

    // Each thread's best top_n, sorted (higher first; an equal value comes later with a higher
    // id, so it goes after the ones it ties).
    float v[kMaxTop];
    int id[kMaxTop];
    int cnt = 0;
    const int k = static_cast<int>(top_n);
    double sum = 0.0;
    for (int64_t r = 0; r < slices; ++r) {
        const float* row = logits + (r * n + i) * shard;
        for (int64_t j = threadIdx.x; j < shard && r * shard + j < width; j += kLogprobThreads) {
            const float x = row[j];
            sum += exp(double(x) - m);
            if (k == 0 || (cnt == k && !(x > v[k - 1]))) continue;
            int pos = cnt < k ? cnt++ : k - 1;
            while (pos > 0 && v[pos - 1] < x) {
                v[pos] = v[pos - 1];
                id[pos] = id[pos - 1];
                --pos;
            }
            v[pos] = x;
            id[pos] = static_cast<int>(r * shard + j);
        }
    }
    __syncthreads();  // the union's float storage is reused
    const double bs = ReduceD(sh.cub.d).Sum(sum);
    if (threadIdx.x == 0) sh.lse = double(m) + log(bs);
    __syncthreads();
    const double lse = sh.lse;
    if (threadIdx.x == 0) {
        const int32_t t = targets[i];
        target[i] = t >= 0 && t < width ? static_cast<float>(double(at(t)) - lse) : -INFINITY;
    }

    // top_n rounds: the best head among the threads wins and its thread moves to its next.
    int head = 0;
    for (int j = 0; j < k; ++j) {
        const Cand mine = head < cnt ? Cand{v[head], id[head]} : Cand{-INFINITY, INT_MAX};
        const Cand best = ReduceC(sh.cub.c).Reduce(mine, BetterCand());
        if (threadIdx.x == 0) sh.winner = best;
        __syncthreads();
        const Cand w = sh.winner;
        if (head < cnt && w.id == id[head]) ++head;
        if (threadIdx.x == 0) {
            top_ids[i * top_n + j] = w.id == INT_MAX ? -1 : w.id;
            top[i * top_n + j] =
                w.id == INT_MAX ? -INFINITY : static_cast<float>(double(w.v) - lse);
        }
        __syncthreads();  // sh.winner and the reduce storage are reused by the next round
    }
}

}  // namespace

void logprob_rows(const float* logits, int64_t slices, int64_t n, int64_t shard, int64_t vocab,
                  const int32_t* targets, int64_t top_n, float* target, int32_t* top_ids,
                  float* top, cudaStream_t s) {
    if (n <= 0) return;
    const int64_t width = vocab < slices * shard ? vocab : slices * shard;
    logprob_rows_kernel<<<static_cast<unsigned>(n), kLogprobThreads, 0, s>>>(
        logits, slices, n, shard, width, targets, top_n, target, top_ids, top);
}

}  // namespace myriad::cuda
