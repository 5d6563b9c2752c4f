#include "kimi_tensors.h"

#include <cmath>

#include <fmt/format.h>

#include "util/error.h"

namespace myriad::tools {

namespace {

constexpr char kText[] = "language_model.";

class Planner {
  public:
    explicit Planner(const KimiShape& s) : s_(s) {}

    void bf16(std::string name, std::vector<int64_t> shape, float std_dev, float mean = 0) {
        out_.push_back({std::move(name),
                        DType::BF16,
                        std::move(shape),
                        {FillKind::Bf16Uniform, std_dev, mean}});
    }
    void norm(std::string name, int64_t n) { bf16(std::move(name), {n}, 0.05f, 1.0f); }
    void f32(std::string name, std::vector<int64_t> shape, Fill f) {
        out_.push_back({std::move(name), DType::F32, std::move(shape), f});
    }
    // A BF16 linear [out, in] with the standard deviation of a trained one: 1 / sqrt(in).
    void linear(const std::string& module, int64_t out, int64_t in) {
        bf16(module + ".weight", {out, in}, 1.0f / std::sqrt(static_cast<float>(in)));
    }
    // A ModelOpt NVFP4 linear [out, in] whose dequantised values have standard deviation
    // 1 / sqrt(in): code * block scale * weight_scale_2.
    void nvfp4(const std::string& module, int64_t out, int64_t in, float global_scale,
               float input_scale) {
        if (in % 16 != 0)
            bad_input("{}: {} inputs is not a multiple of the NVFP4 group of 16", module, in);
        out_.push_back({module + ".weight", DType::U8, {out, in / 2}, {FillKind::Nvfp4Codes}});
        out_.push_back(
            {module + ".weight_scale", DType::F8_E4M3, {out, in / 16}, {FillKind::Fp8Scales}});
        f32(module + ".weight_scale_2", {}, {FillKind::F32Constant, global_scale});
        f32(module + ".input_scale", {}, {FillKind::F32Constant, input_scale});
    }
    static float global_scale_for(int64_t in) {
        return static_cast<float>(
            1.0 / (std::sqrt(static_cast<double>(in)) * e2m1_uniform_rms() * fp8_scale_rms()));
    }

    void vision() {
        const int64_t h = s_.vision_hidden, f = s_.vision_mlp;
        const std::string v = "vision_tower.";
        bf16(v + "patch_embed.proj.weight", {h, 3, s_.patch, s_.patch},
             1.0f / std::sqrt(static_cast<float>(3 * s_.patch * s_.patch)));
        bf16(v + "patch_embed.proj.bias", {h}, 0.01f);
        bf16(v + "patch_embed.pos_emb.weight", {s_.pos_grid, s_.pos_grid, h}, 0.02f);
        for (int64_t b = 0; b < s_.vision_blocks; ++b) {
            const std::string p = fmt::format("{}encoder.blocks.{}.", v, b);
            norm(p + "norm0.weight", h);
            bf16(p + "norm0.bias", {h}, 0.01f);
            linear(p + "wqkv", 3 * h, h);
            bf16(p + "wqkv.bias", {3 * h}, 0.01f);
            linear(p + "wo", h, h);
            bf16(p + "wo.bias", {h}, 0.01f);
            norm(p + "norm1.weight", h);
            bf16(p + "norm1.bias", {h}, 0.01f);
            linear(p + "mlp.fc0", f, h);
            bf16(p + "mlp.fc0.bias", {f}, 0.01f);
            linear(p + "mlp.fc1", h, f);
            bf16(p + "mlp.fc1.bias", {h}, 0.01f);
        }
        norm(v + "encoder.final_layernorm.weight", h);
        bf16(v + "encoder.final_layernorm.bias", {h}, 0.01f);
        const std::string m = "mm_projector.";
        norm(m + "pre_norm.weight", h);
        bf16(m + "pre_norm.bias", {h}, 0.01f);
        linear(m + "proj.0", 4 * h, 4 * h);
        bf16(m + "proj.0.bias", {4 * h}, 0.01f);
        linear(m + "proj.2", s_.hidden, 4 * h);
        bf16(m + "proj.2.bias", {s_.hidden}, 0.01f);
    }

    void mlp(const std::string& p, int64_t inter) {
        linear(p + "gate_proj", inter, s_.hidden);
        linear(p + "up_proj", inter, s_.hidden);
        linear(p + "down_proj", s_.hidden, inter);
    }

    void layer(int64_t l) {
        const std::string p = fmt::format("{}model.layers.{}.", kText, l);
        const std::string a = p + "self_attn.";
        const int64_t qk = s_.qk_nope + s_.qk_rope;
        linear(a + "q_a_proj", s_.q_lora_rank, s_.hidden);
        norm(a + "q_a_layernorm.weight", s_.q_lora_rank);
        linear(a + "q_b_proj", s_.heads * qk, s_.q_lora_rank);
        linear(a + "kv_a_proj_with_mqa", s_.kv_lora_rank + s_.qk_rope, s_.hidden);
        norm(a + "kv_a_layernorm.weight", s_.kv_lora_rank);
        linear(a + "kv_b_proj", s_.heads * (s_.qk_nope + s_.v_head), s_.kv_lora_rank);
        linear(a + "o_proj", s_.hidden, s_.heads * s_.v_head);
        f32(a + "k_proj.k_scale", {}, {FillKind::F32Constant, 1.0f});
        f32(a + "v_proj.v_scale", {}, {FillKind::F32Constant, 1.0f});
        if (l < s_.first_dense) {
            mlp(p + "mlp.", s_.intermediate);
        } else {
            // Activations entering an expert are RMS-normalised (gate/up) or silu(g)·u (down):
            // an input_scale of amax / (6·448) for an amax of 16 saturates nothing.
            const float input_scale = 16.0f / (6.0f * 448.0f);
            const float gu = global_scale_for(s_.hidden),
                        down = global_scale_for(s_.moe_intermediate);
            for (int64_t e = 0; e < s_.experts; ++e) {
                const std::string x = fmt::format("{}mlp.experts.{}.", p, e);
                // Each expert its own global scale, within ±10 % of the nominal one.
                const float wobble = 1.0f + 0.1f * static_cast<float>((e * 37) % 21 - 10) / 10.0f;
                nvfp4(x + "gate_proj", s_.moe_intermediate, s_.hidden, gu * wobble, input_scale);
                nvfp4(x + "up_proj", s_.moe_intermediate, s_.hidden, gu * wobble, input_scale);
                nvfp4(x + "down_proj", s_.hidden, s_.moe_intermediate, down * wobble, input_scale);
            }
            linear(p + "mlp.gate", s_.experts, s_.hidden);
            f32(p + "mlp.gate.e_score_correction_bias", {s_.experts},
                {FillKind::F32Uniform, 0.0f, 0.1f});
            mlp(p + "mlp.shared_experts.", s_.moe_intermediate * s_.shared_experts);
        }
        norm(p + "input_layernorm.weight", s_.hidden);
        norm(p + "post_attention_layernorm.weight", s_.hidden);
    }

    std::vector<PlannedTensor> all() {
        vision();
        bf16(std::string(kText) + "model.embed_tokens.weight", {s_.vocab, s_.hidden}, 1.0f);
        for (int64_t l = 0; l < s_.layers; ++l) layer(l);
        norm(std::string(kText) + "model.norm.weight", s_.hidden);
        linear(std::string(kText) + "lm_head", s_.vocab, s_.hidden);
        return std::move(out_);
    }

  private:
    const KimiShape& s_;
    std::vector<PlannedTensor> out_;
};

}  // namespace

uint64_t PlannedTensor::bytes() const {
    uint64_t n = dtype_size(dtype);
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
}

std::vector<PlannedTensor> kimi_tensors(const KimiShape& shape) {
    return Planner(shape).all();
}

}  // namespace myriad::tools
