// MLA prefill attention (the naive form), second version: tiles of query rows against tiles of
// keys through shared memory, F32 on the CUDA cores. The first version (attention_kernel in
// attention_kernels.cu) gives each (query row, head) a block that reads every key row from
// memory again, 2.7 GB of L2 traffic per Moonlight layer at 512 tokens; here a block takes 32
// rows of one sequence and one head, and each key row it loads serves all 32.
#include <algorithm>
#include <atomic>

#include "ops/cuda/device_util.cuh"
#include "ops/cuda/kernels.h"

namespace myriad::cuda {

namespace {

constexpr int kRows = 32;  // query rows per block (one per lane of warp 0 for the positions)
constexpr int kKeys = 32;  // keys per tile
constexpr int kThreads = 128;
constexpr int kRowGroups = 16, kKeyGroups = 8;  // thread (tr, tc): rows 2tr, 2tr + 1 ...
constexpr int kRowsPer = kRows / kRowGroups;    // ... and keys tc + 8j, j < 4
constexpr int kKeysPer = kKeys / kKeyGroups;
constexpr int kProbLd = kKeys + 4;  // 9 float4 a row: the four rows a warp reads hit other banks
constexpr int64_t kSmemMax = 227 * 1024;  // sm_90's opt-in limit per block
static_assert(kRowGroups * kKeyGroups == kThreads && kRows == kWarp, "thread layout");

// Shared memory (floats): the query tile [kRows][ld], the key tile [kKeys][ld] (nope ++ rope),
// the value tile [kKeys][dv] and the probabilities [kRows][kProbLd]. `ld` is dq rounded so that
// ld / 4 is odd: the eight keys (or rows) a warp reads as float4 then fall in distinct banks.
struct PrefillLayout {
    int32_t ld = 0;
    int64_t key_off = 0, value_off = 0, prob_off = 0, bytes = 0;
};

PrefillLayout prefill_layout(int64_t dq, int64_t dv) {
    PrefillLayout L;
    L.ld = static_cast<int32_t>((dq / 4) % 2 == 0 ? dq + 4 : dq);
    L.key_off = int64_t(kRows) * L.ld;
    L.value_off = L.key_off + int64_t(kKeys) * L.ld;
    L.prob_off = L.value_off + int64_t(kKeys) * dv;
    L.bytes = (L.prob_off + int64_t(kRows) * kProbLd) * int64_t(sizeof(float));
    return L;
}

// Block (x, sequence seq_begin + y, head z) takes query tile tiles - 1 - x of its sequence (the
// longest tiles first; x past the sequence's tiles exits). Thread (tr, tc) computes the scores
// of rows 2tr + i against keys tc + 8j of each key tile and keeps the outputs of the same rows,
// value quads tc + 8g (g < VQ): the running max and sum of a row stay in its eight threads.
// The key tile of step k + 1 loads while step k's softmax and values run, the value tile while
// its scores run (cp.async groups: Q + K0, V0, then K and V alternately).
template <int VQ, bool Full>  // Full: dv == 32 VQ, every quad held
__global__ void __launch_bounds__(kThreads)
    prefill_attention_kernel(AttnArgs a, StepView st, PrefillLayout L) {
    extern __shared__ float4 smem4[];
    float* const sm = reinterpret_cast<float*>(smem4);
    float* const qs = sm;
    float* const ks = sm + L.key_off;
    float* const vs = sm + L.value_off;
    float* const ps = sm + L.prob_off;
    __shared__ int n_keys_s;

    const int64_t s = a.seq_begin + blockIdx.y, h = blockIdx.z;
    const int64_t q_len = st.q_len[s];
    const int64_t tile = (q_len + kRows - 1) / kRows - 1 - int64_t(blockIdx.x);
    if (tile < 0) return;  // the whole block: no barrier is skipped
    const int64_t row0 = st.q_begin[s] + tile * kRows;
    const int rows = static_cast<int>(q_len - tile * kRows < kRows ? q_len - tile * kRows : kRows);
    const int64_t ctx_base = st.ctx_prefix[s] - st.ctx_prefix[a.seq_begin];
    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
    const int tr = tid / kKeyGroups, tc = tid % kKeyGroups;
    const int ld = L.ld, dq = static_cast<int>(a.dq), dv = static_cast<int>(a.dv);
    const int nope4 = static_cast<int>(a.nope / 4), dq4 = dq / 4, dv4 = dv / 4;

    // Keys 0..max position of the tile's rows (causal); a row sees keys 0..its position. Rows
    // past the sequence take the first row's position: finite scores, never stored.
    if (warp == 0) {
        const int p = lane < rows ? st.positions[row0 + lane] : 0;
        const int mx = __reduce_max_sync(0xffffffffu, p);
        if (lane == 0) n_keys_s = mx + 1;
    }
    int pos[kRowsPer];
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
        const int r = kRowsPer * tr + i;
        pos[i] = st.positions[row0 + (r < rows ? r : 0)];
    }
    __syncthreads();
    // A piece of the context (a.lse set): keys [ctx_begin, min(max position + 1, ctx_end)), the
    // piece's first key in kv row 0 (one sequence: ctx_base is 0); maybe none. Key index k below
    // is position c0 + k.
    const bool piece = a.lse != nullptr;
    const int64_t c0 = piece ? a.ctx_begin : 0;
    const int64_t n = piece ? (n_keys_s < a.ctx_end ? n_keys_s : a.ctx_end) - c0 : n_keys_s;
    // No row of the tile sees a key of the piece (the whole block returns).
    if (piece && n <= 0) {
        if (a.accumulate) return;  // out and lse stand
        for (int i = tid; i < rows * dv4; i += kThreads)
            *reinterpret_cast<float4*>(a.out + ((row0 + i / dv4) * a.heads + h) * a.dv +
                                       4 * (i % dv4)) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (tid < rows) a.lse[(tile * kRows + tid) * a.heads + h] = -INFINITY;
        return;
    }

    // Warp w copies rows w, w + 4, ...; lane c the row's float4 c, c + 32, ...; rows past the
    // sequence's rows or the tile's keys are zeroed (a zero value row times a zero probability
    // stays zero, as stale bits might not: NaN).
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = warp; i < kRows; i += kThreads / kWarp) {
        const float* src = a.q + ((row0 + i) * a.heads + h) * a.dq;
        for (int c = lane; c < dq4; c += kWarp) {
            float* dst = qs + i * ld + 4 * c;
            if (i < rows)
                cp_async16(dst, src + 4 * c);
            else
                *reinterpret_cast<float4*>(dst) = zero;
        }
    }
    const int64_t kv_width = a.nope + a.dv;
    auto copy_keys = [&](int64_t t0, int64_t cnt) {
        for (int j = warp; j < kKeys; j += kThreads / kWarp) {
            const int64_t c = ctx_base + t0 + j;
            const float* kn = a.kv + (c * a.heads + h) * kv_width;
            const float* kr = a.k_rot + c * a.dr;
            for (int v = lane; v < dq4; v += kWarp) {
                float* dst = ks + j * ld + 4 * v;
                if (j < cnt)
                    cp_async16(dst, v < nope4 ? kn + 4 * v : kr + 4 * (v - nope4));
                else
                    *reinterpret_cast<float4*>(dst) = zero;
            }
        }
    };
    auto copy_values = [&](int64_t t0, int64_t cnt) {
        for (int j = warp; j < kKeys; j += kThreads / kWarp) {
            const float* src = a.kv + ((ctx_base + t0 + j) * a.heads + h) * kv_width + a.nope;
            for (int v = lane; v < dv4; v += kWarp) {
                float* dst = vs + j * dv + 4 * v;
                if (j < cnt)
                    cp_async16(dst, src + 4 * v);
                else
                    *reinterpret_cast<float4*>(dst) = zero;
            }
        }
    };
    copy_keys(0, n < kKeys ? n : kKeys);
    cp_async_commit();
    copy_values(0, n < kKeys ? n : kKeys);
    cp_async_commit();

    float m[kRowsPer], l[kRowsPer];
    float4 acc[kRowsPer][VQ];
#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
#pragma unroll
        for (int g = 0; g < VQ; ++g) acc[i][g] = zero;
    }
    // The earlier pieces' normalised output with their log-sum-exp as the running max: the
    // running sum is then 1, held by the row's first thread (the others' partial sums are 0).
    if (piece && a.accumulate) {
#pragma unroll
        for (int i = 0; i < kRowsPer; ++i) {
            const int r = kRowsPer * tr + i;
            if (r >= rows) continue;
            const float carried = a.lse[(tile * kRows + r) * a.heads + h];
            if (carried == -INFINITY) continue;
            m[i] = carried;
            l[i] = tc == 0 ? 1.0f : 0.0f;
            const float* o = a.out + ((row0 + r) * a.heads + h) * a.dv;
#pragma unroll
            for (int g = 0; g < VQ; ++g) {
                const int qd = tc + kKeyGroups * g;
                if (Full || qd < dv4) acc[i][g] = *reinterpret_cast<const float4*>(o + 4 * qd);
            }
        }
    }

    for (int64_t t0 = 0; t0 < n; t0 += kKeys) {
        const int64_t cnt = n - t0 < kKeys ? n - t0 : kKeys;
        const int64_t next = t0 + kKeys, next_cnt = n - next < kKeys ? n - next : kKeys;
        cp_async_wait<1>();  // the keys (and, first, the queries): all but the value group
        __syncthreads();

        float sc[kRowsPer][kKeysPer];
#pragma unroll
        for (int i = 0; i < kRowsPer; ++i)
#pragma unroll
            for (int j = 0; j < kKeysPer; ++j) sc[i][j] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < dq; d += 4) {
            float4 qv[kRowsPer], kv[kKeysPer];
#pragma unroll
            for (int i = 0; i < kRowsPer; ++i)
                qv[i] = *reinterpret_cast<const float4*>(qs + (kRowsPer * tr + i) * ld + d);
#pragma unroll
            for (int j = 0; j < kKeysPer; ++j)
                kv[j] = *reinterpret_cast<const float4*>(ks + (tc + kKeyGroups * j) * ld + d);
#pragma unroll
            for (int i = 0; i < kRowsPer; ++i)
#pragma unroll
                for (int j = 0; j < kKeysPer; ++j) {
                    float x = sc[i][j];
                    x = fmaf(qv[i].x, kv[j].x, x);
                    x = fmaf(qv[i].y, kv[j].y, x);
                    x = fmaf(qv[i].z, kv[j].z, x);
                    x = fmaf(qv[i].w, kv[j].w, x);
                    sc[i][j] = x;
                }
        }
        __syncthreads();  // every warp is done with the key tile
        if (next < n) copy_keys(next, next_cnt);
        cp_async_commit();  // (maybe empty: one group per tile keeps wait_group<1> right)

        // Online softmax: the row's max over its eight threads; the sum stays partial per
        // thread (every thread of a row rescales by the same factors) until the end.
#pragma unroll
        for (int i = 0; i < kRowsPer; ++i) {
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < kKeysPer; ++j) {
                const int64_t key = t0 + tc + kKeyGroups * j;
                sc[i][j] = key < n && c0 + key <= pos[i] ? sc[i][j] * a.scale : -INFINITY;
                mx = fmaxf(mx, sc[i][j]);
            }
#pragma unroll
            for (int o = kKeyGroups / 2; o > 0; o >>= 1)
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            // Whole sequences: key 0 is in every row's first tile, so m_new is finite from the
            // first tile on. A piece's row may have seen no key yet: m_new -inf, and exponents
            // taken from 0 instead (corr and p are 0 then, not NaN).
            const float m_new = fmaxf(m[i], mx);
            const float m_base = m_new == -INFINITY ? 0.0f : m_new;
            const float corr = expf(m[i] - m_base);
            m[i] = m_new;
            float sum = 0.0f;
            float* prow = ps + (kRowsPer * tr + i) * kProbLd;
#pragma unroll
            for (int j = 0; j < kKeysPer; ++j) {
                const float p = expf(sc[i][j] - m_base);
                sum += p;
                prow[tc + kKeyGroups * j] = p;
            }
            l[i] = l[i] * corr + sum;
#pragma unroll
            for (int g = 0; g < VQ; ++g) {
                acc[i][g].x *= corr;
                acc[i][g].y *= corr;
                acc[i][g].z *= corr;
                acc[i][g].w *= corr;
            }
        }
        cp_async_wait<1>();  // the values: all but the next key group
        __syncthreads();     // and every row's probabilities

        const int kend = static_cast<int>((cnt + 3) / 4 * 4);  // rows past cnt: zero, p = 0
        for (int k = 0; k < kend; k += 4) {
            float4 pv[kRowsPer];
#pragma unroll
            for (int i = 0; i < kRowsPer; ++i)
                pv[i] = *reinterpret_cast<const float4*>(ps + (kRowsPer * tr + i) * kProbLd + k);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                const float* vrow = vs + (k + kk) * dv;
#pragma unroll
                for (int g = 0; g < VQ; ++g) {
                    const int qd = tc + kKeyGroups * g;
                    if (!Full && qd >= dv4) continue;
                    const float4 v = *reinterpret_cast<const float4*>(vrow + 4 * qd);
#pragma unroll
                    for (int i = 0; i < kRowsPer; ++i) {
                        const float p =
                            kk == 0 ? pv[i].x : (kk == 1 ? pv[i].y : (kk == 2 ? pv[i].z : pv[i].w));
                        acc[i][g].x = fmaf(p, v.x, acc[i][g].x);
                        acc[i][g].y = fmaf(p, v.y, acc[i][g].y);
                        acc[i][g].z = fmaf(p, v.z, acc[i][g].z);
                        acc[i][g].w = fmaf(p, v.w, acc[i][g].w);
                    }
                }
            }
        }
        __syncthreads();  // every warp is done with the value tile and the probabilities
        if (next < n) copy_values(next, next_cnt);
        cp_async_commit();
    }

#pragma unroll
    for (int i = 0; i < kRowsPer; ++i) {
        float sum = l[i];
#pragma unroll
        for (int o = kKeyGroups / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        const int r = kRowsPer * tr + i;
        if (r >= rows) continue;
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // (a piece's row that saw no key: 0)
        if (piece && tc == 0)
            a.lse[(tile * kRows + r) * a.heads + h] = sum > 0.0f ? m[i] + logf(sum) : -INFINITY;
        float* o = a.out + ((row0 + r) * a.heads + h) * a.dv;
#pragma unroll
        for (int g = 0; g < VQ; ++g) {
            const int qd = tc + kKeyGroups * g;
            if (!Full && qd >= dv4) continue;
            *reinterpret_cast<float4*>(o + 4 * qd) = make_float4(
                acc[i][g].x * inv, acc[i][g].y * inv, acc[i][g].z * inv, acc[i][g].w * inv);
        }
    }
}

template <int VQ, bool Full>
void launch(const AttnArgs& a, const StepView& st, const PrefillLayout& L, dim3 grid,
            cudaStream_t s) {
    // Above 48 KB the kernel must opt in, to the bytes it asks (the limit counts its static
    // shared memory too: asking for all 227 KB is refused); the shared-memory carveout is asked
    // at its largest so that three blocks (70 KB each at Moonlight's shape) share a
    // multiprocessor.
    static std::atomic<int64_t> opted_by_device[kMaxDevices];  // 0: 48 KB, the default
    std::atomic<int64_t>& opted = opted_by_device[device_slot()];
    if (L.bytes > 48 * 1024 && L.bytes > opted.load()) {
        cudaFuncSetAttribute(prefill_attention_kernel<VQ, Full>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(L.bytes));
        cudaFuncSetAttribute(prefill_attention_kernel<VQ, Full>,
                             cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared);
        opted.store(L.bytes);
    }
    prefill_attention_kernel<VQ, Full>
        <<<grid, kThreads, static_cast<size_t>(L.bytes), s>>>(a, st, L);
}

bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

bool attention_prefill(const AttnArgs& a, const StepView& st, int64_t seqs, int64_t max_q_len,
                       cudaStream_t s) {
    // 16-byte copies and stores: every row and segment a whole number of float4.
    if (a.dq % 4 != 0 || a.nope % 4 != 0 || a.dr % 4 != 0 || a.dv % 4 != 0 || a.dv <= 0 ||
        a.dv > 4 * kKeyGroups * 8 || !aligned16(a.q) || !aligned16(a.kv) || !aligned16(a.k_rot) ||
        !aligned16(a.out))
        return false;
    const PrefillLayout L = prefill_layout(a.dq, a.dv);
    if (L.bytes + 1024 > kSmemMax) return false;  // (and the static n_keys_s)
    if (seqs <= 0 || max_q_len <= 0) return true;
    const int64_t tiles = (max_q_len + kRows - 1) / kRows;
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(seqs),
                    static_cast<unsigned>(a.heads));
    const int64_t quads = a.dv / 4;
    if (quads <= 4 * kKeyGroups) {
        if (quads == 4 * kKeyGroups)
            launch<4, true>(a, st, L, grid, s);
        else
            launch<4, false>(a, st, L, grid, s);
    } else {
        if (quads == 8 * kKeyGroups)
            launch<8, true>(a, st, L, grid, s);
        else
            launch<8, false>(a, st, L, grid, s);
    }
    return true;
}

}  // namespace myriad::cuda
