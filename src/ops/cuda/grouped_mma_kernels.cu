// Grouped products on the tensor cores, for the experts of a MoE layer when they have many rows
// (prefill, large decode batches): a block computes a 64 x 64 tile of one expert's output
// (with glu, the gate and the up tile together), staging x rows (F32, rounded to BF16) and the
// expert's weight (expanded from its stored format to BF16) in shared memory 32 columns of K at
// a time, and multiplying with mma.sync m16n8k16 (BF16 in, F32 accumulate; sm_80 and later,
// so the same code runs on Hopper and Blackwell). The register-dequantising kernel of
// linear_kernels.cu did the same work on the CUDA cores at a few TFLOP/s.
#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/quant_load.cuh"

namespace myriad::cuda {

namespace {

constexpr int kBm = 64, kBn = 64, kBk = 32;
constexpr int kPad = 8;  // BF16 elements after each staged row: conflict-free fragment loads
constexpr int kStride = kBk + kPad;
constexpr int kThreads = 128;  // 2 x 2 warps of 32 x 32 outputs

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    return uint32_t(f32_to_bf16_bits(lo)) | (uint32_t(f32_to_bf16_bits(hi)) << 16);
}

__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Stages 16 consecutive K elements of weight row `col` (zeros past the matrix) as BF16.
template <QFormat F>
__device__ __forceinline__ void stage_weight(const QMatrix& w, int64_t col, int64_t n, int64_t k0,
                                             uint16_t* dst) {
    uint4 lo = make_uint4(0, 0, 0, 0), hi = lo;
    if (col < n) {
        float v[8];
        load8<F>(w, col, k0, v);
        lo = make_uint4(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]),
                        pack_bf16(v[6], v[7]));
        load8<F>(w, col, k0 + 8, v);
        hi = make_uint4(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]),
                        pack_bf16(v[6], v[7]));
    }
    reinterpret_cast<uint4*>(dst)[0] = lo;
    reinterpret_cast<uint4*>(dst)[1] = hi;
}

template <QFormat F, bool Glu>
__global__ void __launch_bounds__(kThreads) grouped_mma_kernel(SkinnyArgs a) {
    __shared__ __align__(16) uint16_t xs[kBm * kStride];
    __shared__ __align__(16) uint16_t ws[kBn * kStride];
    __shared__ __align__(16) uint16_t us[Glu ? kBn * kStride : 8];
    if (int64_t(blockIdx.y) >= *a.tile_count) return;
    const int64_t g = a.tiles[2 * blockIdx.y];
    const int64_t r0 = a.tiles[2 * blockIdx.y + 1];
    int64_t rows = a.row_begin[g + 1] - r0;
    if (rows > kBm) rows = kBm;
    const QMatrix w = a.table[g * a.table_stride + a.table_first];
    if (w.codes == nullptr) return;
    QMatrix w_up;
    if constexpr (Glu) w_up = a.table[g * a.table_stride + a.table_first + 1];
    const int64_t col0 = int64_t(blockIdx.x) * kBn;

    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
    const int wm = warp / 2, wn = warp % 2, gid = lane / 4, tig = lane % 4;
    // This thread stages row (tid / 2) of the x tile and of the weight tile, K half (tid % 2).
    const int srow = tid / 2, shalf = tid % 2;
    const float* xrow = nullptr;
    if (srow < rows) {
        const int64_t r = r0 + srow;
        xrow = a.x + (a.x_rows ? int64_t(a.x_rows[r]) : r) * a.ldx;
    }

    float acc[2][4][4], acc_up[Glu ? 2 : 1][4][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                acc[i][j][e] = 0.0f;
                if constexpr (Glu) acc_up[i][j][e] = 0.0f;
            }

    for (int64_t k0 = 0; k0 < a.k; k0 += kBk) {
        const int64_t kk = k0 + shalf * 16;
        {  // x: 16 floats -> BF16
            uint4 lo = make_uint4(0, 0, 0, 0), hi = lo;
            if (xrow) {
                const float4* p = reinterpret_cast<const float4*>(xrow + kk);
                const float4 v0 = p[0], v1 = p[1], v2 = p[2], v3 = p[3];
                lo = make_uint4(pack_bf16(v0.x, v0.y), pack_bf16(v0.z, v0.w), pack_bf16(v1.x, v1.y),
                                pack_bf16(v1.z, v1.w));
                hi = make_uint4(pack_bf16(v2.x, v2.y), pack_bf16(v2.z, v2.w), pack_bf16(v3.x, v3.y),
                                pack_bf16(v3.z, v3.w));
            }
            uint16_t* dst = xs + srow * kStride + shalf * 16;
            reinterpret_cast<uint4*>(dst)[0] = lo;
            reinterpret_cast<uint4*>(dst)[1] = hi;
        }
        stage_weight<F>(w, col0 + srow, a.n, kk, ws + srow * kStride + shalf * 16);
        if constexpr (Glu)
            stage_weight<F>(w_up, col0 + srow, a.n, kk, us + srow * kStride + shalf * 16);
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < kBk; ks += 16) {
            uint32_t af[2][4];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const uint16_t* base = xs + (wm * 32 + i * 16 + gid) * kStride + ks + 2 * tig;
                af[i][0] = *reinterpret_cast<const uint32_t*>(base);
                af[i][1] = *reinterpret_cast<const uint32_t*>(base + 8 * kStride);
                af[i][2] = *reinterpret_cast<const uint32_t*>(base + 8);
                af[i][3] = *reinterpret_cast<const uint32_t*>(base + 8 * kStride + 8);
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int n_off = (wn * 32 + j * 8 + gid) * kStride + ks + 2 * tig;
                const uint32_t b0 = *reinterpret_cast<const uint32_t*>(ws + n_off);
                const uint32_t b1 = *reinterpret_cast<const uint32_t*>(ws + n_off + 8);
#pragma unroll
                for (int i = 0; i < 2; ++i) mma_bf16(acc[i][j], af[i], b0, b1);
                if constexpr (Glu) {
                    const uint32_t u0 = *reinterpret_cast<const uint32_t*>(us + n_off);
                    const uint32_t u1 = *reinterpret_cast<const uint32_t*>(us + n_off + 8);
#pragma unroll
                    for (int i = 0; i < 2; ++i) mma_bf16(acc_up[i][j], af[i], u0, u1);
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int64_t row = wm * 32 + i * 16 + gid + (e >= 2 ? 8 : 0);
                const int64_t col = col0 + wn * 32 + j * 8 + 2 * tig + (e & 1);
                if (row >= rows || col >= a.n) continue;
                float v = acc[i][j][e];
                if constexpr (Glu) v = v / (1.0f + expf(-v)) * acc_up[i][j][e];
                a.out[(r0 + row) * a.ldo + col] = v;
            }
}

template <QFormat F>
void launch(const SkinnyArgs& a, cudaStream_t s) {
    dim3 grid(static_cast<unsigned>((a.n + kBn - 1) / kBn), static_cast<unsigned>(a.max_tiles));
    if (a.glu)
        grouped_mma_kernel<F, true><<<grid, kThreads, 0, s>>>(a);
    else
        grouped_mma_kernel<F, false><<<grid, kThreads, 0, s>>>(a);
}

}  // namespace

bool grouped_mma_fits(const SkinnyArgs& a) {
    return a.tiles && a.table && a.tile_rows == kGroupedMmaRows && a.k % kBk == 0 && a.ldx % 4 == 0;
}

void grouped_mma(QFormat f, const SkinnyArgs& a, cudaStream_t s) {
    if (a.n == 0 || a.max_tiles == 0) return;
    switch (f) {
        case QFormat::Bf16:
            return launch<QFormat::Bf16>(a, s);
        case QFormat::Fp8Block:
            return launch<QFormat::Fp8Block>(a, s);
        case QFormat::Nvfp4:
            return launch<QFormat::Nvfp4>(a, s);
        case QFormat::Int4:
            return launch<QFormat::Int4>(a, s);
    }
}

}  // namespace myriad::cuda
