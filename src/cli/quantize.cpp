// myriad quantize: a BF16/F16/F32 checkpoint to ModelOpt NVFP4 or DeepSeek FP8 blocks, in the
// layouts the published checkpoints use, so every engine that reads those reads ours.
//
// NVFP4 (reference.md §2.1-2.2): by default only the routed experts, as NVIDIA's DeepSeek and
// Kimi releases; --scope all-linear quantises every linear inside the decoder layers (never
// lm_head, embeddings, norms or the router). input_scale = max |input| / (6 * 448), the largest
// input each linear saw while the calibration text (--calib, else a text built into myriad) ran
// through the BF16 model on the CPU; an expert no calibration token reached takes the largest
// scale of the same projection among its layer's experts.
// FP8 (reference.md §2.3): float8_e4m3fn weights with a float32 weight_scale_inv per 128 x 128
// block (amax / 448); activations are dynamic, so no calibration. Default scope all-linear, as
// DeepSeek's checkpoints; with --scope experts the others are listed in ignored_layers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "format/checkpoint.h"
#include "format/quant_encode.h"
#include "format/safetensors_writer.h"
#include "model/activation_recorder.h"
#include "model/deepseek_v3.h"
#include "model/kv_cache.h"
#include "model/linear_format.h"
#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "model/weights.h"
#include "parallel/cpu_communicator.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text_file.h"
#include "util/thread_pool.h"

namespace myriad::cli {

extern const char* const kCalibrationText;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

struct QuantizeArgs {
    std::string model, out, to, scope, calib;
    int threads = 0;
    int64_t calib_tokens = 2048;
    double shard_gb = 4;
};

std::string module_of(const std::string& weight_name) {
    return weight_name.substr(0, weight_name.size() - 7);  // less ".weight"
}

json read_json(const fs::path& p) {
    std::ifstream f(p);
    if (!f) bad_input("{}: cannot read the file", p.string());
    try {
        return json::parse(f);
    } catch (const json::exception& e) {
        bad_input("{}: invalid JSON ({})", p.string(), e.what());
    }
}

// Input amax of every linear, from the calibration text run through the model.
std::map<std::string, float> calibrate(const std::string& dir, const ModelConfig& c,
                                       const Checkpoint& ckpt, const QuantizeArgs& a) {
    auto tokenizer = Tokenizer::load(dir);
    const std::string text =
        a.calib.empty() ? kCalibrationText : read_text_file(a.calib, "--calib");
    std::vector<TokenId> ids = tokenizer->encode(text, false);
    if (ids.empty()) bad_input("--calib {}: the text has no tokens", a.calib);
    if (static_cast<int64_t>(ids.size()) > a.calib_tokens) ids.resize(a.calib_tokens);
    ActivationRecorder ops(a.threads > 0 ? a.threads : static_cast<int>(hardware_threads()));
    auto group = std::make_shared<CpuCommGroup>(1);
    CpuCommunicator comm(group, 0);
    DeepseekV3 model(c, ckpt, ops, comm);
    ops.name_weights(model.weights());
    // Windows of at most 512 tokens, each a fresh sequence (short contexts are what a
    // calibration needs; long ones only cost time).
    const int64_t window = std::min<int64_t>(512, c.max_position_embeddings);
    const int64_t block = 16;
    KvCache cache(c, ops, window / block + 1, block);
    std::vector<float> logits(static_cast<size_t>(c.vocab_size));
    for (size_t begin = 0; begin < ids.size(); begin += static_cast<size_t>(window)) {
        const size_t end = std::min(ids.size(), begin + static_cast<size_t>(window));
        std::vector<TokenId> part(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                  ids.begin() + static_cast<std::ptrdiff_t>(end));
        const auto last = static_cast<int32_t>(part.size() - 1);
        model.forward(single_sequence_step(part, 0, block, {last}), cache, logits.data());
    }
    log::info("calibration: {} tokens of {}", ids.size(),
              a.calib.empty() ? "the built-in text" : a.calib);
    return ops.input_amax();
}

// Streams tensors into shards of about `limit` bytes: model.safetensors when one is enough,
// else model-0000i-of-0000N.safetensors with model.safetensors.index.json.
class ShardWriter {
  public:
    ShardWriter(fs::path dir, size_t limit) : dir_(std::move(dir)), limit_(limit) {}
    void add(TensorToWrite t) {
        const size_t n = t.bytes.size();
        if (!pending_.empty() && pending_bytes_ + n > limit_) flush();
        pending_bytes_ += n;
        total_ += n;
        pending_.push_back(std::move(t));
    }
    void finish() {
        if (!pending_.empty()) flush();
        const size_t count = shards_.size();
        json index = {{"metadata", {{"total_size", total_}}}, {"weight_map", json::object()}};
        for (size_t i = 0; i < count; ++i) {
            const std::string name =
                count == 1 ? "model.safetensors"
                           : fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, count);
            fs::rename(dir_ / shards_[i].first, dir_ / name);
            for (const std::string& t : shards_[i].second) index["weight_map"][t] = name;
        }
        if (count > 1) std::ofstream(dir_ / "model.safetensors.index.json") << index.dump(2);
    }
    size_t total() const { return total_; }

  private:
    void flush() {
        const std::string tmp = fmt::format(".shard-{}.tmp", shards_.size());
        write_safetensors((dir_ / tmp).string(), pending_, {{"format", "pt"}});
        std::vector<std::string> names;
        for (const auto& t : pending_) names.push_back(t.name);
        shards_.emplace_back(tmp, std::move(names));
        pending_.clear();
        pending_bytes_ = 0;
    }
    fs::path dir_;
    size_t limit_, pending_bytes_ = 0, total_ = 0;
    std::vector<TensorToWrite> pending_;
    std::vector<std::pair<std::string, std::vector<std::string>>> shards_;
};

TensorToWrite scalar_f32(const std::string& name, float v) {
    TensorToWrite t{name, DType::F32, {}, std::vector<uint8_t>(4)};
    std::memcpy(t.bytes.data(), &v, 4);
    return t;
}

int run_quantize(QuantizeArgs& a) {
    if (a.to != "nvfp4" && a.to != "fp8") bad_input("--to {}: use nvfp4 or fp8", a.to);
    const bool nvfp4 = a.to == "nvfp4";
    if (a.scope.empty()) a.scope = nvfp4 ? "experts" : "all-linear";
    if (a.scope != "experts" && a.scope != "all-linear")
        bad_input("--scope {}: use experts or all-linear", a.scope);
    if (!nvfp4 && !a.calib.empty())
        log::warn("--calib: FP8 blocks scale activations dynamically; the text is not used");
    const std::string dir = resolve_model(a.model);
    const ModelConfig c = load_model_config(dir);
    if (c.quant.method != QuantMethod::None)
        bad_input("{}: the checkpoint is already quantised ({}, from {}); quantize a BF16 one", dir,
                  quant_method_name(c.quant.method), c.quant.source);
    const fs::path out(a.out);
    if (fs::exists(out) && !fs::is_empty(out))
        bad_input("OUT {}: the folder exists and is not empty; give a new one", a.out);
    const Checkpoint ckpt = Checkpoint::open(dir);
    validate_checkpoint(c, ckpt);
    const std::string prefix = text_model_prefix(c, ckpt);

    // The linears to quantise (names without the prefix); the others stay as they are.
    std::set<std::string> chosen;
    std::vector<std::string> skipped;
    for (const ExpectedTensor& t : expected_tensors(c)) {
        if (!is_linear_weight(t.name) || !t.name.starts_with("model.layers.")) continue;
        if (a.scope == "experts" && t.name.find(".mlp.experts.") == std::string::npos) continue;
        if (nvfp4 && t.shape[1] % 16 != 0) {
            skipped.push_back(module_of(t.name));
            continue;
        }
        chosen.insert(t.name);
    }
    if (!skipped.empty())
        log::warn("{} linears have inputs not a multiple of 16 and stay BF16 (e.g. {})",
                  skipped.size(), skipped.front());

    std::map<std::string, float> amax;
    if (nvfp4) amax = calibrate(dir, c, ckpt, a);
    // An expert no token reached: the largest input of that projection among its layer's experts.
    auto input_amax = [&](const std::string& module) {
        if (auto it = amax.find(module); it != amax.end() && it->second > 0) return it->second;
        const size_t at = module.find(".mlp.experts.");
        float best = 0;
        if (at != std::string::npos) {
            const std::string layer = module.substr(0, at), proj = module.substr(module.rfind('.'));
            for (const auto& [name, v] : amax)
                if (name.starts_with(layer + ".mlp.experts.") && name.ends_with(proj))
                    best = std::max(best, v);
        }
        return best > 0 ? best : 1.0f;
    };

    fs::create_directories(out);
    ShardWriter writer(out, static_cast<size_t>(a.shard_gb * 1e9));
    std::vector<float> w;
    for (const std::string& full : ckpt.names()) {
        const TensorView v = ckpt.get(full);
        const std::string name = full.starts_with(prefix) ? full.substr(prefix.size()) : full;
        if (!chosen.count(name)) {
            writer.add(
                {full, v.dtype(), v.shape(), std::vector<uint8_t>(v.data, v.data + v.nbytes())});
            continue;
        }
        if (v.dtype() != DType::BF16 && v.dtype() != DType::F16 && v.dtype() != DType::F32)
            bad_input("{}: tensor {} is {}; quantize reads BF16, F16 or F32 weights", *v.file, full,
                      dtype_name(v.dtype()));
        const int64_t n = v.shape()[0], k = v.shape()[1];
        w.resize(static_cast<size_t>(n * k));
        convert_to_f32(v.dtype(), v.data, w.data(), w.size());
        const std::string base = prefix + module_of(name);
        if (nvfp4) {
            Nvfp4Quantized q = nvfp4_quantize(w.data(), n, k);
            writer.add({base + ".weight", DType::U8, {n, k / 2}, std::move(q.packed)});
            writer.add({base + ".weight_scale", DType::F8_E4M3, {n, k / 16}, std::move(q.scales)});
            writer.add(scalar_f32(base + ".weight_scale_2", q.global_scale));
            writer.add(scalar_f32(base + ".input_scale", input_amax(module_of(name)) / 2688.0f));
        } else {
            Fp8BlockQuantized q = fp8_block_quantize(w.data(), n, k);
            const int64_t nb = (n + 127) / 128, kb = (k + 127) / 128;
            writer.add({base + ".weight", DType::F8_E4M3, {n, k}, std::move(q.codes)});
            std::vector<uint8_t> s(q.scale_inv.size() * 4);
            std::memcpy(s.data(), q.scale_inv.data(), s.size());
            writer.add({base + ".weight_scale_inv", DType::F32, {nb, kb}, std::move(s)});
        }
    }
    writer.finish();

    // What stays dense, as the published checkpoints spell it.
    json ignore = json::array();
    if (a.scope == "experts") {
        for (const char* g : {"lm_head", "*.self_attn*", "*.shared_experts*", "*mlp.gate"})
            ignore.push_back(g);
        for (int64_t l = 0; l < c.num_hidden_layers; ++l)
            if (!c.is_moe_layer(l)) ignore.push_back(fmt::format("*.layers.{}.mlp*", l));
    } else {
        ignore.push_back("lm_head");
    }
    for (const std::string& m : skipped) ignore.push_back(prefix + m);

    json config = read_json(fs::path(dir) / "config.json");
    if (nvfp4) {
        const json fp4 = {
            {"num_bits", 4}, {"type", "float"}, {"group_size", 16}, {"dynamic", false}};
        config["quantization_config"] = {
            {"quant_method", "modelopt"},
            {"quant_algo", "NVFP4"},
            {"ignore", ignore},
            {"config_groups",
             {{"group_0",
               {{"weights", fp4}, {"input_activations", fp4}, {"targets", {"Linear"}}}}}}};
        const json hf = {{"producer", {{"name", "myriad"}, {"version", "0"}}},
                         {"quantization",
                          {{"quant_algo", "NVFP4"},
                           {"kv_cache_quant_algo", nullptr},
                           {"group_size", 16},
                           {"exclude_modules", ignore}}}};
        std::ofstream(out / "hf_quant_config.json") << hf.dump(2) << "\n";
    } else {
        config["quantization_config"] = {{"activation_scheme", "dynamic"},
                                         {"fmt", "e4m3"},
                                         {"quant_method", "fp8"},
                                         {"weight_block_size", {128, 128}}};
        if (a.scope == "experts") config["quantization_config"]["ignored_layers"] = ignore;
    }
    std::ofstream(out / "config.json") << config.dump(2) << "\n";

    // Everything else in the folder (tokenizer, templates, generation config, code) as it is.
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string f = e.path().filename().string();
        if (!e.is_regular_file() || f.ends_with(".safetensors") || f == "config.json" ||
            f == "model.safetensors.index.json" || f == "hf_quant_config.json")
            continue;
        fs::copy_file(e.path(), out / f, fs::copy_options::overwrite_existing);
    }
    log::info("{}: {} linears in {} ({} scope; {} left BF16 for their shape), {:.1f} MB", a.out,
              chosen.size(), nvfp4 ? "NVFP4" : "FP8 blocks", a.scope, skipped.size(),
              writer.total() / 1e6);
    return 0;
}

}  // namespace

Run add_quantize(CLI::App& app) {
    auto a = std::make_shared<QuantizeArgs>();
    app.add_option("model", a->model, "BF16 model folder")->required();
    app.add_option("--to", a->to, "nvfp4 (ModelOpt) or fp8 (DeepSeek 128x128 blocks)")->required();
    app.add_option("out", a->out, "new folder for the quantised checkpoint")->required();
    app.add_option("--scope", a->scope,
                   "experts (routed experts only; nvfp4's default) or all-linear (every linear in "
                   "the decoder layers; fp8's default)");
    app.add_option("--calib", a->calib,
                   "text whose activations set NVFP4 input_scale (default: a built-in text)");
    app.add_option("--calib-tokens", a->calib_tokens, "calibration tokens at most (default 2048)");
    app.add_option("--threads", a->threads, "CPU threads (default: all cores)");
    app.add_option("--shard-gb", a->shard_gb, "weights per output file, in GB (default 4)");
    return [a] { return run_quantize(*a); };
}

}  // namespace myriad::cli
