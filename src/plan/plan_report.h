// A plan as a table for people and as JSON for tools (`myriad plan --json`, `myriad pull`).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "model/model_config.h"
#include "plan/memory_plan.h"
#include "plan/weight_inventory.h"

namespace myriad::plan {

struct PlanSubject {
    std::string model;  // as the user named it
    const ModelConfig* config = nullptr;
    const WeightInventory* weights = nullptr;
    // When both were made: the config's prediction, to report how the headers compare.
    const WeightInventory* predicted = nullptr;
    std::vector<Gpu> gpus;
    std::string gpus_source;  // "--gpus 8x96GB", "NVML", or why none
};

nlohmann::ordered_json plan_json(const PlanSubject& subject, const Plan& plan);
std::string plan_text(const PlanSubject& subject, const Plan& plan);

}  // namespace myriad::plan
