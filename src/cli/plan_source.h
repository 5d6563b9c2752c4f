// What `plan` (and `pull`, before it downloads) plans for: the model's config and weights from a
// folder, an HF cache entry or the hub, and the GPUs from --gpus or NVML.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hub/hub_api.h"
#include "model/model_config.h"
#include "plan/gpu_spec.h"
#include "plan/weight_inventory.h"

namespace myriad::cli {

struct PlanModel {
    std::string name;  // as given
    ModelConfig config;
    plan::WeightInventory weights;  // from the headers when available, else the config
    std::optional<plan::WeightInventory> predicted;  // the config's, when headers were read
};

// A local folder (or its config.json), an ORG/NAME[@REV] in the HF cache, or ORG/NAME[@REV] on
// the hub (then only the config, quantisation config, index and headers are fetched).
PlanModel load_plan_model(const std::string& model);

// From the parsed config and whatever safetensors headers there are (none: from the config).
PlanModel plan_model_from(std::string name, ModelConfig config,
                          const std::vector<TensorInfo>& headers);

// ORG/NAME[@REV] that is not a local path.
bool looks_like_repo_id(const std::string& model);
// Plans from the hub: config.json, the quantisation config, the index and each shard's header.
PlanModel load_hub_plan_model(const std::string& model);
// The same from an already fetched file list (pull plans before it downloads).
PlanModel plan_model_from_hub(const std::string& name, const hub::RepoRef& ref,
                              const hub::RepoInfo& info, const hub::HttpSettings& settings);

struct GpuChoice {
    std::vector<plan::Gpu> gpus;  // empty when none are known
    std::string source;           // "--gpus 8x96GB", "NVML", or why there are none
};

// `spec` from --gpus; empty: NVML when it finds GPUs, else none (with the reason).
GpuChoice choose_gpus(const std::string& spec);

}  // namespace myriad::cli
