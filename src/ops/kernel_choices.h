// Every choice the CUDA backend makes between kernels, as one value (issue 26, item 1): computed
// from the GPU (compute capability, multiprocessors, memory) and a rank's shapes after the
// Layout's sharding (heads, latent widths, experts and their rows, vocabulary slice) and
// formats, before any weight is read; overridden by one variable, MYRIAD_KERNELS
// ("field=value,field=value"); read by the dispatchers (CudaOps holds it and passes it to the
// launchers of ops/cuda/kernels.h); printed at start as the kernel plan (ops/kernel_plan.h).
//
// The dispatchers still decide per call on the call's own shape (rows of a step, rows an expert,
// alignment of a matrix); every threshold they compare it with is a field here.
//
// This header is plain C++17 with no other header of the project: the CUDA sources include it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace myriad {

// The GPU, as the choices need it (cuda_device_info fills it: ops/backend.h).
struct GpuInfo {
    std::string name;     // "NVIDIA H200"
    int cc = 0;           // compute capability, major * 10 + minor (90 for sm_90)
    int index = 0;        // which GPU of the machine (the messages name it)
    uint64_t memory = 0;  // total bytes of its memory (0: unknown)
    int sms = 0;          // multiprocessors (132 on the H200; 0: unknown, taken as 132)
};

// One rank's shapes, after the Layout's sharding (kernel_shapes in engine/device_choice.h
// makes them from a ModelConfig and a Layout). Zero: not known (a test's backend); the choices
// then hold their defaults and the printed lines leave the shape out.
struct KernelShapes {
    int64_t hidden = 0;         // hidden_size
    int64_t heads = 0;          // attention heads on this rank
    int64_t latent = 0;         // kv_lora_rank: the latent cache's width, and the values'
    int64_t rope = 0;           // qk_rope_head_dim
    int64_t experts = 0;        // routed experts a token chooses among
    int64_t local_experts = 0;  // of which this rank holds (all, unless expert-parallel)
    int64_t top_k = 0;          // num_experts_per_tok
    int64_t expert_rows = 0;    // intermediate rows of one routed expert on this rank
    int64_t vocab = 0;          // this rank's slice of the vocabulary (lm_head rows)
    // The checkpoint's linear formats.
    bool bf16 = false, fp8_block = false, nvfp4 = false, int4 = false, gguf = false;
    // The latent cache's elements: 4 F32, 2 BF16, 1 FP8 e4m3.
    int kv_bytes = 2;
};

// The kernels' versions a field chooses among. Auto: the default rule of that field.
enum class KernelVariant : int32_t { Auto = 0, V1 = 1, V2 = 2, V3 = 3 };

struct KernelChoices {
    // ---- modes (tests and comparisons) ----
    // F32 activations throughout: every linear through the skinny kernel (no BF16 rounding of
    // inputs for cuBLASLt or the tensor cores), the low part of dense quantised weights kept,
    // F32 on the collectives' wire. For the differential tests against the CPU, where a BF16
    // rounding could flip a near-tie. Off: prefill is several times slower with it.
    bool exact = false;
    // Decode steps captured once per batch size and replayed as CUDA graphs (one launch instead
    // of hundreds). On; off for an op observer that copies inside a step, and for per-op timing.
    bool graphs = true;
    // Wait for the stream after every op, so that a failing kernel is named by its op (slow).
    bool sync = false;
    // Each op waited for and timed, the costliest printed when the backend ends (graphs off).
    bool profile = false;
    // Programmatic dependent launch (pdl.cuh): a kernel starts while the one before it ends.
    // On from sm_90 (3.69 -> 3.31 ms a Moonlight batch-1 step, bench/README.md, sixth session);
    // older GPUs have no such launch.
    bool pdl = true;

    // ---- linears ----
    // Tokens up to which a linear runs the register-dequantising skinny kernel (F32 inputs,
    // bandwidth-bound) instead of cuBLASLt on BF16 inputs (tensor cores). 16: the skinny
    // kernel's largest row pass; cuBLASLt's tiles are mostly idle below it.
    int64_t skinny_rows = 16;
    // The skinny kernel: V2 (16-byte loads, K split over lanes, x staged in shared memory) for
    // tiles of up to four rows and dense products up to 16 rows, where the matrices allow it;
    // V1 for everything else. V1 forces the first version throughout (tests run both). V2 took
    // NVFP4 experts' gate+up from 30.0 to 17.2 us and down from 22.4 to 10.6 at batch 1.
    KernelVariant skinny = KernelVariant::V2;
    // The first skinny version's single weight load a lane before use (U = 1, 16-row passes)
    // instead of four (BF16) or eight (quantised) loads in flight. Off; kept to compare, as no
    // A/B at equal graph settings was recorded (bench/README.md, first CUDA session).
    bool skinny_single_load = false;
    // A skinny product of more than four rows with fewer column blocks times 16-row passes than
    // this runs passes of four rows (more blocks): twice the multiprocessors, so that narrow
    // products (the router's 64 columns at batch 64: 38 -> 11.5 us) fill the GPU.
    int64_t narrow_product_blocks = 2 * 132;
    // A dense product of at most 16 rows through v2 with fewer column blocks than this, and K
    // of several rounds (2,048 BF16 elements a round), splits K over up to skinny_max_split
    // blocks (the last to finish adds the shares in a fixed order): twice the multiprocessors.
    // Kimi-K2's replicated kv_a (576 x 7168) at TP 8 ran 72 blocks, each through four rounds,
    // and the rank's BF16 products went at 18 % of the copy rate. 0: never split.
    int64_t skinny_split_blocks = 2 * 132;
    int64_t skinny_max_split = 8;
    // ...but a product whose blocks already fill the multiprocessors (at least gpu.sms) splits
    // only when a block runs at least this many rounds: Moonlight's shared gate+up (176 blocks,
    // two rounds) gained nothing from the split but the join, and batch 1 went 3.2 % slower.
    int64_t skinny_split_full_rounds = 3;

    // ---- routed experts ----
    // The tensor cores (BF16 inputs) take the routed experts past this many rows an expert...
    int64_t moe_mma_rows = 4;
    // ...or from this many tokens a step: the skinny kernel's 4-row tiles took 222 + 155 us a
    // layer at batch 32 of Moonlight (3 rows an expert), the tensor cores' 16-row tiles 128 + 78.
    int64_t moe_mma_tokens = 8;
    // The tensor-core experts kernel: V2 (cp.async K steps ahead; 4-5x faster: batch 64 gate+up
    // 674.7 -> 132.9 us) where the matrices allow it, V1 (64-row tiles) elsewhere; V1 forces it.
    KernelVariant grouped_mma = KernelVariant::V2;
    // V2's tile height: 16 rows up to this mean of rows an expert, 64 above.
    int64_t mma_short_tile_rows = 16;
    // The experts' grouping by expert in one single-block kernel where it fits (3.7 us against
    // about 7 for a memset and three kernels at batch 1); false keeps the four launches.
    bool moe_sort_fused = true;

    // ---- attention ----
    // Prefill (naive form): V2, 32 query rows of one head a block through shared memory (5.5x
    // faster at pp512: 901.8 -> 163.4 us a layer) where the shape allows it, else V1 (a block
    // per row and head); V1 forces the first.
    KernelVariant prefill_attention = KernelVariant::V2;
    // Absorbed decode attention: V2 (CUDA cores, a block per row, head and split) or V3 (tensor
    // cores, 16 heads a block; a BF16 cache only, other caches run V2). Auto: V3 from
    // decode_mma_blocks blocks of 16 heads a step, else V2.
    KernelVariant decode_attention = KernelVariant::Auto;
    // Blocks (query rows x groups of 16 heads) from which Auto takes V3: 2. At batch 1 of
    // Moonlight V3's 16 blocks took 10.9 us a layer against V2's 9.0 over 256; at batch 2 V3
    // gave 501 tok/s against 475; at batch 64 29.6 + 4.1 us against 234.
    int64_t decode_mma_blocks = 2;
    // ...or from this many tokens of context (the step's longest sequence) at any batch: V2 runs
    // a block per head and split, so each head reads the latent cache again, where V3 reads it
    // once for 16 heads. Moonlight, batch 1 (bench-model, H200): V2 -> V3 at 512 tokens 2.90 ->
    // 2.94 ms a step, at 8,192 4.78 -> 3.80, at 32,768 10.61 -> 6.33. A captured graph is keyed
    // by this too (CudaOps::decode_key), so replays keep the choice of their context.
    int64_t decode_long_context = 2048;
    // V2's threads a block: 0 chooses 256 while the (row, head) pairs are fewer than
    // decode_wide_pairs and 128 from there; 128 or 256 forces it (tests run both).
    int decode_threads = 0;
    // The multiprocessors: eight warps halve each warp's share of a tile where blocks are few
    // (batch 1: 297 -> 244 us a step), four fit more blocks where they are many (batch 64).
    int64_t decode_wide_pairs = 132;
    // V2's key splits aim at this many blocks (rows x heads x splits): four a multiprocessor.
    int64_t decode_split_blocks = 4 * 132;
    // V3's splits aim at this many blocks: two a multiprocessor (two fit in shared memory at
    // Moonlight's and Kimi's shape).
    int64_t decode_mma_split_blocks = 2 * 132;
    // The most splits of one (row, head): the join kernels take up to 32.
    int64_t decode_max_splits = 32;

    // ---- what they were computed from ----
    GpuInfo gpu;
    KernelShapes shapes;
    // The overrides applied, as given ("exact=1,graphs=0"); empty: none.
    std::string overrides;

    // The defaults for this GPU and these shapes (no override).
    static KernelChoices choose(const GpuInfo& gpu, const KernelShapes& shapes);

    // Applies "field=value,field=value" (`source` names where it came from in errors: the
    // variable). Bad input naming the field, or the value and the ones it takes, for an unknown
    // field or a bad value; on error nothing is changed.
    void apply_overrides(const std::string& spec, const std::string& source = "MYRIAD_KERNELS");

    // choose() with the overrides of MYRIAD_KERNELS, if set.
    static KernelChoices from_environment(const GpuInfo& gpu, const KernelShapes& shapes = {});

    // The lines printed at start: one per format, routed experts, attention, routing, and the
    // overrides when there are any.
    std::vector<std::string> lines() const;

    // Derived rules the dispatchers and the lines share.
    // Whether the tensor cores take the routed experts of a step of `tokens` tokens with
    // `mean_rows` rows an expert that has any.
    bool moe_tensor_cores(int64_t tokens, int64_t mean_rows) const {
        return !exact && (mean_rows > moe_mma_rows || tokens >= moe_mma_tokens);
    }
    // Whether decode attention over `rows` query rows of `heads` heads, the longest sequence
    // `context` tokens, takes version 3 (when the cache and shape allow it).
    bool decode_v3(int64_t rows, int64_t heads, int64_t context = 0) const {
        if (decode_attention == KernelVariant::V3) return true;
        if (decode_attention != KernelVariant::Auto) return false;
        return rows * ((heads + 15) / 16) >= decode_mma_blocks || decode_long(context);
    }
    // Whether a step whose longest sequence has `context` tokens counts as long for decode
    // attention (decode_long_context; 0: never).
    bool decode_long(int64_t context) const {
        return decode_long_context > 0 && context >= decode_long_context;
    }
    // Version 2's threads a block for `pairs` (row, head) pairs.
    int decode_v2_threads(int64_t pairs) const {
        if (decode_threads != 0) return decode_threads;
        return pairs < decode_wide_pairs ? 256 : 128;
    }
    // Tokens up to which linears take the skinny kernel (every step in exact mode).
    int64_t skinny_limit() const { return exact ? INT64_MAX : skinny_rows; }
};

// The fields MYRIAD_KERNELS takes, in order, for errors and documentation.
std::vector<std::string> kernel_choice_fields();

}  // namespace myriad
