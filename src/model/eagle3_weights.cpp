#include "model/eagle3_weights.h"

#include <cstring>

#include "util/error.h"

namespace myriad {

void HostMatrix::row(int64_t i, float* out) const {
    const size_t size = dtype_size(dtype);
    convert_to_f32(dtype, data + static_cast<size_t>(i * cols) * size, out,
                   static_cast<size_t>(cols));
}

std::vector<float> HostMatrix::all() const {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    convert_to_f32(dtype, data, v.data(), v.size());
    return v;
}

namespace {

constexpr std::initializer_list<DType> kFloats = {DType::F32, DType::BF16, DType::F16};

// The draft's tensor `name`, or "model." + name where a draft was saved with the prefix.
std::string stored_name(const Checkpoint& ckpt, const std::string& name) {
    if (!ckpt.has(name) && ckpt.has("model." + name)) return "model." + name;
    return name;
}

HostMatrix view(const TensorView& t) {
    HostMatrix m;
    m.data = t.data;
    m.dtype = t.dtype();
    m.rows = t.shape()[0];
    m.cols = t.shape().size() > 1 ? t.shape()[1] : 1;
    return m;
}

HostMatrix matrix(const Checkpoint& ckpt, const std::string& name, int64_t rows, int64_t cols) {
    return view(ckpt.expect(stored_name(ckpt, name), {rows, cols}, kFloats));
}

std::vector<float> vec(const Checkpoint& ckpt, const std::string& name, int64_t n) {
    return view(ckpt.expect(stored_name(ckpt, name), {n}, kFloats)).all();
}

}  // namespace

Eagle3Weights load_eagle3_weights(const Eagle3Config& c, const Checkpoint& ckpt,
                                  const TensorView* target_embed) {
    const int64_t H = c.hidden_size, q_out = c.num_attention_heads * c.head_dim;
    const int64_t kv_out = c.num_key_value_heads * c.head_dim, I = c.intermediate_size;
    Eagle3Weights w;
    // fc's width says how many aux hidden states it concatenates (three in every published draft).
    const TensorView fc = ckpt.get(stored_name(ckpt, "fc.weight"));
    if (fc.shape().size() != 2 || fc.shape()[0] != H || fc.shape()[1] % c.target_hidden_size != 0 ||
        fc.shape()[1] < c.target_hidden_size)
        bad_input(
            "{}: tensor {} has shape {}, expected [{}, n x {}] (hidden_size, aux hidden "
            "states x the target's hidden_size)",
            *fc.file, fc.name(), fc.shape_str(), H, c.target_hidden_size);
    w.num_aux = fc.shape()[1] / c.target_hidden_size;
    w.fc = matrix(ckpt, "fc.weight", H, w.num_aux * c.target_hidden_size);
    const std::string p = "midlayer.";
    w.input_norm = vec(ckpt, p + "input_layernorm.weight", H);
    w.hidden_norm = vec(ckpt, p + "hidden_norm.weight", H);
    w.q = matrix(ckpt, p + "self_attn.q_proj.weight", q_out, 2 * H);
    w.k = matrix(ckpt, p + "self_attn.k_proj.weight", kv_out, 2 * H);
    w.v = matrix(ckpt, p + "self_attn.v_proj.weight", kv_out, 2 * H);
    w.o = matrix(ckpt, p + "self_attn.o_proj.weight", H, q_out);
    w.post_attention_norm = vec(ckpt, p + "post_attention_layernorm.weight", H);
    w.gate = matrix(ckpt, p + "mlp.gate_proj.weight", I, H);
    w.up = matrix(ckpt, p + "mlp.up_proj.weight", I, H);
    w.down = matrix(ckpt, p + "mlp.down_proj.weight", H, I);
    w.final_norm = vec(ckpt, "norm.weight", H);
    w.lm_head = matrix(ckpt, "lm_head.weight", c.draft_vocab_size, H);
    if (ckpt.has(stored_name(ckpt, "embed_tokens.weight"))) {
        w.embed = matrix(ckpt, "embed_tokens.weight", c.vocab_size, H);
        w.own_embed = true;
    } else {
        if (!target_embed)
            bad_input(
                "{}: the draft has no embed_tokens.weight and the target's embedding cannot "
                "be shared (the target is not a safetensors checkpoint); use a draft with "
                "its own embed_tokens",
                c.path);
        const TensorView& e = *target_embed;
        if (e.shape() != std::vector<int64_t>{c.vocab_size, H} ||
            (e.dtype() != DType::F32 && e.dtype() != DType::BF16 && e.dtype() != DType::F16))
            bad_input(
                "{}: the draft has no embed_tokens.weight, and the target's {} ({} {}) cannot "
                "stand in for it: expected [{}, {}] in F32, BF16 or F16",
                c.path, e.name(), dtype_name(e.dtype()), e.shape_str(), c.vocab_size, H);
        w.embed = view(e);
    }
    // d2t: target id = draft id + d2t[draft id]; a draft over the whole vocabulary may omit it.
    const std::string d2t = stored_name(ckpt, "d2t");
    w.draft_to_target.resize(static_cast<size_t>(c.draft_vocab_size));
    if (ckpt.has(d2t)) {
        const TensorView t = ckpt.expect(d2t, {c.draft_vocab_size}, {DType::I64, DType::I32});
        for (int64_t i = 0; i < c.draft_vocab_size; ++i) {
            int64_t off = 0;
            if (t.dtype() == DType::I64) {
                std::memcpy(&off, t.data + i * 8, 8);
            } else {
                int32_t o32;
                std::memcpy(&o32, t.data + i * 4, 4);
                off = o32;
            }
            const int64_t id = i + off;
            if (id < 0 || id >= c.vocab_size)
                bad_input("{}: tensor {} maps draft id {} to {}, outside the vocabulary of {}",
                          *t.file, d2t, i, id, c.vocab_size);
            w.draft_to_target[static_cast<size_t>(i)] = static_cast<int32_t>(id);
        }
    } else if (c.draft_vocab_size != c.vocab_size) {
        bad_input(
            "{}: tensor d2t is missing: draft_vocab_size {} is below vocab_size {}, so the "
            "draft's ids need d2t to map them to the target's",
            c.path, c.draft_vocab_size, c.vocab_size);
    } else {
        for (int64_t i = 0; i < c.draft_vocab_size; ++i)
            w.draft_to_target[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    }
    return w;
}

}  // namespace myriad
