#include "model/linear_format.h"

#include <cmath>
#include <cstring>

#include <fmt/ranges.h>

#include "format/gguf.h"
#include "model/weights.h"
#include "util/error.h"

namespace myriad {

namespace {

std::string_view module_of(std::string_view name) {
    if (name.ends_with(".weight")) name.remove_suffix(7);
    return name;
}

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

// The inputs a format packs per scale (0: no constraint on the input dimension).
int64_t input_block(const ModelConfig& c, WeightFormat f) {
    switch (f) {
        case WeightFormat::Nvfp4:
            return 16;
        case WeightFormat::Int4Group:
            return c.quant.group_size;
        default:
            return 0;
    }
}

float read_f32_scalar(const TensorView& v) {
    float f;
    std::memcpy(&f, v.data, 4);
    return f;
}

}  // namespace

bool is_linear_weight(std::string_view name) {
    return name.ends_with("_proj.weight") || name.ends_with("_proj_with_mqa.weight") ||
           name == "lm_head.weight";
}

WeightFormat linear_format(const ModelConfig& c, std::string_view name, std::string_view prefix) {
    if (!is_linear_weight(name) || c.quant.method == QuantMethod::None) return WeightFormat::Dense;
    const std::string_view module = module_of(name);
    const std::string prefixed = std::string(prefix) + std::string(module);
    if (!c.quant.quantizes({module, prefixed}, name.starts_with("model.layers.")))
        return WeightFormat::Dense;
    switch (c.quant.method) {
        case QuantMethod::ModelOptNvfp4:
            return WeightFormat::Nvfp4;
        case QuantMethod::Fp8Block:
            return WeightFormat::Fp8Block;
        case QuantMethod::CompressedInt4:
            return WeightFormat::Int4Group;
        case QuantMethod::None:
            break;
    }
    return WeightFormat::Dense;
}

std::vector<StoredTensor> stored_tensors(const ModelConfig& c, const ExpectedTensor& t,
                                         WeightFormat f, const std::string& prefix) {
    const std::string base = prefix + std::string(module_of(t.name));
    if (f == WeightFormat::Dense)
        return {{prefix + t.name, t.shape, {DType::BF16, DType::F16, DType::F32}, false}};
    const int64_t n = t.shape[0], k = t.shape[1];
    const int64_t block = input_block(c, f);
    if (block > 0 && k % block != 0)
        bad_input(
            "{}: linear {} has {} inputs, not a multiple of the {} block of {} that {} "
            "asks for",
            c.path, base, k, weight_format_name(f), block, c.quant.source);
    switch (f) {
        case WeightFormat::Fp8Block:
            return {{base + ".weight", {n, k}, {DType::F8_E4M3}, false},
                    {base + ".weight_scale_inv",
                     {ceil_div(n, c.quant.block_rows), ceil_div(k, c.quant.block_cols)},
                     {DType::F32},
                     false}};
        case WeightFormat::Nvfp4:
            return {{base + ".weight", {n, k / 2}, {DType::U8}, false},
                    {base + ".weight_scale", {n, k / 16}, {DType::F8_E4M3}, false},
                    {base + ".weight_scale_2", {}, {DType::F32}, true},
                    {base + ".input_scale", {}, {DType::F32}, true}};
        case WeightFormat::Int4Group:
            return {{base + ".weight_packed", {n, k / 8}, {DType::I32}, false},
                    {base + ".weight_scale",
                     {n, k / block},
                     {DType::BF16, DType::F16, DType::F32},
                     false},
                    {base + ".weight_shape", {2}, {DType::I32, DType::I64}, false}};
        case WeightFormat::Dense:
        case WeightFormat::GgufBlock:  // GGUF files load through model/gguf_weights
            break;
    }
    return {};
}

void check_quantized_sharding(const ModelConfig& c, const ExpectedTensor& t, WeightFormat f,
                              const Layout& layout, const std::string& prefix) {
    const int64_t block = input_block(c, f);
    const int world = layout.tp();
    const ShardKind kind = t.expert >= 0 ? layout.expert_kind(t.shard) : t.shard;
    if (block == 0 || kind != ShardKind::Cols || world <= 1) return;
    const int64_t k = t.shape[1];
    if (k % world == 0 && (k / world) % block == 0) return;
    std::vector<int> working;
    for (int w = 1; w <= world; w *= 2)
        if (k % w == 0 && (k / w) % block == 0) working.push_back(w);
    bad_input(
        "{}{}: --tp {} gives each rank {} of its {} input columns, not a whole number of "
        "{} blocks of {}; --tp values that keep whole blocks for it: {}",
        prefix, t.name, world, k / world, k, weight_format_name(f), block,
        fmt::join(working, ", "));
}

WeightSource linear_source(const ModelConfig& c, const Checkpoint& ckpt, const ExpectedTensor& t,
                           WeightFormat f, const std::string& prefix) {
    const auto stored = stored_tensors(c, t, f, prefix);
    std::vector<TensorView> views;
    try {
        for (const StoredTensor& s : stored) {
            if (!s.scalar) {
                views.push_back(
                    s.dtypes.size() == 1 ? ckpt.expect(s.name, s.shape, {s.dtypes[0]})
                    : s.dtypes.size() == 2
                        ? ckpt.expect(s.name, s.shape, {s.dtypes[0], s.dtypes[1]})
                        : ckpt.expect(s.name, s.shape, {s.dtypes[0], s.dtypes[1], s.dtypes[2]}));
                continue;
            }
            TensorView v = ckpt.get(s.name);
            if (v.dtype() != DType::F32)
                bad_input("{}: tensor {} has dtype {}, expected F32", *v.file, s.name,
                          dtype_name(v.dtype()));
            if (v.info->numel() != 1 || v.shape().size() > 1)
                bad_input("{}: tensor {} has shape {}, expected a scalar ([] or [1])", *v.file,
                          s.name, v.shape_str());
            const float value = read_f32_scalar(v);
            if (!std::isfinite(value) || value <= 0.0f)
                bad_input("{}: tensor {} is {}, expected a positive finite scale", *v.file, s.name,
                          value);
            views.push_back(v);
        }
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::BadInput) throw;
        if (f == WeightFormat::Dense)
            bad_input("{} (a dense linear: {} does not quantise it)", e.what(), c.quant.source);
        bad_input("{} ({} weights, as {} says)", e.what(), weight_format_name(f), c.quant.source);
    }
    WeightSource src;
    src.src_rows = t.shape[0];
    src.src_cols = t.shape[1];
    src.row_end = src.src_rows;
    src.col_end = src.src_cols;
    src.format = f;
    src.data = views[0].data;
    src.dtype = views[0].dtype();
    if (f == WeightFormat::Dense) return src;
    QuantizedData& q = src.quant;
    q.codes = views[0].data;
    q.scales = views[1].data;
    q.scale_dtype = views[1].dtype();
    q.code_row_bytes = views[0].shape()[1] * static_cast<int64_t>(dtype_size(views[0].dtype()));
    q.scale_row_stride = views[1].shape()[1];
    q.bytes = views[0].nbytes() + views[1].nbytes();
    switch (f) {
        case WeightFormat::Fp8Block:
            q.block_rows = c.quant.block_rows;
            q.block_cols = c.quant.block_cols;
            break;
        case WeightFormat::Nvfp4:
            q.block_cols = 16;
            q.global_scale = read_f32_scalar(views[2]);
            q.input_scale = read_f32_scalar(views[3]);
            break;
        case WeightFormat::Int4Group: {
            q.block_cols = c.quant.group_size;
            const TensorView& shape = views[2];
            int64_t dims[2];
            for (int i = 0; i < 2; ++i) {
                if (shape.dtype() == DType::I32) {
                    int32_t v;
                    std::memcpy(&v, shape.data + 4 * i, 4);
                    dims[i] = v;
                } else {
                    std::memcpy(&dims[i], shape.data + 8 * i, 8);
                }
            }
            if (dims[0] != t.shape[0] || dims[1] != t.shape[1])
                bad_input(
                    "{}: tensor {} holds [{}, {}], expected [{}, {}] (int4-group weights, "
                    "as {} says)",
                    *shape.file, shape.name(), dims[0], dims[1], t.shape[0], t.shape[1],
                    c.quant.source);
            break;
        }
        case WeightFormat::Dense:
        case WeightFormat::GgufBlock:  // GGUF files load through model/gguf_weights
            break;
    }
    return src;
}

std::set<WeightFormat> checkpoint_linear_formats(const ModelConfig& config,
                                                 const Checkpoint& checkpoint) {
    std::set<WeightFormat> out;
    if (const GgufModel* g = checkpoint.gguf()) {
        out.insert(WeightFormat::Dense);
        for (const GgufTensorInfo* t : g->tensors())
            if (t->type != GgufType::F32 && t->type != GgufType::F16 && t->type != GgufType::BF16)
                out.insert(WeightFormat::GgufBlock);
        return out;
    }
    const std::string prefix =
        checkpoint.synthetic_seed() != 0 ? std::string() : text_model_prefix(config, checkpoint);
    for (const auto& t : expected_tensors(config))
        if (is_linear_weight(t.name)) out.insert(linear_format(config, t.name, prefix));
    return out;
}

}  // namespace myriad
