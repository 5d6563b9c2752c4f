// make_kimi_checkpoint: writes a checkpoint folder in exactly the layout of nvidia/Kimi-K2.5-NVFP4
// (NVIDIA's ModelOpt NVFP4 export of Kimi-K2.5), with random weights: the real tensor names,
// dtypes and shapes (or smaller widths for a CI-sized copy), the real configs with the layer count
// set, a model.safetensors.index.json over shards cut as Hugging Face's save_pretrained cuts them
// (5 GB each by default, named model-000NN-of-000MM.safetensors), Kimi-K2.5's chat template and a
// tokenizer in Kimi's layout. See tools/make_kimi_checkpoint/README.md.
//
// Written in C++ so that it runs where only a bare system is (the GPU machine has no numpy), and
// fast: every tensor's bytes are a function of (seed, name, position), generated in chunks by
// several threads and written in place (pwrite) into files whose headers are written first, so no
// shard is ever held in memory.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "format/safetensors_stream_writer.h"
#include "kimi_files.h"
#include "kimi_tensors.h"
#include "tensor_fill.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace fs = std::filesystem;
using namespace myriad;
using namespace myriad::tools;

namespace {

struct Args {
    std::string out;
    int64_t layers = 2;
    bool ci = false;
    std::string max_shard_size = "5GB";
    uint64_t seed = 1;
    int threads = 0;
    bool drop_cache = false;
    bool force = false;
    bool dry_run = false;
    std::string config_dir = MYRIAD_SOURCE_DIR "/tests/data/configs/kimi-k2.5-nvfp4";
    std::string chat_template = MYRIAD_SOURCE_DIR "/tests/data/chat_templates/kimi-k2.5.jinja";
    std::string base_ranks = MYRIAD_TOKENIZER_DIR "/o200k_base/tiktoken.model";
    int64_t experts_per_tok = 0;
};

// "5GB", "64KB", "1.5GiB", "123" (bytes): decimal and binary units as save_pretrained reads them.
uint64_t parse_size(const std::string& s) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(s, &used);
    } catch (const std::exception&) {
        bad_input("--max-shard-size {}: not a size (e.g. 5GB, 64KB, 1GiB)", s);
    }
    std::string unit = s.substr(used);
    std::transform(unit.begin(), unit.end(), unit.begin(), ::toupper);
    const std::pair<const char*, double> units[] = {
        {"", 1},     {"B", 1},        {"KB", 1e3},        {"MB", 1e6},
        {"GB", 1e9}, {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}};
    for (const auto& [name, scale] : units)
        if (unit == name && v > 0) return static_cast<uint64_t>(v * scale);
    bad_input("--max-shard-size {}: not a size (e.g. 5GB, 64KB, 1GiB)", s);
}

// huggingface_hub's split_state_dict_into_shards: tensors in order; one larger than the limit
// gets a shard of its own (placed when it is met), otherwise a tensor that would tip the current
// shard over the limit starts a new one.
std::vector<std::vector<size_t>> cut_shards(const std::vector<PlannedTensor>& tensors,
                                            uint64_t max_bytes) {
    std::vector<std::vector<size_t>> shards;
    std::vector<size_t> current;
    uint64_t current_bytes = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const uint64_t b = tensors[i].bytes();
        if (b > max_bytes) {
            shards.push_back({i});
            continue;
        }
        if (current_bytes + b > max_bytes) {
            shards.push_back(std::move(current));
            current.clear();
            current_bytes = 0;
        }
        current.push_back(i);
        current_bytes += b;
    }
    if (!current.empty()) shards.push_back(std::move(current));
    return shards;
}

struct WidthFlags {
    int64_t hidden = -1, intermediate = -1, moe_intermediate = -1, experts = -1, heads = -1;
    int64_t q_lora_rank = -1, kv_lora_rank = -1, qk_nope = -1, qk_rope = -1, v_head = -1;
    int64_t vision_hidden = -1, vision_mlp = -1, vision_blocks = -1;
};

struct Chunk {
    size_t file, slot;  // the shard and the tensor's place in it
    uint64_t offset, bytes;
};

void prepare_out(const Args& a) {
    if (fs::exists(a.out) && !fs::is_directory(a.out))
        bad_input("--out {}: exists and is not a folder", a.out);
    if (fs::exists(a.out) && !fs::is_empty(a.out)) {
        if (!a.force)
            bad_input("--out {}: not empty (pass --force to replace a checkpoint written here)",
                      a.out);
        if (!fs::exists(fs::path(a.out) / "config.json"))
            bad_input("--out {}: --force replaces only a checkpoint folder (no config.json here)",
                      a.out);
        fs::remove_all(a.out);
    }
    fs::create_directories(a.out);
}

int run(int argc, char** argv) {
    Args a;
    CLI::App app{"Writes a random-weight checkpoint in the exact layout of nvidia/Kimi-K2.5-NVFP4"};
    app.add_option("--out", a.out, "output folder (created)")->required();
    app.add_option("--layers", a.layers, "decoder layers (default 2: one dense, one MoE)");
    app.add_flag("--ci", a.ci,
                 "small widths for a CI-sized copy (hidden 32, 8 experts, 4 heads, ...); "
                 "the vocabulary stays Kimi's 163,840");
    WidthFlags flags;  // -1: the config's (or --ci's) value
    app.add_option("--hidden", flags.hidden, "hidden_size");
    app.add_option("--intermediate", flags.intermediate, "intermediate_size (dense layers)");
    app.add_option("--moe-intermediate", flags.moe_intermediate, "moe_intermediate_size");
    app.add_option("--experts", flags.experts, "n_routed_experts");
    app.add_option("--experts-per-tok", a.experts_per_tok, "num_experts_per_tok");
    app.add_option("--heads", flags.heads, "num_attention_heads");
    app.add_option("--q-lora-rank", flags.q_lora_rank, "q_lora_rank");
    app.add_option("--kv-lora-rank", flags.kv_lora_rank, "kv_lora_rank");
    app.add_option("--qk-nope-head-dim", flags.qk_nope, "qk_nope_head_dim");
    app.add_option("--qk-rope-head-dim", flags.qk_rope, "qk_rope_head_dim");
    app.add_option("--v-head-dim", flags.v_head, "v_head_dim");
    app.add_option("--vision-hidden", flags.vision_hidden, "vision tower width");
    app.add_option("--vision-mlp", flags.vision_mlp, "vision tower MLP width");
    app.add_option("--vision-blocks", flags.vision_blocks, "vision tower blocks");
    app.add_option("--max-shard-size", a.max_shard_size,
                   "shard size limit as save_pretrained takes it (default 5GB)");
    app.add_option("--seed", a.seed, "weights seed (default 1)");
    app.add_option("--threads", a.threads, "writer threads (default: all cores)");
    app.add_flag("--drop-cache", a.drop_cache,
                 "fdatasync each shard and drop it from the page cache, so that a later load "
                 "reads the disk");
    app.add_flag("--force", a.force, "replace a checkpoint already in --out");
    app.add_flag("--dry-run", a.dry_run,
                 "print the tensors' and shards' sizes without writing anything");
    app.add_option("--config-dir", a.config_dir,
                   "config.json + hf_quant_config.json to start from (default: the "
                   "repository's tests/data/configs/kimi-k2.5-nvfp4)");
    app.add_option("--chat-template", a.chat_template, "chat template to ship");
    app.add_option("--base-ranks", a.base_ranks,
                   "a tiktoken file of at least 163,584 ranks (default: the build's o200k_base)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    KimiShape s = shape_of_config(a.config_dir + "/config.json");
    int64_t experts_per_tok = 8;
    if (a.ci) {
        s.hidden = 32;
        s.intermediate = 64;
        s.moe_intermediate = 32;
        s.experts = 8;
        experts_per_tok = 2;
        s.heads = 4;
        s.q_lora_rank = 32;
        s.kv_lora_rank = 32;
        s.qk_nope = 16;
        s.qk_rope = 16;
        s.v_head = 16;
        s.vision_hidden = 16;
        s.vision_mlp = 32;
        s.vision_blocks = 1;
    }
    auto set = [](int64_t& field, int64_t flag) {
        if (flag >= 0) field = flag;
    };
    set(s.hidden, flags.hidden);
    set(s.intermediate, flags.intermediate);
    set(s.moe_intermediate, flags.moe_intermediate);
    set(s.experts, flags.experts);
    set(s.heads, flags.heads);
    set(s.q_lora_rank, flags.q_lora_rank);
    set(s.kv_lora_rank, flags.kv_lora_rank);
    set(s.qk_nope, flags.qk_nope);
    set(s.qk_rope, flags.qk_rope);
    set(s.v_head, flags.v_head);
    set(s.vision_hidden, flags.vision_hidden);
    set(s.vision_mlp, flags.vision_mlp);
    set(s.vision_blocks, flags.vision_blocks);
    if (a.experts_per_tok > 0) experts_per_tok = a.experts_per_tok;
    if (a.layers < 1) bad_input("--layers {}: at least 1", a.layers);
    s.layers = a.layers;
    if (s.first_dense > s.layers) s.first_dense = s.layers;
    if (experts_per_tok > s.experts)
        bad_input("--experts-per-tok {} is more than the {} experts", experts_per_tok, s.experts);
    const uint64_t max_shard = parse_size(a.max_shard_size);
    const int threads = a.threads > 0 ? a.threads : hardware_threads();

    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<PlannedTensor> tensors = kimi_tensors(s);
    // Shards; inside each, tensors as the safetensors library orders them (larger dtypes first,
    // then by name), which keeps every tensor aligned to its dtype.
    const auto shards = cut_shards(tensors, max_shard);
    const size_t n = shards.size();
    if (a.dry_run) {
        uint64_t all = 0, vision = 0;
        for (const PlannedTensor& t : tensors) {
            all += t.bytes();
            if (!t.name.starts_with("language_model.")) vision += t.bytes();
        }
        std::printf(
            "make_kimi_checkpoint: would write %zu tensors, %.3f GB (%.3f GB of them vision "
            "tower and projector) in %zu shards, %lld layers\n",
            tensors.size(), all / 1e9, vision / 1e9, n, static_cast<long long>(s.layers));
        return 0;
    }
    prepare_out(a);
    write_configs(a.config_dir, s, experts_per_tok, a.out);
    write_generation_config(a.out);
    write_chat_template(a.chat_template, a.out);
    write_tokenizer(a.base_ranks, a.out);

    std::vector<std::unique_ptr<SafetensorsStreamWriter>> files;
    std::vector<std::vector<size_t>> order(n);  // tensor index of each slot
    nlohmann::json weight_map = nlohmann::json::object();
    uint64_t total = 0;
    for (size_t f = 0; f < n; ++f) {
        order[f] = shards[f];
        std::stable_sort(order[f].begin(), order[f].end(), [&](size_t x, size_t y) {
            const size_t ax = dtype_size(tensors[x].dtype), ay = dtype_size(tensors[y].dtype);
            return ax != ay ? ax > ay : tensors[x].name < tensors[y].name;
        });
        const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", f + 1, n);
        std::vector<TensorSpec> specs;
        for (size_t i : order[f]) {
            specs.push_back({tensors[i].name, tensors[i].dtype, tensors[i].shape});
            weight_map[tensors[i].name] = name;
            total += tensors[i].bytes();
        }
        files.push_back(std::make_unique<SafetensorsStreamWriter>(
            (fs::path(a.out) / name).string(), std::move(specs),
            std::map<std::string, std::string>{{"format", "pt"}}));
    }

    constexpr uint64_t kChunk = 16u << 20;  // a multiple of every element size
    std::vector<Chunk> chunks;
    for (size_t f = 0; f < n; ++f)
        for (size_t slot = 0; slot < order[f].size(); ++slot) {
            const uint64_t b = tensors[order[f][slot]].bytes();
            for (uint64_t at = 0; at < b; at += kChunk)
                chunks.push_back({f, slot, at, std::min(kChunk, b - at)});
        }
    std::vector<uint64_t> keys(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) keys[i] = tensor_key(a.seed, tensors[i].name);

    std::atomic<size_t> next{0};
    std::atomic<uint64_t> done_bytes{0};
    std::atomic<bool> failed{false};
    std::string error;
    std::mutex error_mutex;
    auto worker = [&] {
        std::vector<uint8_t> buf(kChunk);
        try {
            for (size_t c; !failed && (c = next++) < chunks.size();) {
                const Chunk& k = chunks[c];
                const size_t t = order[k.file][k.slot];
                fill_bytes(tensors[t].fill, keys[t], k.offset, buf.data(), k.bytes);
                files[k.file]->write(k.slot, k.offset, buf.data(), k.bytes);
                done_bytes += k.bytes;
            }
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!failed.exchange(true)) error = e.what();
        }
    };
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
    std::atomic<bool> writing{true};
    std::thread progress([&] {
        auto last = std::chrono::steady_clock::now();
        while (writing) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            if (std::chrono::steady_clock::now() - last < std::chrono::seconds(10)) continue;
            last = std::chrono::steady_clock::now();
            std::fprintf(stderr, "make_kimi_checkpoint: %.1f of %.1f GB written\n",
                         done_bytes.load() / 1e9, total / 1e9);
        }
    });
    for (auto& t : pool) t.join();
    writing = false;
    progress.join();
    if (failed) internal_error("{}", error);
    // Flushed (and dropped from the page cache) in parallel: one file per thread.
    std::atomic<size_t> next_file{0};
    pool.clear();
    for (int i = 0; i < std::min<int>(threads, static_cast<int>(n)); ++i)
        pool.emplace_back([&] {
            try {
                for (size_t f; !failed && (f = next_file++) < n;) files[f]->finish(a.drop_cache);
            } catch (const std::exception& e) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!failed.exchange(true)) error = e.what();
            }
        });
    for (auto& t : pool) t.join();
    if (failed) internal_error("{}", error);

    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weight_map;  // sorted by name, as transformers writes it
    {
        const std::string path = (fs::path(a.out) / "model.safetensors.index.json").string();
        std::ofstream f(path);
        f << index.dump(2) << "\n";
        if (!f) internal_error("{}: write failed", path);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "make_kimi_checkpoint: %s: %zu tensors, %.3f GB in %zu shards, %lld layers (hidden %lld, "
        "%lld experts), %.1f s (%.2f GB/s, %d threads%s)\n",
        a.out.c_str(), tensors.size(), total / 1e9, n, static_cast<long long>(s.layers),
        static_cast<long long>(s.hidden), static_cast<long long>(s.experts), secs,
        total / 1e9 / secs, threads, a.drop_cache ? ", page cache dropped" : "");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const Error& e) {
        std::fprintf(stderr, "make_kimi_checkpoint: %s\n", e.what());
        return e.kind() == ErrorKind::BadInput ? 2 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_kimi_checkpoint: %s\n", e.what());
        return 1;
    }
}
