// myriad inspect: what a checkpoint holds and what each tensor-parallel rank would hold.
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "format/checkpoint.h"
#include "format/read_speed.h"
#include "model/gguf_weights.h"
#include "model/kv_cache.h"
#include "model/linear_format.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "model/weights.h"
#include "util/error.h"

namespace myriad::cli {

namespace {

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024.0 && u < 4) {
        b /= 1024.0;
        ++u;
    }
    return fmt::format("{:.2f} {}", b, units[u]);
}

// A linear's name with its layer and expert numbers replaced by '*', to group alike linears.
std::string linear_kind(std::string_view name) {
    std::string out;
    for (size_t i = 0; i < name.size();) {
        if (std::isdigit(static_cast<unsigned char>(name[i])) && i > 0 && name[i - 1] == '.') {
            while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
            out += '*';
        } else {
            out += name[i++];
        }
    }
    return out;
}

// The linears by kind and format, the bytes per format in the checkpoint and on each of `tp`
// ranks: gathered from a safetensors checkpoint or a GGUF file, printed the same way.
class LinearTable {
  public:
    void add(const std::string& name, const std::string& format, int64_t bytes,
             int64_t rank_bytes) {
        Kind& k = kinds_[{linear_kind(name), format}];
        ++k.count;
        k.bytes += bytes;
        ++formats_[format].count;
        formats_[format].bytes += bytes;
        per_rank_[format] += rank_bytes;
    }

    void print(int tp) const {
        std::printf("linears      by format:");
        for (const auto& [f, k] : formats_)
            std::printf("  %s %lld (%s)", f.c_str(), (long long)k.count,
                        human_bytes(static_cast<double>(k.bytes)).c_str());
        std::printf("\n             per rank at tp %d:", tp);
        for (const auto& [f, b] : per_rank_)
            std::printf("  %s %s", f.c_str(), human_bytes(static_cast<double>(b)).c_str());
        std::printf("\n");
        for (const auto& [key, k] : kinds_)
            std::printf("  %-52s %-10s x%-6lld %s\n", key.first.c_str(), key.second.c_str(),
                        (long long)k.count, human_bytes(static_cast<double>(k.bytes)).c_str());
    }

  private:
    struct Kind {
        int64_t count = 0;
        int64_t bytes = 0;
    };
    std::map<std::pair<std::string, std::string>, Kind> kinds_;  // (kind, format)
    std::map<std::string, Kind> formats_;
    std::map<std::string, int64_t> per_rank_;
};

// The format of every linear (grouped by kind), then the bytes per format in the checkpoint and
// on each of `tp` ranks.
void print_linear_formats(const ModelConfig& c, const Checkpoint& ckpt, const std::string& prefix,
                          int tp) {
    if (c.quant.method == QuantMethod::None)
        std::printf("quantised    no (every linear dense)\n");
    else
        std::printf("quantised    %s, from %s\n",
                    std::string(quant_method_name(c.quant.method)).c_str(), c.quant.source.c_str());
    LinearTable table;
    for (const auto& t : expected_tensors(c)) {
        if (!is_linear_weight(t.name)) continue;
        const WeightFormat f = linear_format(c, t.name, prefix);
        const std::string fname(weight_format_name(f));
        int64_t bytes = 0, rank_bytes = 0;
        for (const StoredTensor& st : stored_tensors(c, t, f, prefix)) {
            const int64_t b = static_cast<int64_t>(ckpt.get(st.name).nbytes());
            bytes += b;
            rank_bytes += t.shard != ShardKind::Replicated && !st.scalar ? b / tp : b;
        }
        table.add(t.name, fname, bytes, rank_bytes);
    }
    table.print(tp);
}

// GGUF: the tensors by ggml type, then each linear's runtime format (GgufBlock keeps the file's
// blocks; F32/F16/BF16 load dense) and the bytes by format in the file and on each of `tp` ranks.
void print_gguf_layout(const ModelConfig& c, const GgufModel& g, int tp) {
    std::map<std::string, std::pair<int64_t, int64_t>> by_type;  // count, bytes
    int64_t total = 0;
    for (const GgufTensorInfo* t : g.tensors()) {
        auto& e = by_type[gguf_type_name(t->type)];
        ++e.first;
        e.second += static_cast<int64_t>(t->nbytes);
        total += static_cast<int64_t>(t->nbytes);
    }
    std::printf("tensors      %zu in %zu GGUF file(s), %s\n", g.tensors().size(), g.files().size(),
                human_bytes(static_cast<double>(total)).c_str());
    for (const auto& [type, e] : by_type)
        std::printf("  %-10s %6lld tensors  %s\n", type.c_str(), (long long)e.first,
                    human_bytes(static_cast<double>(e.second)).c_str());
    LinearTable table;
    int64_t sharded = 0, replicated = 0;
    for (const auto& t : expected_tensors(c)) {
        const GgufTensorRef ref = gguf_tensor_for(t.name);
        std::vector<const GgufTensorInfo*> parts;
        for (const char* n : {"attn_k_b.weight", "attn_v_b.weight", "attn_kv_b.weight"}) {
            if (!ref.name.empty()) break;  // kv_b_proj: rebuilt dense from the parts it has
            const std::string rest = t.name.substr(13);
            if (auto* p = g.tensor("blk." + rest.substr(0, rest.find('.')) + "." + n))
                parts.push_back(p);
        }
        if (!ref.name.empty()) {
            const GgufTensorInfo* p = g.tensor(ref.name);
            if (!p && ref.name == "output.weight") p = g.tensor("token_embd.weight");
            if (p) parts.push_back(p);
        }
        int64_t bytes = 0;
        std::string fname = "dense";
        for (const GgufTensorInfo* p : parts) {
            bytes += static_cast<int64_t>(p->nbytes) / (ref.expert >= 0 ? p->dims[2] : 1);
            const std::string type = gguf_type_name(p->type);
            fname = ref.name.empty() || !gguf_is_quantized(p->type) || !is_linear_weight(t.name)
                        ? "dense"
                        : fmt::format("gguf {}", type);
        }
        const int64_t rank_bytes = t.shard != ShardKind::Replicated ? bytes / tp : bytes;
        (t.shard != ShardKind::Replicated ? sharded : replicated) += rank_bytes;
        if (!is_linear_weight(t.name)) continue;
        table.add(t.name, fname, bytes, rank_bytes);
    }
    table.print(tp);
    std::printf("per rank     tp %d: %s (%s sharded + %s replicated), as stored\n", tp,
                human_bytes(static_cast<double>(sharded + replicated)).c_str(),
                human_bytes(static_cast<double>(sharded)).c_str(),
                human_bytes(static_cast<double>(replicated)).c_str());
}

// The checkpoint's weight files in order (safetensors shards or GGUF splits).
std::vector<std::string> weight_files(const Checkpoint& ckpt) {
    std::vector<std::string> out;
    if (const GgufModel* g = ckpt.gguf())
        for (const auto& f : g->files()) out.push_back(f->path());
    for (const auto& f : ckpt.files()) out.push_back(f->path());
    return out;
}

// --read-speed: the sequential read rate of the model's own files, the page cache dropped first
// where this user may (format/read_speed.h): the yardstick serve's load rate is judged against.
int run_read_speed(const std::string& dir) {
    // The files' names only: the checkpoint's own mappings would keep its header pages cached.
    const std::vector<std::string> files = weight_files(Checkpoint::open(dir));
    if (files.empty()) bad_input("{}: no weight files to read", dir);
    const ReadSpeed r = measure_read_speed(files);
    std::printf("read speed   %d file(s), %.3f GB in %.3f s: %.3f GB/s sequential; %s\n", r.files,
                static_cast<double>(r.bytes) / 1e9, r.seconds, r.gb_per_s(),
                r.cache_note().c_str());
    return 0;
}

int run_inspect(const std::string& model_arg, int tp, bool read_speed) {
    const std::string dir = resolve_model(model_arg);
    if (read_speed) return run_read_speed(dir);
    ModelConfig c = load_model_config(dir);
    Checkpoint ckpt = Checkpoint::open(dir);
    if (tp < 1) bad_input("--tp {} must be at least 1", tp);
    // Once (it logs what it skips), quantised shards included.
    validate_checkpoint(c, ckpt, Layout(tp, false));

    std::printf("model        %s\n", dir.c_str());
    std::printf("model_type   %s%s\n", c.model_type.c_str(),
                c.multimodal ? fmt::format(" (text model of {})", c.outer_model_type).c_str() : "");
    std::printf("layers       %lld (%lld dense, then MoE)\n", (long long)c.num_hidden_layers,
                (long long)c.first_k_dense_replace);
    std::printf("hidden       %lld, vocab %lld, intermediate %lld\n", (long long)c.hidden_size,
                (long long)c.vocab_size, (long long)c.intermediate_size);
    std::printf(
        "attention    MLA, %lld heads, q_lora_rank %s, kv_lora_rank %lld, "
        "qk_nope %lld, qk_rope %lld, v %lld\n",
        (long long)c.num_attention_heads,
        c.q_lora_rank ? std::to_string(c.q_lora_rank).c_str() : "null", (long long)c.kv_lora_rank,
        (long long)c.qk_nope_head_dim, (long long)c.qk_rope_head_dim, (long long)c.v_head_dim);
    std::printf(
        "experts      %lld routed (top %lld, %lld groups, top %lld groups), %lld shared, "
        "width %lld, scaling %.4g, norm_topk_prob %s\n",
        (long long)c.n_routed_experts, (long long)c.num_experts_per_tok, (long long)c.n_group,
        (long long)c.topk_group, (long long)c.n_shared_experts, (long long)c.moe_intermediate_size,
        c.routed_scaling_factor, c.norm_topk_prob ? "true" : "false");
    if (c.rope_scaling.yarn)
        std::printf("rope         theta %g, YaRN factor %g over %lld, mscale %g / %g\n",
                    c.rope_theta, c.rope_scaling.factor,
                    (long long)c.rope_scaling.original_max_position_embeddings,
                    c.rope_scaling.mscale, c.rope_scaling.mscale_all_dim);
    else
        std::printf("rope         theta %g, no scaling\n", c.rope_theta);
    std::printf("context      %lld positions\n", (long long)c.max_position_embeddings);

    const std::string prefix = text_model_prefix(c, ckpt);
    if (const GgufModel* g = ckpt.gguf()) {
        print_gguf_layout(c, *g, tp);
    } else {
        std::map<std::string, std::pair<int64_t, int64_t>> by_dtype;  // count, bytes
        int64_t total = 0, count = 0;
        for (const auto& name : ckpt.names()) {
            TensorView v = ckpt.get(name);
            auto& e = by_dtype[std::string(dtype_name(v.dtype()))];
            ++e.first;
            e.second += static_cast<int64_t>(v.nbytes());
            total += static_cast<int64_t>(v.nbytes());
            ++count;
        }
        std::printf("tensors      %lld in %zu file(s), %s\n", (long long)count, ckpt.files().size(),
                    human_bytes(static_cast<double>(total)).c_str());
        for (const auto& [dt, e] : by_dtype)
            std::printf("  %-10s %6lld tensors  %s\n", dt.c_str(), (long long)e.first,
                        human_bytes(static_cast<double>(e.second)).c_str());

        print_linear_formats(c, ckpt, prefix, tp);

        int64_t sharded = 0, replicated = 0;
        for (const auto& t : expected_tensors(c)) {
            const WeightFormat f =
                is_linear_weight(t.name) ? linear_format(c, t.name, prefix) : WeightFormat::Dense;
            for (const StoredTensor& st : stored_tensors(c, t, f, prefix)) {
                const int64_t b = static_cast<int64_t>(ckpt.get(st.name).nbytes());
                const bool split = t.shard != ShardKind::Replicated && !st.scalar;
                (split ? sharded : replicated) += split ? b / tp : b;
            }
        }
        std::printf("per rank     tp %d: %s (%s sharded + %s replicated), as stored\n", tp,
                    human_bytes(static_cast<double>(sharded + replicated)).c_str(),
                    human_bytes(static_cast<double>(sharded)).c_str(),
                    human_bytes(static_cast<double>(replicated)).c_str());
    }
    const int64_t kv_token = c.num_hidden_layers * (c.kv_lora_rank + c.qk_rope_head_dim);
    std::string note;
    const DType kv = resolve_kv_cache_dtype(KvCacheDtype::Auto, c, &note);
    std::printf(
        "KV cache     %lld values per token (MLA latent, every rank): %s in BF16, %s in "
        "FP8; --kv-cache-dtype auto stores %s%s\n",
        (long long)kv_token, human_bytes(static_cast<double>(kv_token * 2)).c_str(),
        human_bytes(static_cast<double>(kv_token)).c_str(),
        kv == DType::F8_E4M3 ? "FP8 e4m3" : "F32 on the CPU",
        kv == DType::F8_E4M3 ? fmt::format(" ({})", c.quant.kv_cache_field).c_str() : "");
    return 0;
}

}  // namespace

Run add_inspect(CLI::App& app) {
    auto model = std::make_shared<std::string>();
    auto tp = std::make_shared<int>(1);
    app.add_option("model", *model, "model folder (default: the shipped model)");
    app.add_option("--tp", *tp, "tensor-parallel ranks to report bytes for (default 1)");
    auto read_speed = std::make_shared<bool>(false);
    app.add_flag("--read-speed", *read_speed,
                 "read every weight file front to back, the page cache dropped first where "
                 "allowed, and print GB, seconds and GB/s: the disk's rate serve's load is judged "
                 "against");
    return [model, tp, read_speed] { return run_inspect(*model, *tp, *read_speed); };
}

}  // namespace myriad::cli
