#include "plan/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/layout_check.h"
#include "util/error.h"

namespace myriad::plan {

namespace {

std::string tokens(int64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string_view kv_name(DType d) {
    return d == DType::F8_E4M3 ? "FP8" : d == DType::F32 ? "F32" : "BF16";
}

// Which tensor-parallel sizes the model's shapes allow (heads, widths, vocabulary, quantised
// blocks); the reason when not.
std::string tp_problem(const ModelConfig& c, int tp, bool expert_parallel) {
    try {
        check_layout(c, myriad::Layout(tp, expert_parallel));
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

}  // namespace

std::string gb(int64_t bytes) {
    return fmt::format("{:.1f} GB", static_cast<double>(bytes) / 1e9);
}

std::string LayoutFit::label() const {
    return myriad::Layout(tp, ep > 1).label();
}

int64_t kv_bytes_per_token(const ModelConfig& c, DType kv_dtype) {
    // The MTP layers loaded (--speculative mtp) keep a latent cache of the same blocks.
    return (c.num_hidden_layers + c.mtp_layers) * (c.kv_lora_rank + c.qk_rope_head_dim) *
           static_cast<int64_t>(dtype_size(kv_dtype));
}

int64_t activation_bytes(const ModelConfig& c, const PlanOptions& o, int tp, int ep) {
    (void)ep;  // expert parallelism moves whole experts, not activations: the same reserve
    const int64_t split = tp;
    const int64_t ffn =
        std::max(c.intermediate_size, c.num_experts_per_tok * c.moe_intermediate_size);
    const int64_t heads = c.num_attention_heads / split, L = o.naive_context_tokens;
    const int64_t per_token = 3 * c.hidden_size + heads * (c.qk_head_dim() + c.v_head_dim) +
                              c.kv_lora_rank + c.qk_rope_head_dim + 2 * ffn / split;
    const int64_t naive =
        4 * L *
            (c.kv_lora_rank + c.qk_rope_head_dim + heads * (c.qk_nope_head_dim + c.v_head_dim)) +
        2 * L * c.kv_lora_rank + 4 * o.max_batched_tokens * heads;
    return 2 * o.max_batched_tokens * per_token + 4 * o.max_num_seqs * c.vocab_size / split + naive;
}

Plan make_plan(const ModelConfig& c, const WeightInventory& w, const PlanOptions& o) {
    if (o.concurrency < 1) bad_input("--concurrency {} must be at least 1", o.concurrency);
    if (o.context < 0) bad_input("--context {} must be positive", o.context);
    Plan plan;
    plan.context = o.context > 0 ? o.context : c.max_position_embeddings;
    plan.concurrency = o.concurrency;
    switch (o.kv_cache_dtype) {
        case KvCacheDtype::Auto:
            plan.kv_dtype = c.quant.kv_cache_fp8 ? DType::F8_E4M3 : DType::BF16;
            plan.kv_note = c.quant.kv_cache_fp8
                               ? fmt::format("auto: FP8, as {} says", c.quant.kv_cache_field)
                               : "auto: BF16 (the checkpoint does not ask for FP8)";
            break;
        case KvCacheDtype::Bf16:
            plan.kv_dtype = DType::BF16;
            break;
        case KvCacheDtype::Fp8:
            plan.kv_dtype = DType::F8_E4M3;
            break;
        case KvCacheDtype::Fp32:
            plan.kv_dtype = DType::F32;
            break;
    }
    const int64_t kv_token = kv_bytes_per_token(c, plan.kv_dtype);

    std::vector<Gpu> gpus = o.gpus;  // the largest cards first: a layout of n uses the n largest
    std::stable_sort(gpus.begin(), gpus.end(),
                     [](const Gpu& a, const Gpu& b) { return a.bytes > b.bytes; });
    std::vector<std::pair<int, int>> shapes;  // (tp, ep)
    for (int n : {1, 2, 4, 8}) shapes.push_back({n, 1});
    // Expert parallelism (serve --expert-parallel): attention and the shared experts by heads and
    // columns as in TP, each rank holding whole routed experts.
    for (int n : {2, 4, 8})
        if (c.n_routed_experts >= n) shapes.push_back({n, n});

    for (auto [tp, ep] : shapes) {
        LayoutFit l;
        l.tp = tp;
        l.ep = ep;
        l.dp = 1;
        l.gpus = tp;
        l.weights = weight_bytes_per_gpu(w, c, tp, ep);
        l.activation_bytes = activation_bytes(c, o, tp, ep);
        l.workspace_bytes = o.workspace_bytes;
        l.cuda_graph_bytes = o.cuda_graph_bytes;
        l.kv_bytes_per_token = kv_token;
        const int64_t need = l.weights.total() + l.reserve_bytes();
        const std::string problem = tp > 1 ? tp_problem(c, tp, ep > 1) : std::string();
        if (gpus.empty()) {
            l.reason = "no GPUs given: pass --gpus (e.g. 8x96GB, 8xH200) or --gpus auto";
            l.free_bytes = -need;
            plan.layouts.push_back(l);
            continue;
        }
        if (static_cast<size_t>(l.gpus) > gpus.size()) {
            l.reason = fmt::format("{} needs {} GPUs; {} given", l.label(), l.gpus, gpus.size());
            l.free_bytes = -need;
            plan.layouts.push_back(l);
            continue;
        }
        l.gpu_bytes = static_cast<int64_t>(gpus[static_cast<size_t>(l.gpus) - 1].bytes);
        l.free_bytes = l.gpu_bytes - need;
        const int64_t per_rank_tokens =
            l.free_bytes > 0 ? l.free_bytes / kv_token / o.block_size * o.block_size : 0;
        const int64_t seqs = (o.concurrency + l.dp - 1) / l.dp;  // per data-parallel rank
        l.kv_capacity_tokens = per_rank_tokens * l.dp;
        l.max_context = std::min(per_rank_tokens / seqs, c.max_position_embeddings);
        if (!problem.empty()) {
            l.reason = fmt::format("{} does not divide the model: {}", l.label(), problem);
        } else if (l.free_bytes <= 0) {
            l.reason = fmt::format(
                "{} needs {} per GPU ({} of weights + {} of activations, workspace and CUDA "
                "graphs) before any KV cache; the GPUs have {}",
                l.label(), gb(need), gb(l.weights.total()), gb(l.reserve_bytes()), gb(l.gpu_bytes));
        } else if (per_rank_tokens < plan.context * seqs) {
            l.reason = fmt::format(
                "{} leaves {} per GPU for the KV cache, {} tokens in {}; {} sequence(s) of {} "
                "tokens need {}: lower --context or --concurrency, use more GPUs{}",
                l.label(), gb(l.free_bytes), tokens(per_rank_tokens), kv_name(plan.kv_dtype), seqs,
                tokens(plan.context), gb(plan.context * seqs * kv_token),
                plan.kv_dtype == DType::F8_E4M3 ? "" : " or --kv-cache-dtype fp8");
        } else {
            l.fits = true;
        }
        plan.layouts.push_back(l);
    }
    for (size_t i = 0; i < plan.layouts.size(); ++i) {
        const LayoutFit& l = plan.layouts[i];
        if (!l.fits) continue;
        if (!plan.chosen) {
            plan.chosen = i;
            continue;
        }
        const LayoutFit& best = plan.layouts[*plan.chosen];
        if (l.gpus < best.gpus || (l.gpus == best.gpus && l.ep == 1 && best.ep > 1))
            plan.chosen = i;
    }
    if (plan.chosen && c.n_routed_experts > 0) {
        const LayoutFit& l = plan.layouts[*plan.chosen];
        if (l.tp == 1) {
            plan.moe_note = "one GPU holds every expert";
        } else if (l.ep == 1) {
            plan.moe_note =
                "experts tensor-parallel: each expert's intermediate dimension split over the "
                "GPUs (vLLM's and SGLang's default; every rank busy on every token); "
                "--expert-parallel places whole experts instead";
        } else {
            for (const LayoutFit& t : plan.layouts)
                if (t.tp == l.tp && t.ep == 1)
                    plan.moe_note = fmt::format(
                        "expert parallel (serve --expert-parallel): TP={} with experts "
                        "tensor-parallel does not: {}",
                        l.tp, t.reason);
        }
    }
    return plan;
}

}  // namespace myriad::plan
