#include "plan/plan_report.h"

#include <fmt/format.h>

namespace myriad::plan {

namespace {

std::string gib(int64_t bytes) {
    return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / 1073741824.0);
}

std::string kv_dtype_name(DType d) {
    return d == DType::F8_E4M3 ? "fp8" : d == DType::F32 ? "fp32" : "bf16";
}

nlohmann::ordered_json layout_json(const LayoutFit& l) {
    nlohmann::ordered_json j;
    j["gpus"] = l.gpus;
    j["tp"] = l.tp;
    j["ep"] = l.ep;
    j["dp"] = l.dp;
    j["fits"] = l.fits;
    j["weight_bytes_per_gpu"] = l.weights.total();
    j["sharded_bytes_per_gpu"] = l.weights.sharded;
    j["replicated_bytes_per_gpu"] = l.weights.replicated;
    j["activation_bytes"] = l.activation_bytes;
    j["workspace_bytes"] = l.workspace_bytes;
    j["cuda_graph_bytes"] = l.cuda_graph_bytes;
    j["gpu_bytes"] = l.gpu_bytes;
    j["free_bytes"] = l.free_bytes;
    j["kv_bytes_per_token"] = l.kv_bytes_per_token;
    j["kv_capacity_tokens"] = l.kv_capacity_tokens;
    j["max_context"] = l.max_context;
    if (!l.fits) j["reason"] = l.reason;
    return j;
}

}  // namespace

nlohmann::ordered_json plan_json(const PlanSubject& s, const Plan& plan) {
    nlohmann::ordered_json j;
    j["model"] = s.model;
    nlohmann::ordered_json w;
    w["source"] = s.weights->source;
    w["total_bytes"] = s.weights->total_bytes();
    w["by_kind"] = s.weights->bytes_by_kind();
    if (s.predicted) w["config_total_bytes"] = s.predicted->total_bytes();
    if (s.weights->skipped_bytes) w["skipped_bytes"] = s.weights->skipped_bytes;
    if (!s.weights->missing.empty()) w["missing_tensors"] = s.weights->missing.size();
    j["weights"] = w;
    nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
    for (const Gpu& g : s.gpus) gpus.push_back({{"name", g.name}, {"bytes", g.bytes}});
    j["gpus"] = gpus;
    j["gpus_source"] = s.gpus_source;
    j["kv_cache_dtype"] = kv_dtype_name(plan.kv_dtype);
    j["context"] = plan.context;
    j["concurrency"] = plan.concurrency;
    nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
    for (const LayoutFit& l : plan.layouts) layouts.push_back(layout_json(l));
    j["layouts"] = layouts;
    j["moe_layout"] = plan.moe_note;
    j["chosen"] = plan.chosen ? layout_json(plan.layouts[*plan.chosen]) : nlohmann::ordered_json();
    return j;
}

std::string plan_text(const PlanSubject& s, const Plan& plan) {
    const ModelConfig& c = *s.config;
    std::string out;
    auto line = [&](const std::string& text) { out += text + "\n"; };
    line(fmt::format("model        {} ({}, {} layers, {} routed experts, top {})", s.model,
                     c.model_type, c.num_hidden_layers, c.n_routed_experts, c.num_experts_per_tok));
    const int64_t total = s.weights->total_bytes();
    std::string kinds;
    for (const auto& [kind, bytes] : s.weights->bytes_by_kind())
        kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, gb(bytes));
    line(fmt::format("weights      {} ({}) from {}: {}", gb(total), gib(total), s.weights->source,
                     kinds));
    if (s.predicted) {
        const int64_t p = s.predicted->total_bytes();
        line(fmt::format("             config.json predicts {}{}", gb(p),
                         p == total ? " (the same, to the byte)"
                                    : fmt::format(" ({:+} bytes against the headers)", p - total)));
    }
    if (s.weights->skipped_bytes > 0)
        line(fmt::format("             {} not loaded (vision tower, MTP layers)",
                         gb(s.weights->skipped_bytes)));
    if (!s.weights->missing.empty())
        line(
            fmt::format("             warning: {} tensors the config expects are not in the "
                        "headers (first: {})",
                        s.weights->missing.size(), s.weights->missing.front()));
    line(fmt::format("gpus         {}", s.gpus.empty()
                                            ? s.gpus_source
                                            : describe_gpus(s.gpus) + ", from " + s.gpus_source));
    line(fmt::format("kv cache     {}: {} bytes per token on every GPU{}",
                     kv_dtype_name(plan.kv_dtype), plan.layouts.front().kv_bytes_per_token,
                     plan.kv_note.empty() ? "" : " (" + plan.kv_note + ")"));
    line(fmt::format("requested    {} sequence(s) of {} tokens", plan.concurrency, plan.context));
    line("");
    line(fmt::format("{:<22} {:>4} {:>11} {:>11} {:>11} {:>9} {:>10} {:>12} {:>11}  {}", "layout",
                     "gpus", "weights/GPU", "sharded", "replicated", "reserve", "free", "KV tokens",
                     "max context", "fits"));
    for (size_t i = 0; i < plan.layouts.size(); ++i) {
        const LayoutFit& l = plan.layouts[i];
        const bool known = l.gpu_bytes > 0;
        line(fmt::format("{:<22} {:>4} {:>11} {:>11} {:>11} {:>9} {:>10} {:>12} {:>11}  {}",
                         l.label(), l.gpus, gb(l.weights.total()), gb(l.weights.sharded),
                         gb(l.weights.replicated), gb(l.reserve_bytes()),
                         known ? gb(l.free_bytes) : "-",
                         known ? std::to_string(l.kv_capacity_tokens) : "-",
                         known ? std::to_string(l.max_context) : "-",
                         l.fits ? (plan.chosen == i ? "yes, chosen" : "yes") : "no"));
    }
    line("");
    if (plan.chosen) {
        const LayoutFit& l = plan.layouts[*plan.chosen];
        line(fmt::format(
            "chosen       {} on {} GPU(s): {} of weights and {} of reserves per GPU, {} for "
            "{} KV tokens; up to {} tokens of context for each of {} sequence(s)",
            l.label(), l.gpus, gb(l.weights.total()), gb(l.reserve_bytes()), gb(l.free_bytes),
            l.kv_capacity_tokens, l.max_context, plan.concurrency));
        if (!plan.moe_note.empty()) line(fmt::format("experts      {}", plan.moe_note));
    } else if (s.gpus.empty()) {
        line("chosen       none: no GPUs to fit on (see gpus above)");
    } else {
        line("chosen       none: no layout fits");
    }
    // Without GPUs every layout has the same reason, which the gpus line already gives.
    for (const LayoutFit& l : plan.layouts)
        if (!l.fits && !s.gpus.empty()) line("  " + l.reason);
    return out;
}

}  // namespace myriad::plan
