#include "model/config_bounds.h"

#include <cmath>

#include <fmt/format.h>

#include "util/error.h"
#include "util/log.h"

namespace myriad {

namespace {

// Ceilings no model nears (Kimi-K2: 61 layers, 384 experts, a vocabulary of 163,840, hidden
// 7,168), low enough that the per-layer and per-expert tables built from them stay small.
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxExperts = 16384;
constexpr int64_t kMaxLayerExperts = int64_t{1} << 18;  // layers times experts
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxHidden = int64_t{1} << 20;
// Published models use up to about 1e7; float32 rotary frequencies lose all meaning far
// before 1e12.
constexpr double kMaxRopeTheta = 1e12;

[[noreturn]] void too_big(const std::string& source, const std::string& field, int64_t value,
                          int64_t max, std::string_view what) {
    bad_input("{}: {} = {} is more than {} ({}); the file is damaged or not a DeepSeek-V3 model",
              source, field, value, max, what);
}

}  // namespace

void check_config_values(const ModelConfig& c, const ConfigFieldNames& names,
                         const std::string& source) {
    if (c.num_hidden_layers > kMaxLayers)
        too_big(source, names.layers, c.num_hidden_layers, kMaxLayers, "layers any model has");
    if (c.n_routed_experts > kMaxExperts)
        too_big(source, names.experts, c.n_routed_experts, kMaxExperts, "experts any model has");
    if (c.num_hidden_layers * c.n_routed_experts > kMaxLayerExperts)
        bad_input(
            "{}: {} = {} times {} = {} is more than {} experts in all; the file is damaged "
            "or not a DeepSeek-V3 model",
            source, names.layers, c.num_hidden_layers, names.experts, c.n_routed_experts,
            kMaxLayerExperts);
    if (c.vocab_size > kMaxVocab)
        too_big(source, names.vocab, c.vocab_size, kMaxVocab, "tokens any vocabulary has");
    if (c.hidden_size > kMaxHidden)
        too_big(source, names.hidden, c.hidden_size, kMaxHidden, "any model's width");
    if (!std::isfinite(c.rope_theta) || c.rope_theta > kMaxRopeTheta)
        bad_input(
            "{}: {} = {} is more than {:g}: the rotary frequencies are computed in float32 "
            "and lose all meaning; published models use up to about 1e7",
            source, names.rope_theta, c.rope_theta, kMaxRopeTheta);
    if (c.bos_token_id && (*c.bos_token_id < 0 || *c.bos_token_id >= c.vocab_size))
        bad_input("{}: {} = {} is not a token id: the vocabulary has ids 0 to {}", source,
                  names.bos, *c.bos_token_id, c.vocab_size - 1);
    for (int64_t eos : c.eos_token_ids) {
        if (eos < 0)
            bad_input("{}: {} holds {}, not a token id: ids are 0 to {}", source, names.eos, eos,
                      c.vocab_size - 1);
        if (eos >= c.vocab_size)
            log::warn(
                "{}: {} holds {}, past the vocabulary (ids 0 to {}): the model can never "
                "produce it, so it never ends a reply",
                source, names.eos, eos, c.vocab_size - 1);
    }
}

void check_config_fits(const ModelConfig& c, uint64_t weight_bytes, const ConfigFieldNames& names,
                       const std::string& source) {
    // Weights each count brings, at one bit a weight (no format stores less), in doubles so no
    // product overflows.
    const double hidden = static_cast<double>(c.hidden_size);
    const double heads = static_cast<double>(c.num_attention_heads);
    const double attention = hidden * static_cast<double>(c.kv_lora_rank + c.qk_rope_head_dim) +
                             heads * static_cast<double>(c.qk_nope_head_dim + c.v_head_dim) *
                                 static_cast<double>(c.kv_lora_rank) +
                             hidden * heads * static_cast<double>(c.v_head_dim);
    const double expert = 3.0 * hidden * static_cast<double>(c.moe_intermediate_size);
    const double bytes = static_cast<double>(weight_bytes);
    auto fits = [&](const std::string& field, int64_t count, double weights_each) {
        const double need = static_cast<double>(count) * weights_each / 8.0;
        if (need > bytes)
            bad_input(
                "{}: {} = {} needs at least {:.3g} bytes of weights, but the model's files "
                "hold {} bytes; the config does not describe these weights",
                source, field, count, need, weight_bytes);
    };
    fits(names.layers, c.num_hidden_layers, attention);
    fits(names.experts, c.n_routed_experts, expert);
    fits(names.vocab, c.vocab_size, hidden);
}

}  // namespace myriad
