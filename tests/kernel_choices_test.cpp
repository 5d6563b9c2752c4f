// The kernel choices as data (ops/kernel_choices.h): computed from a GPU's properties and a
// rank's shapes after the Layout's sharding (Moonlight at TP 1, Kimi-K2.5 at TP 8), overridden
// by MYRIAD_KERNELS (valid fields, an unknown field, bad values, the replaced variables), and
// printed as the kernel plan's lines.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/device_choice.h"
#include "ops/kernel_choices.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
}

const GpuInfo kH200{"NVIDIA H200", 90, 0, uint64_t{143771} << 20, 132};
const GpuInfo kA100{"NVIDIA A100-SXM4-40GB", 80, 1, uint64_t{40} << 30, 108};

// Moonlight-16B-A3B (moonshotai/Moonlight-16B-A3B-Instruct's config.json).
ModelConfig moonlight() {
    ModelConfig c;
    c.hidden_size = 2048;
    c.num_attention_heads = 16;
    c.kv_lora_rank = 512;
    c.qk_rope_head_dim = 64;
    c.n_routed_experts = 64;
    c.num_experts_per_tok = 6;
    c.moe_intermediate_size = 1408;
    c.vocab_size = 163840;
    return c;
}

// Kimi-K2.5's text model (DeepSeek-V3's shape with 384 experts and 64 heads).
ModelConfig kimi_k25() {
    ModelConfig c;
    c.hidden_size = 7168;
    c.num_attention_heads = 64;
    c.kv_lora_rank = 512;
    c.qk_rope_head_dim = 64;
    c.n_routed_experts = 384;
    c.num_experts_per_tok = 8;
    c.moe_intermediate_size = 2048;
    c.vocab_size = 163840;
    return c;
}

// The bad_input message of `f`, failing the test if it did not throw one.
template <typename F>
std::string bad_input_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), 2) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

TEST(KernelChoices, FromTheGpu) {
    const KernelChoices h = KernelChoices::choose(kH200, {});
    EXPECT_TRUE(h.pdl);
    EXPECT_EQ(h.decode_wide_pairs, 132);
    EXPECT_EQ(h.decode_split_blocks, 4 * 132);
    EXPECT_EQ(h.decode_mma_split_blocks, 2 * 132);
    EXPECT_EQ(h.narrow_product_blocks, 2 * 132);
    EXPECT_EQ(h.skinny_split_blocks, 2 * 132);
    // A smaller GPU: the thresholds that count multiprocessors follow its 108; sm_80 has no
    // early launch.
    const KernelChoices a = KernelChoices::choose(kA100, {});
    EXPECT_FALSE(a.pdl);
    EXPECT_EQ(a.decode_wide_pairs, 108);
    EXPECT_EQ(a.decode_split_blocks, 4 * 108);
    EXPECT_EQ(a.decode_mma_split_blocks, 2 * 108);
    EXPECT_EQ(a.narrow_product_blocks, 2 * 108);
    EXPECT_EQ(a.skinny_split_blocks, 2 * 108);
    EXPECT_EQ(a.gpu.name, kA100.name);
    // What does not depend on the GPU is the same.
    EXPECT_EQ(a.skinny_rows, h.skinny_rows);
    EXPECT_EQ(a.moe_mma_tokens, h.moe_mma_tokens);
    // Unknown multiprocessors: the H200's.
    EXPECT_EQ(KernelChoices::choose(GpuInfo{"?", 90}, {}).decode_wide_pairs, 132);
    // The default is the measured one, not exact mode, and graphs on.
    EXPECT_FALSE(h.exact);
    EXPECT_TRUE(h.graphs);
    EXPECT_EQ(h.skinny, KernelVariant::V2);
    EXPECT_EQ(h.grouped_mma, KernelVariant::V2);
    EXPECT_EQ(h.prefill_attention, KernelVariant::V2);
    EXPECT_EQ(h.decode_attention, KernelVariant::Auto);
}

TEST(KernelChoices, MoonlightAtTp1) {
    const KernelShapes s = kernel_shapes(moonlight(), {WeightFormat::Dense, WeightFormat::Nvfp4},
                                         Layout(), DType::BF16);
    EXPECT_EQ(s.heads, 16);
    EXPECT_EQ(s.expert_rows, 1408);
    EXPECT_EQ(s.local_experts, 64);
    EXPECT_EQ(s.vocab, 163840);
    EXPECT_TRUE(s.bf16 && s.nvfp4 && !s.fp8_block && !s.int4);
    const KernelChoices k = KernelChoices::choose(kH200, s);
    // Decode attention: version 2 at batch 1 (one block of 16 heads), version 3 from batch 2,
    // and at batch 1 too from 2,048 tokens of context.
    EXPECT_FALSE(k.decode_v3(1, 16));
    EXPECT_TRUE(k.decode_v3(2, 16));
    EXPECT_FALSE(k.decode_v3(1, 16, 2047));
    EXPECT_TRUE(k.decode_v3(1, 16, 2048));
    KernelChoices never = k;
    never.apply_overrides("decode_long_context=0");
    EXPECT_FALSE(never.decode_v3(1, 16, 1 << 20));
    // Version 2's eight warps while (row, head) pairs are fewer than the 132 multiprocessors:
    // batch 8 (128 pairs) still, batch 9 (144) not.
    EXPECT_EQ(k.decode_v2_threads(8 * 16), 256);
    EXPECT_EQ(k.decode_v2_threads(9 * 16), 128);
    // Routed experts: the skinny kernel at batch 1 to 7 with one row an expert, the tensor cores
    // from 8 tokens or past 4 rows an expert.
    EXPECT_FALSE(k.moe_tensor_cores(1, 1));
    EXPECT_FALSE(k.moe_tensor_cores(7, 1));
    EXPECT_TRUE(k.moe_tensor_cores(8, 1));
    EXPECT_TRUE(k.moe_tensor_cores(2, 5));
    EXPECT_EQ(k.skinny_limit(), 16);
    const std::string all = joined(k.lines());
    EXPECT_TRUE(has(all,
                    "BF16 linears: skinny kernel (K in up to 8 shares where a product has fewer "
                    "than 264 blocks, from 132 blocks only at 3 rounds or more) up to 16 rows, "
                    "cuBLASLt"))
        << all;
    EXPECT_TRUE(has(all, "NVFP4 linears: dequantised in registers (W4A16) up to 16 rows")) << all;
    EXPECT_FALSE(has(all, "FP8-block")) << all;
    EXPECT_TRUE(has(all,
                    "routed experts (64 here of 64, 1408 rows each, top 6): grouped in one "
                    "block, tensor cores (v2: 16-row tiles up to 16 rows an expert, 64 "
                    "above) past 4 rows an expert or from 8 tokens"))
        << all;
    EXPECT_TRUE(has(all,
                    "latent cache in BF16: version 2 (CUDA cores) below batch 2, version 3 "
                    "(tensor cores, 16 heads a block) from it or from 2048 tokens of context (16 "
                    "heads here)"))
        << all;
    EXPECT_FALSE(has(all, "overrides")) << all;
}

TEST(KernelChoices, KimiK25AtTp8) {
    const ModelConfig c = kimi_k25();
    for (int rank : {0, 3, 7}) {
        SCOPED_TRACE(rank);
        const KernelShapes s = kernel_shapes(c, {WeightFormat::Dense, WeightFormat::Int4Group},
                                             Layout(8, false, rank), DType::BF16);
        EXPECT_EQ(s.heads, 8);
        EXPECT_EQ(s.expert_rows, 256);  // 2048 split over 8
        EXPECT_EQ(s.local_experts, 384);
        EXPECT_EQ(s.vocab, 20480);
        const KernelChoices k = KernelChoices::choose(kH200, s);
        // Eight heads fill half a block of 16: batch 1 is one block (version 2), batch 2 two.
        EXPECT_FALSE(k.decode_v3(1, 8));
        EXPECT_TRUE(k.decode_v3(2, 8));
        const std::string all = joined(k.lines());
        EXPECT_TRUE(has(all, "routed experts (384 here of 384, 256 rows each, top 8)")) << all;
        EXPECT_TRUE(has(all, "INT4 linears")) << all;
        EXPECT_TRUE(has(all, "version 2 (CUDA cores) below batch 2")) << all;
        EXPECT_TRUE(has(all, "(8 heads here)")) << all;
    }
    // Expert-parallel: whole experts, 48 a rank.
    const KernelShapes ep =
        kernel_shapes(c, {WeightFormat::Int4Group}, Layout(8, true, 5), DType::BF16);
    EXPECT_EQ(ep.local_experts, 48);
    EXPECT_EQ(ep.expert_rows, 2048);
    EXPECT_TRUE(has(joined(KernelChoices::choose(kH200, ep).lines()),
                    "routed experts (48 here of 384, 2048 rows each, top 8)"));
    // At TP 1 all 64 heads: four blocks at batch 1, so version 3 from the first row.
    const KernelShapes one = kernel_shapes(c, {WeightFormat::Int4Group}, Layout(), DType::BF16);
    const KernelChoices k1 = KernelChoices::choose(kH200, one);
    EXPECT_TRUE(k1.decode_v3(1, 64));
    EXPECT_TRUE(has(joined(k1.lines()),
                    "version 3 (tensor cores, 16 heads a block) at every batch (64 heads here)"));
}

TEST(KernelChoices, CachesVersion3DoesNotRead) {
    for (DType kv : {DType::F8_E4M3, DType::F32}) {
        const KernelChoices k = KernelChoices::choose(
            kH200, kernel_shapes(moonlight(), {WeightFormat::Fp8Block}, Layout(), kv));
        const std::string all = joined(k.lines());
        EXPECT_TRUE(has(all, "version 2 (CUDA cores) at every batch")) << all;
        EXPECT_TRUE(has(all, kv == DType::F32 ? "cache in F32" : "cache in FP8 e4m3")) << all;
        EXPECT_TRUE(has(all, "FP8-block linears")) << all;
    }
}

TEST(KernelChoices, Overrides) {
    KernelChoices k = KernelChoices::choose(
        kH200, kernel_shapes(moonlight(), {WeightFormat::Dense}, Layout(), DType::BF16));
    k.apply_overrides(
        "exact=1, graphs=0,decode_attention=v3,decode_threads=256,skinny_rows=8,moe_mma_tokens=4,"
        "grouped_mma=v1,prefill_attention=v1,skinny=v1,moe_sort_fused=0,pdl=0");
    EXPECT_TRUE(k.exact);
    EXPECT_FALSE(k.graphs);
    EXPECT_EQ(k.decode_attention, KernelVariant::V3);
    EXPECT_EQ(k.decode_threads, 256);
    EXPECT_EQ(k.skinny_rows, 8);
    EXPECT_EQ(k.moe_mma_tokens, 4);
    EXPECT_EQ(k.grouped_mma, KernelVariant::V1);
    EXPECT_EQ(k.prefill_attention, KernelVariant::V1);
    EXPECT_EQ(k.skinny, KernelVariant::V1);
    EXPECT_FALSE(k.moe_sort_fused);
    EXPECT_FALSE(k.pdl);
    // Exact mode: every linear through the skinny kernel, no tensor cores for the experts.
    EXPECT_EQ(k.skinny_limit(), INT64_MAX);
    EXPECT_FALSE(k.moe_tensor_cores(64, 8));
    EXPECT_TRUE(k.decode_v3(1, 16));
    EXPECT_EQ(k.decode_v2_threads(1), 256);
    EXPECT_EQ(k.decode_v2_threads(10000), 256);
    const std::string all = joined(k.lines());
    EXPECT_TRUE(has(all, "at every size (exact mode")) << all;
    EXPECT_TRUE(has(all, "MLA prefill (v1")) << all;
    EXPECT_TRUE(has(all, "version 3 (tensor cores, 16 heads a block) at every batch")) << all;
    EXPECT_TRUE(has(all, "kernel overrides (MYRIAD_KERNELS=exact=1,graphs=0,decode_attention=v3,"))
        << all;
    EXPECT_TRUE(has(all, ": exact=1, graphs=0, pdl=0, skinny_rows=8, skinny=v1")) << all;
    // The rest back: auto values, and a value equal to the default is listed as none changed.
    k.apply_overrides("decode_attention=auto,decode_threads=auto");
    EXPECT_EQ(k.decode_attention, KernelVariant::Auto);
    EXPECT_EQ(k.decode_threads, 0);
    KernelChoices same = KernelChoices::choose(kH200, {});
    same.apply_overrides("graphs=1");
    EXPECT_TRUE(has(joined(same.lines()),
                    "kernel overrides (MYRIAD_KERNELS=graphs=1): all as "
                    "the defaults"));
    // Empty items and an empty text change nothing.
    KernelChoices empty = KernelChoices::choose(kH200, {});
    empty.apply_overrides(" , ,");
    empty.apply_overrides("");
    EXPECT_TRUE(empty.overrides.empty());
}

TEST(KernelChoices, BadOverridesNameTheField) {
    KernelChoices k = KernelChoices::choose(kH200, {});
    const KernelChoices before = k;
    // An unknown field: named, with every valid one listed.
    std::string e = bad_input_of([&] { k.apply_overrides("exact=1,decode_atention=v2"); });
    EXPECT_TRUE(has(e, "MYRIAD_KERNELS: unknown field 'decode_atention'")) << e;
    for (const std::string& f : kernel_choice_fields()) EXPECT_TRUE(has(e, f)) << f << ": " << e;
    // Nothing applied, not even the valid field before it.
    EXPECT_FALSE(k.exact);
    // Bad values: the value, the field and what it takes.
    e = bad_input_of([&] { k.apply_overrides("decode_attention=v1"); });
    EXPECT_TRUE(has(e, "decode_attention=v1 is not a value of decode_attention")) << e;
    EXPECT_TRUE(has(e, "auto, v2 or v3")) << e;
    e = bad_input_of([&] { k.apply_overrides("graphs=yes"); });
    EXPECT_TRUE(has(e, "graphs=yes") && has(e, "0 or 1")) << e;
    e = bad_input_of([&] { k.apply_overrides("skinny_rows=-3"); });
    EXPECT_TRUE(has(e, "skinny_rows=-3")) << e;
    e = bad_input_of([&] { k.apply_overrides("decode_threads=192"); });
    EXPECT_TRUE(has(e, "auto, 128 or 256")) << e;
    e = bad_input_of([&] { k.apply_overrides("moe_mma_tokens=0"); });
    EXPECT_TRUE(has(e, "1 or more")) << e;
    e = bad_input_of([&] { k.apply_overrides("exact"); });
    EXPECT_TRUE(has(e, "field 'exact' has no value")) << e;
    e = bad_input_of([&] { k.apply_overrides("skinny_rows=99999999999999999999"); });
    EXPECT_TRUE(has(e, "skinny_rows=")) << e;
    // The source named in the message.
    e = bad_input_of([&] { k.apply_overrides("nope=1", "--kernels"); });
    EXPECT_TRUE(has(e, "--kernels: unknown field 'nope'")) << e;
    EXPECT_EQ(joined(k.lines()), joined(before.lines()));
}

TEST(KernelChoices, FromTheEnvironment) {
    setenv("MYRIAD_KERNELS", "exact=1,graphs=0", 1);
    KernelChoices k = KernelChoices::from_environment(kH200);
    EXPECT_TRUE(k.exact);
    EXPECT_FALSE(k.graphs);
    EXPECT_EQ(k.overrides, "exact=1,graphs=0");
    setenv("MYRIAD_KERNELS", "exact=2", 1);
    std::string e = bad_input_of([] { KernelChoices::from_environment(kH200); });
    EXPECT_TRUE(has(e, "MYRIAD_KERNELS: exact=2")) << e;
    unsetenv("MYRIAD_KERNELS");
    EXPECT_FALSE(KernelChoices::from_environment(kH200).exact);
    // A replaced variable stops the run naming its field, rather than being ignored.
    setenv("MYRIAD_CUDA_EXACT", "1", 1);
    e = bad_input_of([] { KernelChoices::from_environment(kH200); });
    EXPECT_TRUE(has(e, "MYRIAD_CUDA_EXACT is no longer read")) << e;
    EXPECT_TRUE(has(e, "MYRIAD_KERNELS=exact=VALUE")) << e;
    unsetenv("MYRIAD_CUDA_EXACT");
    setenv("MYRIAD_CUDA_ATTN", "v1", 1);
    e = bad_input_of([] { KernelChoices::from_environment(kH200); });
    EXPECT_TRUE(has(e, "decode_attention")) << e;
    unsetenv("MYRIAD_CUDA_ATTN");
}

}  // namespace
}  // namespace myriad::testing
