// The kernels of peer_collectives.h.
#include <cuda_bf16.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "parallel/cuda/peer_collectives.h"

namespace myriad::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;  // elements of one vector

__device__ __forceinline__ uint64_t now_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ uint32_t load_volatile(const uint32_t* p) {
    return *reinterpret_cast<const volatile uint32_t*>(p);
}

// Block b's round number: read by thread 0 (never from a cache another SM may have left stale).
__device__ __forceinline__ uint32_t begin_round(const PeerView& v) {
    __shared__ uint32_t e;
    if (threadIdx.x == 0) e = load_volatile(v.epoch + blockIdx.x) + 1;
    __syncthreads();
    return e;
}

__device__ __forceinline__ void end_round(const PeerView& v, uint32_t e) {
    if (threadIdx.x == 0) *reinterpret_cast<volatile uint32_t*>(v.epoch + blockIdx.x) = e;
}

// Every thread's writes of this block reach every peer before flag[phase][b] says e.
__device__ __forceinline__ void publish(const PeerView& v, int phase, uint32_t e) {
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0)
        *reinterpret_cast<volatile uint32_t*>(v.flags[v.rank] + phase * kPeerBlocks + blockIdx.x) =
            e;
}

// Waits for flag `f` (of rank `peer`) to reach e, within the bound; false (recorded once) when
// the wait gave up.
__device__ __forceinline__ bool wait_flag(const PeerView& v, const uint32_t* f, int peer, int phase,
                                          uint32_t e, int op) {
    uint32_t seen = load_volatile(f);
    if (static_cast<int32_t>(seen - e) >= 0) return true;
    const uint64_t start = now_ns();
    while (static_cast<int32_t>((seen = load_volatile(f)) - e) < 0) {
        if (now_ns() - start > v.timeout_ns) {
            if (atomicCAS(&v.failure->failed, 0u, 1u) == 0u) {
                v.failure->rank = v.rank;
                v.failure->peer = peer;
                v.failure->phase = phase;
                v.failure->expected = e;
                v.failure->seen = seen;
                v.failure->op = op;
                __threadfence_system();
            }
            return false;
        }
    }
    return true;
}

// Thread r < world waits for rank r's flag[phase][b] to reach e (within the bound). False for
// the whole block once any wait gave up (the failure is recorded once).
__device__ __forceinline__ bool wait_all(const PeerView& v, int phase, uint32_t e, int op) {
    bool ok = true;
    if (threadIdx.x < v.world)
        ok = wait_flag(v, v.flags[threadIdx.x] + phase * kPeerBlocks + blockIdx.x,
                       static_cast<int>(threadIdx.x), phase, e, op);
    __threadfence_system();
    return __syncthreads_and(ok) != 0;
}

// The same for the flag[phase] of every block of every rank: a block that reads vectors other
// blocks wrote (whole rows, for the norm) waits for all of them.
__device__ __forceinline__ bool wait_every_block(const PeerView& v, int phase, uint32_t e, int op) {
    bool ok = true;
    for (int t = static_cast<int>(threadIdx.x); ok && t < v.world * kPeerBlocks;
         t += static_cast<int>(blockDim.x))
        ok = wait_flag(v, v.flags[t / kPeerBlocks] + phase * kPeerBlocks + t % kPeerBlocks,
                       t / kPeerBlocks, phase, e, op);
    __threadfence_system();
    return __syncthreads_and(ok) != 0;
}

struct F8 {
    float x[kVec];
};

__device__ __forceinline__ F8 load_input(const float* in, int64_t base, int64_t n, bool aligned) {
    F8 r;
    if (aligned && base + kVec <= n) {
        const float4 a = *reinterpret_cast<const float4*>(in + base);
        const float4 b = *reinterpret_cast<const float4*>(in + base + 4);
        r.x[0] = a.x, r.x[1] = a.y, r.x[2] = a.z, r.x[3] = a.w;
        r.x[4] = b.x, r.x[5] = b.y, r.x[6] = b.z, r.x[7] = b.w;
    } else {
        for (int i = 0; i < kVec; ++i) r.x[i] = base + i < n ? in[base + i] : 0.0f;
    }
    return r;
}

// Vector `vec` of a wire buffer: BF16 (16 bytes) or F32 (32 bytes).
__device__ __forceinline__ void store_wire(uint8_t* buf, int64_t vec, const F8& f, bool bf16) {
    if (bf16) {
        uint4 w;
        __nv_bfloat162 p[4];
        for (int i = 0; i < 4; ++i) p[i] = __floats2bfloat162_rn(f.x[2 * i], f.x[2 * i + 1]);
        memcpy(&w, p, sizeof(w));
        reinterpret_cast<uint4*>(buf)[vec] = w;
    } else {
        float4* d = reinterpret_cast<float4*>(buf) + 2 * vec;
        d[0] = make_float4(f.x[0], f.x[1], f.x[2], f.x[3]);
        d[1] = make_float4(f.x[4], f.x[5], f.x[6], f.x[7]);
    }
}

__device__ __forceinline__ void add_wire(const uint8_t* buf, int64_t vec, F8& acc, bool bf16) {
    if (bf16) {
        const uint4 w = __ldcv(reinterpret_cast<const uint4*>(buf) + vec);
        __nv_bfloat162 p[4];
        memcpy(p, &w, sizeof(w));
        for (int i = 0; i < 4; ++i) {
            const float2 t = __bfloat1622float2(p[i]);
            acc.x[2 * i] += t.x;
            acc.x[2 * i + 1] += t.y;
        }
    } else {
        const float4* s = reinterpret_cast<const float4*>(buf) + 2 * vec;
        const float4 a = __ldcv(s), b = __ldcv(s + 1);
        acc.x[0] += a.x, acc.x[1] += a.y, acc.x[2] += a.z, acc.x[3] += a.w;
        acc.x[4] += b.x, acc.x[5] += b.y, acc.x[6] += b.z, acc.x[7] += b.w;
    }
}

__device__ __forceinline__ void store_output(float* out, int64_t base, int64_t n, const F8& f,
                                             bool aligned) {
    if (aligned && base + kVec <= n) {
        *reinterpret_cast<float4*>(out + base) = make_float4(f.x[0], f.x[1], f.x[2], f.x[3]);
        *reinterpret_cast<float4*>(out + base + 4) = make_float4(f.x[4], f.x[5], f.x[6], f.x[7]);
    } else {
        for (int i = 0; i < kVec; ++i)
            if (base + i < n) out[base + i] = f.x[i];
    }
}

// Block b's vectors of a round of `nv` vectors: v = b + kPeerBlocks * k, k = thread + kThreads*j.
#define FOR_BLOCK_VECTORS(v, nv)                                                \
    for (int64_t v = blockIdx.x + int64_t{kPeerBlocks} * threadIdx.x; v < (nv); \
         v += int64_t{kPeerBlocks} * kThreads)

__global__ void __launch_bounds__(kThreads)
    all_reduce_kernel(PeerView view, const float* in, float* out, int64_t n, bool bf16,
                      bool two_shot, bool aligned) {
    const uint32_t e = begin_round(view);
    const int parity = static_cast<int>(e & 1u);
    const size_t half = view.data_bytes;
    const int64_t nv = (n + kVec - 1) / kVec;
    uint8_t* own = view.data[view.rank] + parity * half;
    FOR_BLOCK_VECTORS(v, nv) store_wire(own, v, load_input(in, v * kVec, n, aligned), bf16);
    publish(view, 0, e);
    if (!wait_all(view, 0, e, kPeerAllReduce)) {
        end_round(view, e);
        return;
    }
    if (!two_shot) {
        FOR_BLOCK_VECTORS(v, nv) {
            F8 acc = {};
            for (int r = 0; r < view.world; ++r)
                add_wire(view.data[r] + parity * half, v, acc, bf16);
            store_output(out, v * kVec, n, acc, aligned);
        }
        end_round(view, e);
        return;
    }
    // Two-shot: this rank's segment of vectors [seg * rank, seg * (rank + 1)).
    const int64_t seg = (nv + view.world - 1) / view.world;
    float* own_sums = view.sums[view.rank] + parity * view.sum_floats;
    FOR_BLOCK_VECTORS(v, nv) {
        if (v / seg != view.rank) continue;
        F8 acc = {};
        for (int r = 0; r < view.world; ++r) add_wire(view.data[r] + parity * half, v, acc, bf16);
        float4* d = reinterpret_cast<float4*>(own_sums) + 2 * v;
        d[0] = make_float4(acc.x[0], acc.x[1], acc.x[2], acc.x[3]);
        d[1] = make_float4(acc.x[4], acc.x[5], acc.x[6], acc.x[7]);
    }
    publish(view, 1, e);
    if (!wait_all(view, 1, e, kPeerAllReduce)) {
        end_round(view, e);
        return;
    }
    FOR_BLOCK_VECTORS(v, nv) {
        const int owner = static_cast<int>(v / seg);
        const float4* s =
            reinterpret_cast<const float4*>(view.sums[owner] + parity * view.sum_floats) + 2 * v;
        const float4 a = __ldcv(s), b = __ldcv(s + 1);
        const F8 f = {{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
        store_output(out, v * kVec, n, f, aligned);
    }
    end_round(view, e);
}

// The norm's sum over the block, in the order of the ops' block_sum (ops/cuda/device_util.cuh):
// a butterfly within each warp, then the warps' sums by the first warp, so the fused kernel's
// norm has the bits of the unfused add_rmsnorm.
__device__ __forceinline__ float norm_block_sum(float v) {
    __shared__ float part[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    float total = lane < static_cast<int>(blockDim.x) / 32 ? part[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
    return total;
}

// All-reduce of y [rows, d], then h += sum and (w set) x = rmsnorm(h) * w. Rounds and flags as
// all_reduce_kernel; each block then takes whole rows (row = b, b + kPeerBlocks, ...), so it
// waits for every block's flag. A row's sums are added to h in vectors of 8 (d % 8 == 0) and kept
// in shared memory; the norm then runs over i = thread, thread + kThreads, ... in the order of
// the ops' norm kernels, which makes its bits theirs. One-shot: every rank does every row.
// Two-shot: rank r does rows [seg * r, seg * (r + 1)) into its sums buffer ([n] of h, then [n]
// of x), publishes them (flag[1]), and every rank copies each row from its owner.
__global__ void __launch_bounds__(kThreads)
    all_reduce_add_rmsnorm_kernel(PeerView view, const float* y, float* h, const void* w,
                                  bool w_bf16, int64_t rows, int64_t d, float eps, float* x,
                                  bool bf16, bool two_shot) {
    extern __shared__ float row_v[];  // [d]
    const uint32_t e = begin_round(view);
    const int parity = static_cast<int>(e & 1u);
    const size_t half = view.data_bytes;
    const int64_t n = rows * d, nv = n / kVec, dv = d / kVec;
    uint8_t* own = view.data[view.rank] + parity * half;
    FOR_BLOCK_VECTORS(v, nv) store_wire(own, v, load_input(y, v * kVec, n, true), bf16);
    publish(view, 0, e);
    if (!wait_every_block(view, 0, e, kPeerAllReduce)) {
        end_round(view, e);
        return;
    }
    const int64_t seg = two_shot ? (rows + view.world - 1) / view.world : rows;
    const int64_t first = two_shot ? seg * view.rank : 0;
    const int64_t last = first + seg < rows ? first + seg : rows;
    float* own_sums = view.sums[view.rank] + parity * view.sum_floats;
    float* out_h = two_shot ? own_sums : h;
    float* out_x = two_shot ? own_sums + n : x;
    for (int64_t row = first + blockIdx.x; row < last; row += kPeerBlocks) {
        for (int64_t k = threadIdx.x; k < dv; k += kThreads) {
            const int64_t vec = row * dv + k;
            F8 acc = {};
            for (int r = 0; r < view.world; ++r)
                add_wire(view.data[r] + parity * half, vec, acc, bf16);
            F8 sum = load_input(h, vec * kVec, n, true);
            for (int i = 0; i < kVec; ++i) {
                sum.x[i] += acc.x[i];
                row_v[k * kVec + i] = sum.x[i];
            }
            store_output(out_h, vec * kVec, n, sum, true);
        }
        if (!w) continue;  // the plain residual add (the last layer's)
        __syncthreads();
        float ss = 0.0f;
        for (int64_t i = threadIdx.x; i < d; i += kThreads) ss += row_v[i] * row_v[i];
        ss = norm_block_sum(ss);
        const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
        float* xr = out_x + row * d;
        for (int64_t i = threadIdx.x; i < d; i += kThreads) {
            const float g =
                w_bf16 ? __bfloat162float(__ushort_as_bfloat16(static_cast<const uint16_t*>(w)[i]))
                       : static_cast<const float*>(w)[i];
            xr[i] = g * (row_v[i] * inv);
        }
        __syncthreads();  // row_v is the next row's
    }
    if (two_shot) {
        publish(view, 1, e);
        if (!wait_every_block(view, 1, e, kPeerAllReduce)) {
            end_round(view, e);
            return;
        }
        FOR_BLOCK_VECTORS(v, nv) {
            const int owner = static_cast<int>(v / dv / seg);
            const float4* src =
                reinterpret_cast<const float4*>(view.sums[owner] + parity * view.sum_floats) +
                2 * v;
            float4 a = __ldcv(src), b = __ldcv(src + 1);
            store_output(h, v * kVec, n, F8{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}}, true);
            if (!w) continue;
            a = __ldcv(src + n / 4);
            b = __ldcv(src + n / 4 + 1);
            store_output(x, v * kVec, n, F8{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}}, true);
        }
    }
    end_round(view, e);
}

__global__ void __launch_bounds__(kThreads)
    gather_columns_kernel(PeerView view, const float* in, float* out, int64_t rows, int64_t cols,
                          bool aligned) {
    const uint32_t e = begin_round(view);
    const int parity = static_cast<int>(e & 1u);
    const size_t half = view.data_bytes;
    const int64_t n = rows * cols, nv = (n + kVec - 1) / kVec;
    uint8_t* own = view.data[view.rank] + parity * half;
    FOR_BLOCK_VECTORS(v, nv) store_wire(own, v, load_input(in, v * kVec, n, aligned), false);
    publish(view, 0, e);
    if (!wait_all(view, 0, e, kPeerGatherColumns)) {
        end_round(view, e);
        return;
    }
    const int64_t width = cols * view.world;
    FOR_BLOCK_VECTORS(v, nv) {
        for (int r = 0; r < view.world; ++r) {
            F8 f = {};
            add_wire(view.data[r] + parity * half, v, f, false);
            for (int i = 0; i < kVec; ++i) {
                const int64_t idx = v * kVec + i;
                if (idx >= n) break;
                out[(idx / cols) * width + r * cols + idx % cols] = f.x[i];
            }
        }
    }
    end_round(view, e);
}

__global__ void probe_kernel(PeerProbes probes, int world, int rank, uint32_t value) {
    for (int p = static_cast<int>(threadIdx.x); p < world; p += static_cast<int>(blockDim.x))
        *reinterpret_cast<volatile uint32_t*>(probes.slot[p] + rank) =
            value ^ static_cast<uint32_t>(p);
    __threadfence_system();
}

bool is_aligned(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

int64_t peer_round_elems(const PeerView& v, bool bf16_wire) {
    // Whole vectors that fit the input buffer and (two-shot) the sums.
    const int64_t by_data = static_cast<int64_t>(v.data_bytes) / (bf16_wire ? 2 : 4);
    const int64_t by_sums = static_cast<int64_t>(v.sum_floats);
    return std::min(by_data, by_sums) / kVec * kVec;
}

void peer_all_reduce(const PeerView& v, PeerAlgo algo, const float* in, float* out, int64_t n,
                     bool bf16_wire, cudaStream_t stream) {
    const int64_t round = peer_round_elems(v, bf16_wire);
    for (int64_t begin = 0; begin < n; begin += round) {
        const int64_t len = std::min(round, n - begin);
        all_reduce_kernel<<<kPeerBlocks, kThreads, 0, stream>>>(
            v, in + begin, out + begin, len, bf16_wire, algo == PeerAlgo::TwoShot,
            is_aligned(in + begin) && is_aligned(out + begin));
    }
}

bool peer_fuses_add_rmsnorm(const PeerView& v, PeerAlgo algo, int64_t rows, int64_t d,
                            bool bf16_wire) {
    const int64_t n = rows * d;
    return rows >= 1 && d >= kVec && d % kVec == 0 && d <= kPeerFusedMaxWidth &&
           n <= peer_round_elems(v, bf16_wire) &&
           (algo == PeerAlgo::OneShot || 2 * n <= static_cast<int64_t>(v.sum_floats));
}

void peer_all_reduce_add_rmsnorm(const PeerView& v, PeerAlgo algo, const float* y, float* h,
                                 const void* w, bool w_bf16, int64_t rows, int64_t d, float eps,
                                 float* x, bool bf16_wire, cudaStream_t stream) {
    all_reduce_add_rmsnorm_kernel<<<kPeerBlocks, kThreads, sizeof(float) * d, stream>>>(
        v, y, h, w, w_bf16, rows, d, eps, x, bf16_wire, algo == PeerAlgo::TwoShot);
}

void peer_gather_columns(const PeerView& v, const float* in, float* out, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
    const int64_t round_rows = std::max<int64_t>(
        1, static_cast<int64_t>(v.data_bytes / sizeof(float)) / std::max<int64_t>(cols, 1));
    const int64_t width = cols * v.world;
    for (int64_t r0 = 0; r0 < rows; r0 += round_rows) {
        const int64_t nr = std::min(round_rows, rows - r0);
        gather_columns_kernel<<<kPeerBlocks, kThreads, 0, stream>>>(
            v, in + r0 * cols, out + r0 * width, nr, cols, is_aligned(in + r0 * cols));
    }
}

void peer_load_kernels() {
    // cudaFuncGetAttributes loads the function (and its module) where loading is lazy.
    cudaFuncAttributes a;
    const void* kernels[] = {reinterpret_cast<const void*>(&all_reduce_kernel),
                             reinterpret_cast<const void*>(&all_reduce_add_rmsnorm_kernel),
                             reinterpret_cast<const void*>(&gather_columns_kernel),
                             reinterpret_cast<const void*>(&probe_kernel)};
    for (const void* k : kernels) {
        const cudaError_t e = cudaFuncGetAttributes(&a, k);
        if (e != cudaSuccess)
            throw std::runtime_error(
                std::string("collectives: loading the all-reduce kernels failed: ") +
                cudaGetErrorString(e) +
                " (a build for another GPU architecture? `make release` builds for Hopper and "
                "Blackwell)");
    }
}

void peer_probe(const PeerProbes& probes, int world, int rank, uint32_t value,
                cudaStream_t stream) {
    probe_kernel<<<1, 32, 0, stream>>>(probes, world, rank, value);
}

}  // namespace myriad::cuda
