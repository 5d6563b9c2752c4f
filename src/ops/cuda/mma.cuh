// Tensor-core helpers shared by the kernels that multiply with mma.sync m16n8k16 (BF16 in, F32
// accumulate; sm_80 and later, so the same code runs on Hopper and Blackwell): the product,
// BF16 packing, and ldmatrix loads of fragments from shared memory.
//
// Fragments of m16n8k16 (g = lane / 4, t = lane % 4): A (16 x 16, row-major) a0 = rows g, cols
// 2t, 2t+1; a1 = row g + 8; a2 = cols + 8; a3 = both. B (16 x 8, k x n) b0 = k 2t, 2t+1 of col
// g; b1 = k + 8. C (16 x 8) c0, c1 = row g, cols 2t, 2t+1; c2, c3 = row g + 8.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace myriad::cuda {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a BF16 pair (lo in the low half), rounded to nearest even.
__device__ __forceinline__ uint32_t bf16x2(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// Four 8 x 8 BF16 matrices; lanes 8i..8i+7 give the row addresses (16 bytes each) of matrix i,
// which lands in r[i]. With .trans each thread gets the transposed matrix's elements: for rows
// that are k and columns that are n, the B fragment of mma.
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(row)));
}

}  // namespace myriad::cuda
