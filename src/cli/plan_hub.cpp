// Plans for ORG/NAME on the hub without downloading weights: config.json, hf_quant_config.json,
// the index, and each shard's safetensors header fetched by HTTP Range.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "cli/plan_source.h"
#include "format/json_file.h"
#include "format/quant_config.h"
#include "format/safetensors.h"
#include "hub/hub_api.h"
#include "util/error.h"

namespace myriad::cli {

namespace {

// The header of one remote shard: the first 256 KiB usually hold it; a longer one takes a second
// request.
SafetensorsHeader remote_header(const hub::RepoRef& ref, const std::string& commit,
                                const hub::HubFile& f, const hub::HttpSettings& s) {
    const std::string where = ref.repo + "/" + f.path;
    if (f.size < 8) bad_input("{}: {} bytes, too short for a safetensors file", where, f.size);
    const uint64_t first = std::min<uint64_t>(static_cast<uint64_t>(f.size), 256 << 10);
    std::string bytes = hub::fetch_range(ref.repo, commit, f.path, 0, first - 1, s);
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i)
        len = (len << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
    if (len > (uint64_t{100} << 20) || 8 + len > static_cast<uint64_t>(f.size))
        bad_input(
            "{}: header length {} does not fit the file of {} bytes: not a safetensors "
            "file?",
            where, len, f.size);
    if (8 + len > bytes.size())
        bytes += hub::fetch_range(ref.repo, commit, f.path, bytes.size(), 8 + len - 1, s);
    return parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                    static_cast<uint64_t>(f.size), where);
}

}  // namespace

PlanModel plan_model_from_hub(const std::string& name, const hub::RepoRef& ref,
                              const hub::RepoInfo& info, const hub::HttpSettings& s) {
    auto find = [&](const std::string& path) -> const hub::HubFile* {
        for (const auto& f : info.files)
            if (f.path == path) return &f;
        return nullptr;
    };
    if (!find("config.json"))
        bad_input("{}: the repository has no config.json at revision {}: not a model to plan",
                  ref.text(), info.commit);
    const std::string src = ref.repo + "/config.json";
    ModelConfig c = parse_model_config(
        parse_json(hub::fetch_small_file(ref.repo, info.commit, "config.json", s), src), src);
    if (find("hf_quant_config.json")) {
        const std::string hsrc = ref.repo + "/hf_quant_config.json";
        c.quant = parse_quant_config(
            c.quantization_config, src,
            parse_json(hub::fetch_small_file(ref.repo, info.commit, "hf_quant_config.json", s),
                       hsrc),
            hsrc);
    }
    // The shards: the index's, else every *.safetensors file.
    std::vector<const hub::HubFile*> shards;
    if (find("model.safetensors.index.json")) {
        const std::string isrc = ref.repo + "/model.safetensors.index.json";
        const auto index = nlohmann::json::parse(
            hub::fetch_small_file(ref.repo, info.commit, "model.safetensors.index.json", s),
            nullptr, false);
        if (index.is_discarded() || !index.contains("weight_map") ||
            !index["weight_map"].is_object())
            bad_input("{}: not valid JSON with a \"weight_map\" object", isrc);
        std::set<std::string> names;
        for (const auto& [tensor, file] : index["weight_map"].items())
            if (file.is_string()) names.insert(file.get<std::string>());
        for (const auto& n : names) {
            const hub::HubFile* f = find(n);
            if (!f) bad_input("{}: names shard {}, which the repository lacks", isrc, n);
            shards.push_back(f);
        }
    } else {
        for (const auto& f : info.files)
            if (f.path.ends_with(".safetensors")) shards.push_back(&f);
    }
    std::vector<SafetensorsHeader> headers(shards.size());
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::optional<Error> failure;
    std::vector<std::thread> threads;
    for (size_t t = 0; t < std::min<size_t>(8, shards.size()); ++t) {
        threads.emplace_back([&] {
            for (size_t i; (i = next++) < shards.size();) {
                try {
                    headers[i] = remote_header(ref, info.commit, *shards[i], s);
                } catch (const Error& e) {
                    std::lock_guard lock(mu);
                    if (!failure) failure = e;
                    return;
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    if (failure) throw *failure;
    std::vector<TensorInfo> tensors;
    for (auto& h : headers) tensors.insert(tensors.end(), h.tensors.begin(), h.tensors.end());
    return plan_model_from(name, std::move(c), tensors);
}

PlanModel load_hub_plan_model(const std::string& model) {
    const auto ref = hub::parse_repo_id(model);
    if (!ref) bad_input("{}: neither a folder nor ORG/NAME[@REVISION]", model);
    const hub::HttpSettings s = hub::HttpSettings::from_env();
    return plan_model_from_hub(model, *ref, hub::fetch_repo_info(*ref, s), s);
}

}  // namespace myriad::cli
