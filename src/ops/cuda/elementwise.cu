// Element-wise and per-row kernels: embedding, RMSNorm, add, SiLU-mul, row gathers, argmax.
#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/pdl.cuh"

namespace myriad::cuda {

namespace {

__global__ void fill_kernel(float* p, int64_t n, float v) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        p[i] = v;
}

__global__ void to_bf16_kernel(const float* x, uint16_t* y, int64_t n) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        y[i] = f32_to_bf16_bits(x[i]);
}

__global__ void embed_kernel(const void* table, bool bf16, int64_t rows, int64_t hidden,
                             const int32_t* ids, int64_t vocab_begin, float* out) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    const int64_t t = blockIdx.x;
    const int64_t row = ids[t] - vocab_begin;
    float* dst = out + t * hidden;
    const bool held = row >= 0 && row < rows;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
        float v = 0.0f;
        if (held)
            v = bf16 ? bf16_bits_to_f32(static_cast<const uint16_t*>(table)[row * hidden + i])
                     : static_cast<const float*>(table)[row * hidden + i];
        dst[i] = v;
    }
}

__device__ __forceinline__ float weight_at(const void* w, bool bf16, int64_t i) {
    return bf16 ? bf16_bits_to_f32(static_cast<const uint16_t*>(w)[i])
                : static_cast<const float*>(w)[i];
}

// The norms read a row's elements kNormBatch at a time into registers before using any: the
// stores between the loads (the residual's, or `out`, which may alias `x`) otherwise keep the
// compiler from overlapping them, and each element costs a full memory latency in turn. A
// thread's partial sum still runs over i = tid, tid + blockDim, ... in that order.
constexpr int kNormBatch = 4;

// Writes w[i] * (x[i] * inv) for the row, each thread its own elements.
__device__ __forceinline__ void scale_row(const float* xr, const void* w, bool bf16, int64_t d,
                                          float inv, float* o) {
    for (int64_t base = threadIdx.x; base < d; base += kNormBatch * int64_t(blockDim.x)) {
        float v[kNormBatch], g[kNormBatch];
#pragma unroll
        for (int j = 0; j < kNormBatch; ++j) {
            const int64_t i = base + j * int64_t(blockDim.x);
            v[j] = i < d ? xr[i] : 0.0f;
            g[j] = i < d ? weight_at(w, bf16, i) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < kNormBatch; ++j) {
            const int64_t i = base + j * int64_t(blockDim.x);
            if (i < d) o[i] = g[j] * (v[j] * inv);
        }
    }
}

// The sum of squares of a row's elements, each thread over i = tid, tid + blockDim, ... in
// that order, then across the block. With yr (the fused residual add) the elements are
// xr[i] + yr[i], and are stored at sum[i] (the row of x itself).
__device__ __forceinline__ float row_sum_squares(const float* xr, const float* yr, float* sum,
                                                 int64_t d) {
    float ss = 0.0f;
    for (int64_t base = threadIdx.x; base < d; base += kNormBatch * int64_t(blockDim.x)) {
        float v[kNormBatch];
#pragma unroll
        for (int j = 0; j < kNormBatch; ++j) {
            const int64_t i = base + j * int64_t(blockDim.x);
            v[j] = i < d ? (yr ? xr[i] + yr[i] : xr[i]) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < kNormBatch; ++j) {
            const int64_t i = base + j * int64_t(blockDim.x);
            if (i < d) {
                if (sum) sum[i] = v[j];
                ss += v[j] * v[j];
            }
        }
    }
    return block_sum(ss);
}

// One block per row. `out` may alias `x`: every thread reads its elements before the
// reduction's barriers and writes after them.
__global__ void rmsnorm_kernel(const float* x, const void* w, bool bf16, int64_t d, float eps,
                               float* out) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    const float* xr = x + blockIdx.x * d;
    const float ss = row_sum_squares(xr, nullptr, nullptr, d);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
    scale_row(xr, w, bf16, d, inv, out + blockIdx.x * d);
}

// One block per row: the residual add, then the norm of the sum, with rmsnorm_kernel's
// summation order (so the result equals add then rmsnorm bit for bit).
__global__ void add_rmsnorm_kernel(float* x, const float* y, const void* w, bool bf16, int64_t d,
                                   float eps, float* out) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    float* xr = x + blockIdx.x * d;
    const float ss = row_sum_squares(xr, y + blockIdx.x * d, xr, d);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
    scale_row(xr, w, bf16, d, inv, out + blockIdx.x * d);
}

// Rows of at most kNormThreads * P elements (the decode path's norms), held in registers: the
// norm's weights are loaded before waiting for the previous kernel (they are constants), and
// the row's elements in one round of loads, after which the block only reduces and stores. A
// decode step's norm then costs one memory round trip where the loops above took four (CUPTI
// timeline, H200, batch 1: 3.5-5.7 us each). The arithmetic, and the order of each thread's
// partial sum, are the loops' (bit for bit the same result).
constexpr int kNormThreads = 256;
template <int P, bool Add>
__global__ void __launch_bounds__(kNormThreads)
    norm_row_kernel(float* x, const float* y, const void* w, bool bf16, int64_t d, float eps,
                    float* out) {
    float g[P];
#pragma unroll
    for (int j = 0; j < P; ++j) {
        const int64_t i = threadIdx.x + int64_t(j) * kNormThreads;
        g[j] = i < d ? weight_at(w, bf16, i) : 0.0f;
    }
    pdl_wait();  // launched early (launch_pdl, pdl.cuh); the weights are constants
    pdl_launch_dependents();
    float* xr = x + blockIdx.x * d;
    float v[P];
#pragma unroll
    for (int j = 0; j < P; ++j) {
        const int64_t i = threadIdx.x + int64_t(j) * kNormThreads;
        if constexpr (Add)
            v[j] = i < d ? xr[i] + y[blockIdx.x * d + i] : 0.0f;
        else
            v[j] = i < d ? xr[i] : 0.0f;
    }
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < P; ++j) {
        const int64_t i = threadIdx.x + int64_t(j) * kNormThreads;
        if (i < d) {
            if constexpr (Add) xr[i] = v[j];
            ss += v[j] * v[j];
        }
    }
    ss = block_sum(ss);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
    float* o = out + blockIdx.x * d;
#pragma unroll
    for (int j = 0; j < P; ++j) {
        const int64_t i = threadIdx.x + int64_t(j) * kNormThreads;
        if (i < d) o[i] = g[j] * (v[j] * inv);
    }
}

// The register kernel for rows that fit P = 8 or 32 elements a thread, else the loops.
template <bool Add>
bool launch_norm_rows(float* x, const float* y, const void* w, bool bf16, int64_t rows, int64_t d,
                      float eps, float* out, cudaStream_t s) {
    if (d <= 8 * kNormThreads)
        launch_pdl(norm_row_kernel<8, Add>, static_cast<unsigned>(rows), kNormThreads, 0, s, x, y,
                   w, bf16, d, eps, out);
    else if (d <= 32 * kNormThreads)
        launch_pdl(norm_row_kernel<32, Add>, static_cast<unsigned>(rows), kNormThreads, 0, s, x, y,
                   w, bf16, d, eps, out);
    else
        return false;
    return true;
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        x[i] += y[i];
}

__global__ void silu_mul_kernel(const float* g, const float* u, float* o, int64_t n) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const float a = g[i];
        o[i] = a / (1.0f + expf(-a)) * u[i];
    }
}

__global__ void gather_rows_kernel(const float* x, int64_t d, const int32_t* rows, float* out) {
    pdl_wait();  // launched early (launch_pdl, pdl.cuh)
    pdl_launch_dependents();
    const float* src = x + int64_t(rows[blockIdx.x]) * d;
    float* dst = out + blockIdx.x * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dst[i] = src[i];
}

// One block per row; the lowest index wins ties, NaN never wins.
__global__ void argmax_kernel(const float* x, int64_t v, int32_t* out) {
    const float* row = x + blockIdx.x * v;
    float best = -INFINITY;
    int64_t idx = -1;
    for (int64_t i = threadIdx.x; i < v; i += blockDim.x) {
        const float f = row[i];
        if (idx < 0 || f > best) {
            if (f == f || idx < 0) {
                best = f;
                idx = i;
            }
        }
    }
    __shared__ float sv[1024];
    __shared__ int64_t si[1024];
    sv[threadIdx.x] = best;
    si[threadIdx.x] = idx;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            const float b = sv[threadIdx.x + stride];
            const int64_t bi = si[threadIdx.x + stride];
            const float a = sv[threadIdx.x];
            const int64_t ai = si[threadIdx.x];
            const bool take =
                bi >= 0 && (ai < 0 || a != a || (b == b && (b > a || (b == a && bi < ai))));
            if (take) {
                sv[threadIdx.x] = b;
                si[threadIdx.x] = bi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int32_t>(si[0] < 0 ? 0 : si[0]);
}

unsigned flat_grid(int64_t n) {
    const int64_t g = (n + 255) / 256;
    return static_cast<unsigned>(g < 1 ? 1 : (g > 65535 ? 65535 : g));
}

}  // namespace

void fill_f32(float* p, int64_t n, float value, cudaStream_t s) {
    if (n > 0) fill_kernel<<<flat_grid(n), 256, 0, s>>>(p, n, value);
}

void f32_to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t s) {
    if (n > 0) to_bf16_kernel<<<flat_grid(n), 256, 0, s>>>(x, y, n);
}

void embed(const void* table, bool table_bf16, int64_t rows, int64_t hidden, const int32_t* ids,
           int64_t vocab_begin, int64_t tokens, float* out, cudaStream_t s) {
    if (tokens > 0)
        launch_pdl(embed_kernel, static_cast<unsigned>(tokens), 256, 0, s, table, table_bf16, rows,
                   hidden, ids, vocab_begin, out);
}

void rmsnorm(const float* x, const void* w, bool w_bf16, int64_t rows, int64_t d, float eps,
             float* out, cudaStream_t s) {
    if (rows > 0 &&
        !launch_norm_rows<false>(const_cast<float*>(x), nullptr, w, w_bf16, rows, d, eps, out, s))
        launch_pdl(rmsnorm_kernel, static_cast<unsigned>(rows), 256, 0, s, x, w, w_bf16, d, eps,
                   out);
}

void add(float* x, const float* y, int64_t n, cudaStream_t s) {
    if (n > 0) launch_pdl(add_kernel, flat_grid(n), 256, 0, s, x, y, n);
}

void add_rmsnorm(float* x, const float* y, const void* w, bool w_bf16, int64_t rows, int64_t d,
                 float eps, float* out, cudaStream_t s) {
    if (rows > 0 && !launch_norm_rows<true>(x, y, w, w_bf16, rows, d, eps, out, s))
        launch_pdl(add_rmsnorm_kernel, static_cast<unsigned>(rows), 256, 0, s, x, y, w, w_bf16, d,
                   eps, out);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t s) {
    if (n > 0) launch_pdl(silu_mul_kernel, flat_grid(n), 256, 0, s, gate, up, out, n);
}

void gather_rows(const float* x, int64_t d, const int32_t* rows, int64_t n, float* out,
                 cudaStream_t s) {
    if (n > 0) launch_pdl(gather_rows_kernel, static_cast<unsigned>(n), 256, 0, s, x, d, rows, out);
}

void argmax(const float* x, int64_t rows, int64_t v, int32_t* out, cudaStream_t s) {
    if (rows > 0) argmax_kernel<<<static_cast<unsigned>(rows), 1024, 0, s>>>(x, v, out);
}

}  // namespace myriad::cuda
