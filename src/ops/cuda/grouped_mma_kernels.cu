// Grouped products on the tensor cores, for the experts of a MoE layer when they have many rows
// (prefill, large decode batches): a block computes a 64 x 64 tile of one expert's output
// (with glu, the gate and the up tile together), staging x rows (F32, rounded to BF16) and the
// expert's weight (expanded from its stored format to BF16) in shared memory 32 columns of K at
// a time, and multiplying with mma.sync m16n8k16 (BF16 in, F32 accumulate; sm_80 and later,
// so the same code runs on Hopper and Blackwell). The register-dequantising kernel of
// linear_kernels.cu did the same work on the CUDA cores at a few TFLOP/s.
// Two versions: v1 stages and expands every K step in turn (global latency exposed each step);
// v2 (the default) copies the stored bytes 2-3 K steps ahead with cp.async and expands them
// from shared memory right before the mma, with tiles of 16 rows for decode-size batches.
#include <cuda_bf16.h>

#include <atomic>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/mma.cuh"
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
    if (rows > a.tile_rows) rows = a.tile_rows;  // tiles of fewer rows (v2's) run here too
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

// ---- v2 ----
// A block computes Bm (16 or 64) x 64 outputs (with glu, the gate and the up tile), 128 threads,
// K in steps of 64. Each stage of shared memory holds, for one K step, the x tile as F32 (cp.async
// from the rows, zeros past the tile's rows and past K) and the 64 weight rows' codes and scales
// exactly as stored; `Stages` steps are in flight. Expansion to BF16 happens in registers right
// before the mma.
//
// The K order inside an mma is free as long as x and W agree, so each thread takes 16
// consecutive elements of its weight row per K step (8 bytes of NVFP4/INT4, 16 of FP8, 32 of
// BF16: one shared load, one NVFP4 scale), and the x elements it pairs them with come from 4
// float4 loads of its x rows. Element p = phys(s, r) of the thread's 16 is slot r of sub-step s,
// slots (0, 1) the low register of the mma's k pair (2 tig, 2 tig + 1), slots (2, 3) the high
// one (2 tig + 8, 2 tig + 9); NVFP4 pairs codes i and i + 4 of a 32-bit word (how they expand
// two at a time), the other formats consecutive elements.
namespace v2 {

constexpr int kBk = 64, kBn = 64, kThreads = 128;

template <QFormat F>
constexpr int kCodeBytes = F == QFormat::Bf16 ? 128 : (F == QFormat::Fp8Block ? 64 : 32);
template <QFormat F>
constexpr int kChunkElems = kBk * 16 / kCodeBytes<F>;  // elements per 16 bytes of codes
// Scales staged per weight row and K step: NVFP4 the 4 e4m3 bytes (blocks of 16), FP8 and INT4
// one F32 per 16 elements (blocks of a multiple of 16), BF16 none.
template <QFormat F>
constexpr int kScaleBytes = F == QFormat::Bf16 ? 0 : (F == QFormat::Nvfp4 ? 4 : 16);

template <QFormat F>
__device__ __forceinline__ constexpr int phys(int s, int r) {
    if constexpr (F == QFormat::Nvfp4)
        return 8 * (s / 2) + (s % 2) * 2 + (r & 1) * 4 + (r >> 1);
    else
        return 4 * s + r;
}

// Swizzles of 16-byte chunks, so the fragment loads of a warp hit distinct banks per phase:
// an x row is 16 chunks (rows gid read chunks 4 tig + j), a BF16 code row 8 (chunks 2 tig + h).
__device__ __forceinline__ int swz_x(int row, int c) {
    return c ^ (((c >> 3) & 1) << 1) ^ (row & 1);
}
template <QFormat F>
__device__ __forceinline__ int swz_w(int row, int c) {
    return F == QFormat::Bf16 ? c ^ (row & 1) : c;
}

// Copies `bytes` (0..16) of src and zeros the rest of the 16 at dst.
__device__ __forceinline__ void cp16(void* dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes));
}
__device__ __forceinline__ void cp4(void* dst, const void* src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes));
}

__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
    const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a),
                                     *reinterpret_cast<const __nv_bfloat162*>(&b));
    return *reinterpret_cast<const uint32_t*>(&r);
}

// The 8 B registers (b0, b1 of sub-steps 0..3) of weight row `row` for this thread's 16
// elements, from the staged codes and scales. NVFP4 comes out times 2^-8 (times the global scale
// too, both applied to the accumulator): an E2M1 code under a BF16 mantissa is its value times
// 2^-126 (normal or not), exactly; times the BF16 scale * 2^118 it is the element * 2^-8, exact
// (at most 6 significant bits, far from the range's ends).
template <QFormat F>
__device__ __forceinline__ void weight_frag(const uint8_t* codes, const uint8_t* scales, int row,
                                            int tig, uint32_t b[8]) {
    if constexpr (F == QFormat::Bf16) {
        const uint4 lo = *reinterpret_cast<const uint4*>(codes + swz_w<F>(row, 2 * tig) * 16);
        const uint4 hi = *reinterpret_cast<const uint4*>(codes + swz_w<F>(row, 2 * tig + 1) * 16);
        b[0] = lo.x, b[1] = lo.y, b[2] = lo.z, b[3] = lo.w;
        b[4] = hi.x, b[5] = hi.y, b[6] = hi.z, b[7] = hi.w;
    } else if constexpr (F == QFormat::Fp8Block) {
        const uint4 q = *reinterpret_cast<const uint4*>(codes + tig * 16);
        const float sc = reinterpret_cast<const float*>(scales)[tig];
        const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
                static_cast<__nv_fp8x2_storage_t>(words[i / 2] >> (16 * (i % 2))), __NV_E4M3);
            const float2 f = __half22float2(__half2(h));
            b[i] = bf16x2(f.x * sc, f.y * sc);
        }
    } else if constexpr (F == QFormat::Nvfp4) {
        const uint2 q = *reinterpret_cast<const uint2*>(codes + tig * 8);
        const __half_raw sh =
            __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(scales[tig]), __NV_E4M3);
        const float f = __half2float(__half(sh)) * __uint_as_float((127u + 118u) << 23);
        const uint32_t fac = bf16x2(f, f);
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            const uint32_t word = s < 2 ? q.x : q.y;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const uint32_t t = word >> (4 * ((s % 2) * 2 + h));  // codes i, i + 4
                const uint32_t bits = ((t & 0x00070007u) << 6) | ((t & 0x00080008u) << 12);
                b[2 * s + h] = bf16x2_mul(bits, fac);
            }
        }
    } else {  // Int4: q + 8, element j at bits 4j
        const uint2 q = *reinterpret_cast<const uint2*>(codes + tig * 8);
        const float sc = reinterpret_cast<const float*>(scales)[tig];
        float v[16];
#pragma unroll
        for (int j = 0; j < 16; ++j)
            v[j] = (__uint_as_float(0x4b000000u | (((j < 8 ? q.x : q.y) >> (4 * (j % 8))) & 15u)) -
                    8388616.0f) *
                   sc;
#pragma unroll
        for (int i = 0; i < 8; ++i) b[i] = bf16x2(v[2 * i], v[2 * i + 1]);
    }
}

template <QFormat F, bool Glu, int Bm>
constexpr int stage_bytes() {
    return Bm * kBk * 4 + (Glu ? 2 : 1) * kBn * (kCodeBytes<F> + kScaleBytes<F>);
}

template <QFormat F, bool Glu, int Bm, int Stages>
__global__ void __launch_bounds__(kThreads, Bm == 16 ? 4 : 3) grouped_mma_v2_kernel(SkinnyArgs a) {
    extern __shared__ __align__(16) uint8_t smem[];
    constexpr int kWm = Bm == 64 ? 2 : 1, kWn = 4 / kWm;  // warps over rows, columns
    constexpr int kMi = Bm / kWm / 16, kNj = kBn / kWn / 8;
    constexpr int kMats = Glu ? 2 : 1;
    constexpr int kCB = kCodeBytes<F>, kSB = kScaleBytes<F>, kCE = kChunkElems<F>;
    constexpr int kXBytes = Bm * kBk * 4;
    constexpr int kStage = stage_bytes<F, Glu, Bm>();
    constexpr int kXTasks = Bm * 16 / kThreads;     // 16-byte x chunks per thread
    constexpr int kCpr = kCB / 16;                  // code chunks per weight row
    constexpr int kWTasks = kBn * kCpr / kThreads;  // per matrix and thread
    constexpr int kSTasks = kBn * 4 / kThreads;     // FP8 and INT4 scales, per matrix

    if (int64_t(blockIdx.y) >= *a.tile_count) return;
    const int64_t g = a.tiles[2 * blockIdx.y];
    const int64_t r0 = a.tiles[2 * blockIdx.y + 1];
    int64_t rows64 = a.row_begin[g + 1] - r0;
    const int rows = static_cast<int>(rows64 < Bm ? rows64 : Bm);
    QMatrix w[kMats];
    w[0] = a.table[g * a.table_stride + a.table_first];
    if (w[0].codes == nullptr) return;
    if constexpr (Glu) w[1] = a.table[g * a.table_stride + a.table_first + 1];
    const int64_t col0 = int64_t(blockIdx.x) * kBn;

    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
    const int wm = warp / kWn, wn = warp % kWn, gid = lane / 4, tig = lane % 4;

    // The x rows this thread copies (-1: past the tile): rows (tid / 16) + 8i, chunk tid % 16.
    // Row numbers rather than pointers, for the registers.
    const int xch = tid & 15;
    int32_t xrow[kXTasks];
#pragma unroll
    for (int i = 0; i < kXTasks; ++i) {
        const int row = (tid >> 4) + 8 * i;
        xrow[i] = -1;
        if (row < rows) {
            const int64_t r = r0 + row;
            xrow[i] = a.x_rows ? a.x_rows[r] : static_cast<int32_t>(r);
        }
    }

    auto load_stage = [&](int slot, int64_t k0) {
        uint8_t* st = smem + slot * kStage;
        float* xs = reinterpret_cast<float*>(st);
#pragma unroll
        for (int i = 0; i < kXTasks; ++i) {
            const int row = (tid >> 4) + 8 * i;
            const int64_t kx = k0 + xch * 4;
            const bool ok = xrow[i] >= 0 && kx < a.k;
            cp16(xs + row * kBk + swz_x(row, xch) * 4, ok ? a.x + xrow[i] * a.ldx + kx : a.x,
                 ok ? 16 : 0);
        }
#pragma unroll
        for (int m = 0; m < kMats; ++m) {
            uint8_t* cs = st + kXBytes + m * kBn * kCB;
#pragma unroll
            for (int i = 0; i < kWTasks; ++i) {
                const int id = tid + i * kThreads, row = id / kCpr, ch = id % kCpr;
                const int64_t n = col0 + row, kc = k0 + ch * kCE;
                int64_t valid = n < a.n ? a.k - kc : 0;
                valid = valid < 0 ? 0 : (valid > kCE ? kCE : valid);
                const uint8_t* src =
                    valid ? w[m].codes + n * w[m].row_bytes + kc * 16 / kCE : w[m].codes;
                cp16(cs + row * kCB + swz_w<F>(row, ch) * 16, src,
                     static_cast<int>(valid * 16 / kCE));
            }
            uint8_t* ss = st + kXBytes + kMats * kBn * kCB + m * kBn * kSB;
            if constexpr (F == QFormat::Nvfp4) {
                if (tid < kBn) {
                    const int64_t n = col0 + tid;
                    int64_t valid = n < a.n ? (a.k - k0) / 16 : 0;
                    valid = valid > 4 ? 4 : valid;
                    const uint8_t* src = static_cast<const uint8_t*>(w[m].scales);
                    if (valid) src += n * w[m].scale_stride + k0 / 16;
                    cp4(ss + tid * 4, src, static_cast<int>(valid));
                }
            } else if constexpr (F != QFormat::Bf16) {
#pragma unroll
                for (int i = 0; i < kSTasks; ++i) {
                    const int id = tid + i * kThreads, row = id >> 2, q = id & 3;
                    const int64_t n = col0 + row, kq = k0 + 16 * q;
                    const float* src = static_cast<const float*>(w[m].scales);
                    const bool ok = n < a.n && kq < a.k;
                    if (ok) {
                        const int64_t srow =
                            F == QFormat::Fp8Block ? (n + w[m].row_phase) / w[m].block_rows : n;
                        src += srow * w[m].scale_stride + (kq + w[m].col_phase) / w[m].block_cols;
                    }
                    cp4(ss + (row * 4 + q) * 4, src, ok ? 4 : 0);
                }
            }
        }
    };

    float acc[kMats][kMi][kNj][4];
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int i = 0; i < kMi; ++i)
#pragma unroll
            for (int j = 0; j < kNj; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[m][i][j][e] = 0.0f;

    // Warps (and their 16-row sub-tiles) past the tile's rows skip the products.
    const int wrow0 = wm * kMi * 16;
    const bool warp_live = wrow0 < rows;

    auto compute = [&](int slot) {
        const uint8_t* st = smem + slot * kStage;
        const float* xs = reinterpret_cast<const float*>(st);
        uint32_t af[kMi][4][4];
#pragma unroll
        for (int i = 0; i < kMi; ++i) {
            if (wrow0 + i * 16 >= rows) continue;
            float xa[16], xb[16];
            const int ra = wrow0 + i * 16 + gid, rb = ra + 8;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int c = tig * 4 + j;
                const float4 va =
                    *reinterpret_cast<const float4*>(xs + ra * kBk + swz_x(ra, c) * 4);
                const float4 vb =
                    *reinterpret_cast<const float4*>(xs + rb * kBk + swz_x(rb, c) * 4);
                xa[4 * j] = va.x, xa[4 * j + 1] = va.y, xa[4 * j + 2] = va.z, xa[4 * j + 3] = va.w;
                xb[4 * j] = vb.x, xb[4 * j + 1] = vb.y, xb[4 * j + 2] = vb.z, xb[4 * j + 3] = vb.w;
            }
#pragma unroll
            for (int s = 0; s < 4; ++s) {
                af[i][s][0] = bf16x2(xa[phys<F>(s, 0)], xa[phys<F>(s, 1)]);
                af[i][s][1] = bf16x2(xb[phys<F>(s, 0)], xb[phys<F>(s, 1)]);
                af[i][s][2] = bf16x2(xa[phys<F>(s, 2)], xa[phys<F>(s, 3)]);
                af[i][s][3] = bf16x2(xb[phys<F>(s, 2)], xb[phys<F>(s, 3)]);
            }
        }
#pragma unroll
        for (int j = 0; j < kNj; ++j) {
            const int row = wn * (kBn / kWn) + j * 8 + gid;
#pragma unroll
            for (int m = 0; m < kMats; ++m) {
                uint32_t b[8];
                weight_frag<F>(st + kXBytes + m * kBn * kCB + row * kCB,
                               st + kXBytes + kMats * kBn * kCB + m * kBn * kSB + row * kSB, row,
                               tig, b);
#pragma unroll
                for (int s = 0; s < 4; ++s)
#pragma unroll
                    for (int i = 0; i < kMi; ++i)
                        if (wrow0 + i * 16 < rows)
                            mma_bf16(acc[m][i][j], af[i][s], b[2 * s], b[2 * s + 1]);
            }
        }
    };

    const int64_t ksteps = (a.k + kBk - 1) / kBk;
#pragma unroll
    for (int st = 0; st < Stages - 1; ++st) {
        if (st < ksteps) load_stage(st, int64_t(st) * kBk);
        cp_async_commit();
    }
#pragma unroll 1
    for (int64_t kt = 0; kt < ksteps; ++kt) {
        cp_async_wait<Stages - 2>();  // step kt has landed (this thread's copies)
        __syncthreads();              // everyone's, and everyone is done with step kt - 1's slot
        const int64_t next = kt + Stages - 1;
        if (next < ksteps) load_stage(static_cast<int>(next % Stages), next * kBk);
        cp_async_commit();
        if (warp_live) compute(static_cast<int>(kt % Stages));
    }
    cp_async_wait<0>();

    float fac[kMats];
#pragma unroll
    for (int m = 0; m < kMats; ++m)
        fac[m] = F == QFormat::Nvfp4 ? w[m].global_scale * 256.0f : 1.0f;
#pragma unroll
    for (int i = 0; i < kMi; ++i)
#pragma unroll
        for (int j = 0; j < kNj; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = wrow0 + i * 16 + gid + (e >= 2 ? 8 : 0);
                const int64_t col = col0 + wn * (kBn / kWn) + j * 8 + 2 * tig + (e & 1);
                if (row >= rows || col >= a.n) continue;
                float v = acc[0][i][j][e] * fac[0];
                if constexpr (Glu)
                    v = v / (1.0f + expf(-v)) * (acc[kMats - 1][i][j][e] * fac[kMats - 1]);
                a.out[(r0 + row) * a.ldo + col] = v;
            }
}

template <QFormat F, bool Glu, int Bm, int Stages>
void size_smem() {
    // A failure shows as the launch's error.
    cudaFuncSetAttribute(grouped_mma_v2_kernel<F, Glu, Bm, Stages>,
                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                         Stages * stage_bytes<F, Glu, Bm>());
}
template <QFormat F>
void size_format() {
    size_smem<F, true, 16, 4>();
    size_smem<F, false, 16, 4>();
    size_smem<F, true, 64, 3>();
    size_smem<F, false, 64, 3>();
}
// Every kernel's shared memory limit, once (before any graph capture where the host asks for
// it early: grouped_mma_prepare).
void size_all() {
    static std::atomic<bool> sized[kMaxDevices];  // per device: attributes are the device's
    std::atomic<bool>& done = sized[device_slot()];
    if (done.load()) return;
    size_format<QFormat::Bf16>();
    size_format<QFormat::Fp8Block>();
    size_format<QFormat::Nvfp4>();
    size_format<QFormat::Int4>();
    done.store(true);
}

template <QFormat F, bool Glu, int Bm, int Stages>
void launch_one(const SkinnyArgs& a, cudaStream_t s) {
    size_all();
    dim3 grid(static_cast<unsigned>((a.n + kBn - 1) / kBn), static_cast<unsigned>(a.max_tiles));
    grouped_mma_v2_kernel<F, Glu, Bm, Stages>
        <<<grid, kThreads, Stages * stage_bytes<F, Glu, Bm>(), s>>>(a);
}

template <QFormat F>
void launch(const SkinnyArgs& a, cudaStream_t s) {
    // Decode-size tiles: 4 stages keep more weight bytes in flight per multiprocessor (the
    // weights are the cost there); prefill tiles: 3, for shared memory.
    if (a.tile_rows == 16) {
        if (a.glu)
            launch_one<F, true, 16, 4>(a, s);
        else
            launch_one<F, false, 16, 4>(a, s);
    } else {
        if (a.glu)
            launch_one<F, true, 64, 3>(a, s);
        else
            launch_one<F, false, 64, 3>(a, s);
    }
}

bool fits(const SkinnyArgs& a) {
    return a.tiles && a.table && (a.tile_rows == 16 || a.tile_rows == 64) && a.k > 0 &&
           a.k % 16 == 0 && a.ldx % 4 == 0 && reinterpret_cast<uintptr_t>(a.x) % 16 == 0;
}

}  // namespace v2

}  // namespace

void grouped_mma_prepare() {
    v2::size_all();
}

bool grouped_mma_v2_reads(QFormat f, const QMatrix& w) {
    if (reinterpret_cast<uintptr_t>(w.codes) % 16 != 0 || w.row_bytes % 16 != 0) return false;
    if (f == QFormat::Bf16) return true;
    if (reinterpret_cast<uintptr_t>(w.scales) % 4 != 0) return false;
    if (f == QFormat::Nvfp4)  // the 4 scale bytes of a K step: one aligned 4-byte copy
        return w.block_cols == 16 && w.col_phase == 0 && w.scale_stride % 4 == 0;
    return w.block_cols % 16 == 0 && w.col_phase % 16 == 0 && w.block_rows > 0;
}

int32_t grouped_mma_tile_rows(int64_t mean_rows, bool v2_reads, const KernelChoices& kc) {
    if (kc.grouped_mma == KernelVariant::V1 || !v2_reads) return kGroupedMmaRows;
    return mean_rows <= kc.mma_short_tile_rows ? 16 : 64;
}

bool grouped_mma_fits(const SkinnyArgs& a) {
    return a.tiles && a.table && a.tile_rows > 0 && a.tile_rows <= kGroupedMmaRows &&
           a.k % kBk == 0 && a.ldx % 4 == 0;
}

void grouped_mma(QFormat f, const SkinnyArgs& a, bool v2_reads, const KernelChoices& kc,
                 cudaStream_t s) {
    if (a.n == 0 || a.max_tiles == 0) return;
    const bool use_v2 = kc.grouped_mma != KernelVariant::V1 && v2_reads && v2::fits(a);
    switch (f) {
        case QFormat::Bf16:
            return use_v2 ? v2::launch<QFormat::Bf16>(a, s) : launch<QFormat::Bf16>(a, s);
        case QFormat::Fp8Block:
            return use_v2 ? v2::launch<QFormat::Fp8Block>(a, s) : launch<QFormat::Fp8Block>(a, s);
        case QFormat::Nvfp4:
            return use_v2 ? v2::launch<QFormat::Nvfp4>(a, s) : launch<QFormat::Nvfp4>(a, s);
        case QFormat::Int4:
            return use_v2 ? v2::launch<QFormat::Int4>(a, s) : launch<QFormat::Int4>(a, s);
    }
}

}  // namespace myriad::cuda
