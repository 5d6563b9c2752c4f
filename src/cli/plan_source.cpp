#include "cli/plan_source.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "format/gguf.h"
#include "format/json_file.h"
#include "format/safetensors.h"
#include "hub/hf_cache.h"
#include "model/gguf_config.h"
#include "util/error.h"

namespace myriad::cli {

namespace fs = std::filesystem;

PlanModel plan_model_from(std::string name, ModelConfig config,
                          const std::vector<TensorInfo>& headers) {
    PlanModel m;
    m.name = std::move(name);
    m.config = std::move(config);
    if (headers.empty()) {
        m.weights = plan::weights_from_config(m.config);
        return m;
    }
    m.weights = plan::weights_from_headers(m.config, headers);
    m.predicted = plan::weights_from_config(m.config);
    return m;
}

namespace {

// The tensors of every *.safetensors file in `dir` (headers only; the files are mapped, not read).
// Empty when the weights are not there (a folder of configs, a download in progress).
std::vector<TensorInfo> local_headers(const fs::path& dir) {
    std::vector<TensorInfo> out;
    std::vector<fs::path> files;
    // As Checkpoint::open: the index's shards, else model.safetensors, else every *.safetensors.
    if (fs::exists(dir / "model.safetensors.index.json")) {
        const auto index =
            read_json_file_unordered((dir / "model.safetensors.index.json").string());
        std::set<std::string> shards;
        if (index.contains("weight_map") && index["weight_map"].is_object())
            for (const auto& [name, file] : index["weight_map"].items())
                if (file.is_string()) shards.insert(file.get<std::string>());
        for (const auto& s : shards) {
            if (!fs::exists(dir / s)) return {};  // not all downloaded: plan from the config
            files.push_back(dir / s);
        }
    } else if (fs::exists(dir / "model.safetensors")) {
        files.push_back(dir / "model.safetensors");
    } else {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().extension() == ".safetensors") files.push_back(e.path());
        std::sort(files.begin(), files.end());
    }
    for (const auto& f : files) {
        SafetensorsFile file(f.string());
        out.insert(out.end(), file.tensors().begin(), file.tensors().end());
    }
    return out;
}

}  // namespace

bool looks_like_repo_id(const std::string& model) {
    std::error_code ec;
    return !fs::exists(model, ec) && hub::parse_repo_id(model).has_value();
}

PlanModel load_plan_model(const std::string& model) {
    if (model.ends_with(".gguf")) {
        const auto gguf = GgufModel::open(model);
        PlanModel m;
        m.name = model;
        m.config = gguf_model_config(*gguf);
        m.weights = plan::weights_from_gguf(m.config, *gguf);
        return m;
    }
    std::string path = model_path(model);
    fs::path p(path);
    if (fs::is_regular_file(p) && p.extension() == ".json") p = p.parent_path();
    if (!fs::exists(p / "config.json") && looks_like_repo_id(model))
        return load_hub_plan_model(model);
    ModelConfig config = load_model_config(p.string());
    return plan_model_from(model, std::move(config), local_headers(p));
}

}  // namespace myriad::cli
