#include "model/weights.h"
#include "model/shard_load.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "model/gguf_weights.h"
#include "model/layout_check.h"
#include "model/linear_format.h"
#include "model/synthetic_model.h"
#include "model/tensor_layout.h"
#include "util/error.h"
#include "util/log.h"

namespace myriad {

std::string text_model_prefix(const ModelConfig& config, const Checkpoint& ckpt) {
    if (ckpt.has("model.embed_tokens.weight")) return "";
    if (config.multimodal && ckpt.has("language_model.model.embed_tokens.weight"))
        return "language_model.";
    return "";  // the missing-tensor error will name model.embed_tokens.weight
}

namespace {

// The format of linear `name`: the quantisation config's, except an MTP layer's eh_proj stored
// unquantised (DeepSeek's FP8 checkpoints keep it BF16, as vLLM's plain Linear for it reads it).
WeightFormat stored_linear_format(const ModelConfig& c, const Checkpoint& ckpt,
                                  const std::string& name, const std::string& prefix) {
    const WeightFormat f = linear_format(c, name, prefix);
    if (f == WeightFormat::Dense || !name.ends_with(".eh_proj.weight") || !ckpt.has(prefix + name))
        return f;
    const DType d = ckpt.get(prefix + name).dtype();
    return d == DType::BF16 || d == DType::F16 || d == DType::F32 ? WeightFormat::Dense : f;
}

}  // namespace

void validate_checkpoint(const ModelConfig& config, const Checkpoint& ckpt, const Layout& layout) {
    if (ckpt.synthetic_seed() != 0) {  // generated weights: only the sharding can be wrong
        check_layout(config, layout);
        return;
    }
    if (ckpt.gguf()) {  // unaligned GGUF column shards load dense (gguf_weights.h)
        check_layout(config, layout);
        validate_gguf_weights(config, *ckpt.gguf());
        return;
    }
    const std::string prefix = text_model_prefix(config, ckpt);
    check_layout(config, layout, prefix);
    for (const auto& t : expected_tensors(config)) {
        if (is_linear_weight(t.name)) {
            linear_source(config, ckpt, t, stored_linear_format(config, ckpt, t.name, prefix),
                          prefix);
            continue;
        }
        const bool is_bias = t.name.ends_with("e_score_correction_bias");
        ckpt.expect(prefix + t.name, t.shape,
                    is_bias ? std::initializer_list<DType>{DType::F32, DType::BF16, DType::F16}
                            : std::initializer_list<DType>{DType::BF16, DType::F16, DType::F32});
    }
    // Counted by kind, so the one line says what was left out.
    std::map<std::string, int64_t> skipped;
    int64_t total = 0;
    for (const auto& name : ckpt.names()) {
        std::string_view n = name;
        if (!prefix.empty() && n.starts_with(prefix)) n.remove_prefix(prefix.size());
        if (!is_ignored_tensor(config, n)) continue;
        ++total;
        if (n.starts_with("vision_tower."))
            ++skipped["vision_tower.*"];
        else if (n.starts_with("mm_projector."))
            ++skipped["mm_projector.*"];
        else if (config.mtp_layers > 0 && n.starts_with("model.layers.") &&
                 (n.ends_with(".embed_tokens.weight") || n.ends_with(".shared_head.head.weight")))
            ++skipped["MTP copies of the embedding and lm_head (the model's are used)"];
        else
            ++skipped["multi-token prediction layers"];
    }
    if (total > 0) {
        std::string kinds;
        for (const auto& [kind, n] : skipped)
            kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, kind);
        log::info("{}: skipping {} tensors the text model does not use: {}", ckpt.path(), total,
                  kinds);
    }
}

namespace {

class Loader {
  public:
    // `ops` null: sources only (the shard reader's plan).
    Loader(const ModelConfig& c, const Checkpoint& ckpt, Ops* ops, const Layout& layout)
        : config_(c),
          ckpt_(ckpt),
          ops_(ops),
          layout_of_ranks_(layout),
          prefix_(text_model_prefix(c, ckpt)) {
        for (auto& t : expected_tensors(c)) layout_.emplace(t.name, t);
    }

    // The source of `name`'s shard on this rank; nullopt for a routed expert of another rank.
    // `cols`: a column range of a replicated tensor (eh_proj's halves), else the layout's shard.
    std::optional<WeightSource> source(const std::string& name,
                                       std::optional<Slice> cols = std::nullopt) {
        auto it = layout_.find(name);
        MYRIAD_CHECK(it != layout_.end(), "tensor {} is not in the layout table", name);
        const ExpectedTensor& e = it->second;
        const TensorShard shard = tensor_shard(config_, e, layout_of_ranks_);
        if (!shard.held) return std::nullopt;  // a routed expert of another rank
        WeightSource src;
        if (const uint64_t seed = ckpt_.synthetic_seed()) {
            src = synthetic_source(e,
                                   is_linear_weight(name) ? linear_format(config_, name, prefix_)
                                                          : WeightFormat::Dense,
                                   config_, seed);
        } else if (const GgufModel* gguf = ckpt_.gguf()) {
            src = gguf_weight_source(config_, *gguf, e, scratch_);
        } else if (is_linear_weight(name)) {
            src = linear_source(config_, ckpt_, e,
                                stored_linear_format(config_, ckpt_, name, prefix_), prefix_);
        } else {
            TensorView v = ckpt_.expect(prefix_ + name, e.shape);
            src.data = v.data;
            src.dtype = v.dtype();
            src.src_rows = e.shape.size() == 2 ? e.shape[0] : 1;
            src.src_cols = e.shape.size() == 2 ? e.shape[1] : e.shape[0];
            src.row_end = src.src_rows;
            src.col_end = src.src_cols;
        }
        // The absorbed MLA ops read kv_b_proj's rows directly: it is held dense (reference §1.6).
        src.to_dense = name.ends_with("kv_b_proj.weight");
        MYRIAD_CHECK(shard.rows.end <= src.src_rows && shard.cols.end <= src.src_cols,
                     "{}: shard rows [{}, {}) cols [{}, {}) outside [{}, {}]", name,
                     shard.rows.begin, shard.rows.end, shard.cols.begin, shard.cols.end,
                     src.src_rows, src.src_cols);
        if (e.shard == ShardKind::Rows) {
            src.row_begin = shard.rows.begin;
            src.row_end = shard.rows.end;
        } else if (e.shard == ShardKind::Cols) {
            src.col_begin = shard.cols.begin;
            src.col_end = shard.cols.end;
        }
        if (cols) {
            MYRIAD_CHECK(e.shard == ShardKind::Replicated && cols->end <= src.src_cols,
                         "{}: columns [{}, {}) of a sharded tensor or outside {}", name,
                         cols->begin, cols->end, src.src_cols);
            src.col_begin = cols->begin;
            src.col_end = cols->end;
        }
        // GGUF blocks: ops read embeddings, norms and the router directly, and a column shard
        // must hold whole blocks; otherwise the shard is dequantised at load.
        if (src.format == WeightFormat::GgufBlock &&
            (!is_linear_weight(name) || src.col_begin % src.quant.block_cols != 0 ||
             src.col_end % src.quant.block_cols != 0))
            src.to_dense = true;
        return src;
    }

    Weight load(const std::string& name, std::optional<Slice> cols = std::nullopt) {
        const std::optional<WeightSource> src = source(name, cols);
        if (!src) return {};
        return load(*src);
    }

    Weight load(const WeightSource& src) {
        MYRIAD_CHECK(ops_ != nullptr, "a planning loader cannot load weights");
        Weight w = ops_->load_weight(src);
        if (w.format != WeightFormat::Dense)  // this shard's share of codes and scales
            w.quant.bytes = static_cast<size_t>(static_cast<double>(w.quant.bytes) * w.rows *
                                                w.cols / (src.src_rows * src.src_cols));
        bytes_ += w.bytes();
        return w;
    }

    MlpWeights mlp(const std::string& p) {
        return {load(p + "gate_proj.weight"), load(p + "up_proj.weight"),
                load(p + "down_proj.weight")};
    }

    size_t bytes() const { return bytes_; }

  private:
    const ModelConfig& config_;
    const Checkpoint& ckpt_;
    Ops* ops_;
    Layout layout_of_ranks_;
    std::string prefix_;
    std::map<std::string, ExpectedTensor> layout_;
    std::vector<float> scratch_;  // GGUF kv_b_proj, assembled before it is loaded
    size_t bytes_ = 0;
};

}  // namespace

namespace {

// A weight of one rank by name, and by column range where a replicated tensor is held in parts
// (an MTP layer's eh_proj: its halves).
using WeightGetter = std::function<Weight(const std::string&, std::optional<Slice>)>;

// Decoder layer l (an MTP layer's decoder layer too: its tensors have the same names).
LayerWeights assemble_layer(const ModelConfig& c, int64_t l, const WeightGetter& at) {
    auto get = [&](const std::string& name) { return at(name, std::nullopt); };
    auto mlp = [&](const std::string& p) -> MlpWeights {
        return {get(p + "gate_proj.weight"), get(p + "up_proj.weight"),
                get(p + "down_proj.weight")};
    };
    const std::string p = fmt::format("model.layers.{}.", l);
    LayerWeights lw;
    lw.input_norm = get(p + "input_layernorm.weight");
    lw.post_attention_norm = get(p + "post_attention_layernorm.weight");
    const std::string a = p + "self_attn.";
    if (c.q_lora_rank > 0) {
        lw.attn.q_a = get(a + "q_a_proj.weight");
        lw.attn.q_a_norm = get(a + "q_a_layernorm.weight");
        lw.attn.q_b = get(a + "q_b_proj.weight");
    } else {
        lw.attn.q = get(a + "q_proj.weight");
    }
    lw.attn.kv_a = get(a + "kv_a_proj_with_mqa.weight");
    lw.attn.kv_a_norm = get(a + "kv_a_layernorm.weight");
    lw.attn.kv_b = get(a + "kv_b_proj.weight");
    lw.attn.o = get(a + "o_proj.weight");
    lw.moe = c.is_moe_layer(l);
    if (!lw.moe) {
        lw.dense = mlp(p + "mlp.");
    } else {
        lw.router = get(p + "mlp.gate.weight");
        lw.router_bias = get(p + "mlp.gate.e_score_correction_bias");
        for (int64_t e = 0; e < c.n_routed_experts; ++e)
            lw.experts.push_back(mlp(fmt::format("{}mlp.experts.{}.", p, e)));
        if (c.n_shared_experts > 0) lw.shared = mlp(p + "mlp.shared_experts.");
    }
    return lw;
}

// The weights of one rank put together from `at(name, cols)`, in the forward pass's order.
ModelWeights assemble(const ModelConfig& c, const Layout& layout, const WeightGetter& at) {
    auto get = [&](const std::string& name) { return at(name, std::nullopt); };
    ModelWeights w;
    w.embed = get("model.embed_tokens.weight");
    w.vocab_begin = layout.vocab(c.vocab_size).begin;
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) w.layers.push_back(assemble_layer(c, l, at));
    for (int64_t i = 0; i < c.mtp_layers; ++i) {
        const int64_t l = c.num_hidden_layers + i;
        const std::string p = fmt::format("model.layers.{}.", l);
        MtpWeights m;
        m.enorm = get(p + "enorm.weight");
        m.hnorm = get(p + "hnorm.weight");
        m.eh_proj_e = at(p + "eh_proj.weight", Slice{0, c.hidden_size});
        m.eh_proj_h = at(p + "eh_proj.weight", Slice{c.hidden_size, 2 * c.hidden_size});
        m.head_norm = get(p + "shared_head.norm.weight");
        m.layer = assemble_layer(c, l, at);
        w.mtp.push_back(std::move(m));
    }
    w.final_norm = get("model.norm.weight");
    w.lm_head = get("lm_head.weight");
    return w;
}

}  // namespace

namespace {

// The key of a column range of `name` among a fed rank's loaded weights.
std::string part_key(const std::string& name, Slice cols) {
    return fmt::format("{}[{}:{})", name, cols.begin, cols.end);
}

}  // namespace

std::vector<PlannedWeight> planned_weights(const ModelConfig& c, const Checkpoint& ckpt,
                                           const Layout& layout) {
    MYRIAD_CHECK(!ckpt.gguf(), "planned_weights: GGUF sources point into scratch memory");
    Loader ld(c, ckpt, nullptr, layout);
    std::vector<PlannedWeight> out;
    for (const ExpectedTensor& t : expected_tensors(c))
        if (std::optional<WeightSource> src = ld.source(t.name)) out.push_back({t.name, *src});
    return out;
}

ModelWeights load_weights(const ModelConfig& c, const Checkpoint& ckpt, Ops& ops,
                          const Layout& layout, const WeightFeed& feed) {
    Loader ld(c, ckpt, &ops, layout);
    ModelWeights w;
    if (feed.load == nullptr) {
        w = assemble(c, layout, [&](const std::string& name, std::optional<Slice> cols) {
            return ld.load(name, cols);
        });
        w.bytes = ld.bytes();
        ops.loaded();
        return w;
    }
    // Fed by the process's shard reader: this rank's weights in file order, each loaded once
    // its bytes are in memory, its pages released once copied (unless the backend keeps
    // reading them: the CPU's zero-copy quantised weights).
    ShardReader& reader = feed.load->reader();
    struct Finish {
        ShardReader& r;
        int consumer;
        ~Finish() { r.finish(consumer); }
    } finish{reader, feed.consumer};
    std::map<std::string, Weight> loaded;
    for (const LoadStep& step : feed.load->order(feed.consumer)) {
        for (size_t i = 0; i < step.spans; ++i) reader.wait(feed.consumer, step.first_span + i);
        if (c.mtp_layers > 0 && step.name.ends_with(".eh_proj.weight")) {
            // An MTP layer's eh_proj is held as its two column halves (one read for both).
            for (const Slice half :
                 {Slice{0, c.hidden_size}, Slice{c.hidden_size, 2 * c.hidden_size}}) {
                const std::optional<WeightSource> part = ld.source(step.name, half);
                MYRIAD_CHECK(part.has_value(), "{}: no source for its columns", step.name);
                loaded.emplace(part_key(step.name, half), ld.load(*part));
            }
        } else {
            loaded.emplace(step.name, ld.load(step.source));
        }
        if (!ops.keeps_source(step.source))
            for (size_t i = 0; i < step.spans; ++i)
                reader.release(feed.consumer, step.first_span + i);
    }
    w = assemble(c, layout, [&](const std::string& name, std::optional<Slice> cols) {
        auto it = loaded.find(cols ? part_key(name, *cols) : name);
        if (it != loaded.end()) return std::move(it->second);
        // Left out of the plan: only a weight this rank does not hold (another rank's expert).
        MYRIAD_CHECK(!ld.source(name, cols).has_value(),
                     "{}: rank {} holds it but its load plan left it out", name, layout.rank());
        return Weight{};
    });
    w.bytes = ld.bytes();
    ops.loaded();
    return w;
}

}  // namespace myriad
