#include "model/gguf_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "util/error.h"
#include "util/log.h"

namespace myriad {

namespace {

// Suffix of our per-layer names -> llama.cpp's per-block names.
struct Alias {
    std::string_view ours, theirs;
};
constexpr Alias kLayerAliases[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
    {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
    {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
    {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
    {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
};

std::string dims_str(const std::vector<int64_t>& d) {
    return fmt::format("[{}]", fmt::join(d, ", "));
}

const GgufTensorInfo& need(const GgufModel& m, const std::string& name, std::string_view ours) {
    const GgufTensorInfo* t = m.tensor(name);
    if (!t) bad_input("{}: tensor {} (for {}) is missing", m.path(), name, ours);
    return *t;
}

void expect_dims(const GgufModel& m, const GgufTensorInfo& t, const std::vector<int64_t>& dims) {
    if (t.dims != dims)
        bad_input("{}: tensor {} has ggml dims {}, expected {}", *t.file, t.name, dims_str(t.dims),
                  dims_str(dims));
    (void)m;
}

// Dequantises a whole tensor to F32, row by row.
std::vector<float> dequantize_all(const GgufTensorInfo& t) {
    std::vector<float> out(static_cast<size_t>(t.numel()));
    const int64_t ne0 = t.dims[0], rows = t.numel() / ne0;
    for (int64_t r = 0; r < rows; ++r)
        gguf_dequantize_range(t.type, t.data + r * t.row_bytes(), 0, ne0, out.data() + r * ne0);
    return out;
}

// kv_b_proj [H*(dn+dv), r] from attn_k_b [H, r, dn] (transposed per head) and attn_v_b
// [H, dv, r], or from attn_kv_b as is.
WeightSource kv_b_source(const ModelConfig& c, const GgufModel& m, const ExpectedTensor& t,
                         const std::string& blk, std::vector<float>& scratch, bool assemble) {
    const int64_t H = c.num_attention_heads, dn = c.qk_nope_head_dim, dv = c.v_head_dim,
                  r = c.kv_lora_rank;
    WeightSource src;
    src.src_rows = H * (dn + dv);
    src.src_cols = r;
    src.row_end = src.src_rows;
    src.col_end = src.src_cols;
    src.dtype = DType::F32;
    if (const GgufTensorInfo* kv = m.tensor(blk + "attn_kv_b.weight")) {
        expect_dims(m, *kv, {r, H * (dn + dv)});
        if (assemble) scratch = dequantize_all(*kv);
        src.data = scratch.data();
        return src;
    }
    // Named strings, not temporaries: gcc 13 warns (dangling-reference) on a reference returned
    // from a call that was given a temporary.
    const std::string kb_name = blk + "attn_k_b.weight", vb_name = blk + "attn_v_b.weight";
    const GgufTensorInfo& kb = need(m, kb_name, t.name);
    const GgufTensorInfo& vb = need(m, vb_name, t.name);
    expect_dims(m, kb, {dn, r, H});
    expect_dims(m, vb, {r, dv, H});
    if (assemble) {
        const std::vector<float> k = dequantize_all(kb), v = dequantize_all(vb);
        scratch.assign(static_cast<size_t>(src.src_rows * r), 0.0f);
        for (int64_t h = 0; h < H; ++h) {
            float* head = scratch.data() + h * (dn + dv) * r;
            for (int64_t j = 0; j < r; ++j)
                for (int64_t i = 0; i < dn; ++i) head[i * r + j] = k[(h * r + j) * dn + i];
            std::copy(v.begin() + h * dv * r, v.begin() + (h + 1) * dv * r, head + dn * r);
        }
    }
    src.data = scratch.data();
    return src;
}

}  // namespace

GgufTensorRef gguf_tensor_for(std::string_view name) {
    if (name == "model.embed_tokens.weight") return {"token_embd.weight"};
    if (name == "model.norm.weight") return {"output_norm.weight"};
    if (name == "lm_head.weight") return {"output.weight"};
    constexpr std::string_view kLayers = "model.layers.";
    if (!name.starts_with(kLayers)) return {std::string(name)};
    std::string_view rest = name.substr(kLayers.size());
    const size_t dot = rest.find('.');
    const std::string blk = fmt::format("blk.{}.", rest.substr(0, dot));
    rest = rest.substr(dot + 1);
    if (rest.ends_with("kv_b_proj.weight")) return {""};
    constexpr std::string_view kExperts = "mlp.experts.";
    if (rest.starts_with(kExperts)) {
        rest = rest.substr(kExperts.size());
        const size_t d = rest.find('.');
        const int64_t e = std::stoll(std::string(rest.substr(0, d)));
        std::string_view proj = rest.substr(d + 1);  // gate_proj.weight
        proj = proj.substr(0, proj.find('_'));
        return {fmt::format("{}ffn_{}_exps.weight", blk, proj), e};
    }
    for (const Alias& a : kLayerAliases)
        if (rest == a.ours) return {blk + std::string(a.theirs)};
    return {std::string(name)};
}

WeightSource gguf_weight_source(const ModelConfig& c, const GgufModel& m, const ExpectedTensor& t,
                                std::vector<float>& scratch, bool assemble) {
    GgufTensorRef ref = gguf_tensor_for(t.name);
    if (ref.name.empty()) {
        const std::string rest = t.name.substr(std::string_view("model.layers.").size());
        return kv_b_source(c, m, t, "blk." + rest.substr(0, rest.find('.')) + ".", scratch,
                           assemble);
    }
    // Files converted from checkpoints with tied embeddings have no output.weight.
    if (ref.name == "output.weight" && !m.tensor(ref.name)) ref.name = "token_embd.weight";
    const GgufTensorInfo& g = need(m, ref.name, t.name);
    const bool matrix = t.shape.size() == 2;
    const int64_t rows = matrix ? t.shape[0] : 1, cols = matrix ? t.shape[1] : t.shape[0];
    std::vector<int64_t> dims = matrix ? std::vector<int64_t>{cols, rows} : std::vector{cols};
    if (ref.expert >= 0) {
        if (g.dims.size() != 3 || ref.expert >= g.dims[2])
            bad_input("{}: tensor {} has ggml dims {}, expected [{}, {}, {}] (experts)", *g.file,
                      g.name, dims_str(g.dims), cols, rows, c.n_routed_experts);
        dims.push_back(g.dims[2]);
    }
    if (ref.expert >= 0 && g.dims[2] != c.n_routed_experts)
        bad_input("{}: tensor {} holds {} experts, expected {}", *g.file, g.name, g.dims[2],
                  c.n_routed_experts);
    expect_dims(m, g, dims);
    WeightSource src;
    src.src_rows = rows;
    src.src_cols = cols;
    src.row_end = rows;
    src.col_end = cols;
    const uint8_t* base = g.data + std::max<int64_t>(ref.expert, 0) * rows * g.row_bytes();
    switch (g.type) {
        case GgufType::F32:
        case GgufType::F16:
        case GgufType::BF16:
            src.format = WeightFormat::Dense;
            src.data = base;
            src.dtype = g.type == GgufType::F32   ? DType::F32
                        : g.type == GgufType::F16 ? DType::F16
                                                  : DType::BF16;
            return src;
        default:
            break;
    }
    src.format = WeightFormat::GgufBlock;
    src.data = base;
    QuantizedData& q = src.quant;
    q.codes = base;
    q.code_row_bytes = static_cast<int64_t>(g.row_bytes());
    q.gguf_type = static_cast<uint32_t>(g.type);
    q.block_cols = gguf_block_elems(g.type);
    q.bytes = static_cast<size_t>(rows) * g.row_bytes();
    return src;
}

void validate_gguf_weights(const ModelConfig& c, const GgufModel& m) {
    std::vector<float> none;
    std::set<std::string> used;
    for (const ExpectedTensor& t : expected_tensors(c)) {
        gguf_weight_source(c, m, t, none, false);
        const GgufTensorRef ref = gguf_tensor_for(t.name);
        used.insert(ref.name);
    }
    int64_t unused = 0;
    for (const GgufTensorInfo* t : m.tensors())
        if (!used.count(t->name) && t->name.find("attn_k_b") == std::string::npos &&
            t->name.find("attn_v_b") == std::string::npos &&
            t->name.find("attn_kv_b") == std::string::npos)
            ++unused;
    if (unused > 0)
        log::info("{}: skipping {} tensors the text model does not use", m.path(), unused);
}

}  // namespace myriad
