#include "plan/run_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "format/checkpoint.h"
#include "model/kernel_shapes.h"
#include "model/layout_check.h"
#include "model/linear_format.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "plan/gpu_share.h"
#include "plan/memory_plan.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace myriad::plan {

namespace {

std::string gib(int64_t bytes) {
    return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / 1073741824.0);
}

// 150.2 GB, 12.5 MB or 830 kB: what a tiny model's figures need too.
std::string human(int64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (b >= 1e9) return fmt::format("{:.1f} GB", b / 1e9);
    if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
    return fmt::format("{:.0f} kB", b / 1e3);
}

std::string kv_name(DType d) {
    return d == DType::F8_E4M3 ? "fp8" : d == DType::F32 ? "fp32" : "bf16";
}

std::string list(const std::vector<int>& v) {
    return fmt::format("{}", fmt::join(v, ","));
}

}  // namespace

void check_run_flags(const RunFlags& f) {
    if (f.tp < 1) bad_input("--tp {} must be at least 1", f.tp);
    if (f.threads < 0) bad_input("--threads {} must be at least 0", f.threads);
    if (f.max_num_seqs < 1) bad_input("--max-num-seqs {} must be at least 1", f.max_num_seqs);
    if (f.max_num_batched_tokens < 1)
        bad_input("--max-num-batched-tokens {} must be at least 1", f.max_num_batched_tokens);
    if (f.naive_context_tokens < 1)
        bad_input("--naive-context-tokens {} must be at least 1", f.naive_context_tokens);
    if (f.max_model_len < 0) bad_input("--max-model-len {} must be positive", f.max_model_len);
    if (!(f.gpu_memory_utilization > 0 && f.gpu_memory_utilization <= 1))
        bad_input("--gpu-memory-utilization {} must be in (0, 1] (default {})",
                  f.gpu_memory_utilization, kDefaultGpuMemoryUtilization);
    if (f.kv_cache_memory < 1)
        bad_input("--kv-cache-memory {} must be positive (default 4GiB)", f.kv_cache_memory);
    if (f.kv_blocks < 0) bad_input("--kv-blocks {} must be at least 0", f.kv_blocks);
    if (f.device != "auto" && f.device != "cpu" && f.device != "cuda")
        bad_input("--device {}: use auto, cpu or cuda", f.device);
}

namespace {

// The device and each rank's GPU, decided on `machine`'s GPUs (as resolve_device does on this
// process's), then whether the kernels can run the checkpoint there.
void choose_device(const RunFlags& f, const ModelHeaders& m, const MachineGpus& machine,
                   RunPlan& p) {
    const int n = static_cast<int>(machine.gpus.size());
    const char* env = std::getenv("MYRIAD_CUDA_DEVICES");
    const bool placed = !f.devices.empty() || (env && *env);
    const std::string zeros = list(std::vector<int>(static_cast<size_t>(f.tp), 0));
    if (f.device == "cpu") {
        p.device = Device::Cpu;
        p.device_reason = "--device cpu";
        return;
    }
    if (n == 0) {
        if (f.device == "cuda") bad_input("--device cuda: {}; use --device cpu", machine.why_none);
        p.device = Device::Cpu;
        p.device_reason = machine.why_none.empty() ? "no GPU" : "no GPU: " + machine.why_none;
        return;
    }
    if (!placed && f.tp > n) {
        if (f.device == "cuda")
            bad_input(
                "--tp {} with --device cuda: {} GPU(s) found; --devices places ranks on them, "
                "several on one allowed (e.g. --devices {})",
                f.tp, n, zeros);
        p.device = Device::Cpu;
        p.device_reason = fmt::format(
            "--tp {} needs {} GPUs, {} found; --devices places several ranks on one GPU (e.g. "
            "--devices {})",
            f.tp, f.tp, n, zeros);
        return;
    }
    p.devices = parse_devices(f.devices, f.tp);
    for (int d : p.devices)
        if (d >= n)
            bad_input("--devices {}: GPU {} is not there ({} found: 0..{})", list(p.devices), d, n,
                      n - 1);
    // Whether the kernels run this checkpoint on each GPU (cards of unknown capability, named
    // with `myriad plan --gpus`, are not checked).
    const std::set<WeightFormat> formats = m.checkpoint
                                               ? checkpoint_linear_formats(*m.config, *m.checkpoint)
                                               : std::set<WeightFormat>{};
    std::vector<int> seen;
    for (int d : p.devices) {
        if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
        seen.push_back(d);
        const GpuInfo& g = machine.gpus[static_cast<size_t>(d)];
        p.gpu_names.push_back(fmt::format("GPU {}: {}", d, g.name));
        if (g.cc == 0) continue;
        // The latent cache's dtype does not decide whether the GPU runs (every kernel reads all
        // three): BF16 here, the plan's dtype for the lines below.
        const GpuKernelPlan k = plan_gpu_kernels(
            g, machine.built_archs,
            KernelChoices::from_environment(
                g, kernel_shapes(*m.config, formats, myriad::Layout(f.tp, f.expert_parallel, 0),
                                 DType::BF16)));
        if (k.stop.empty()) continue;
        if (f.device == "cuda") bad_input("--device cuda: {}", k.stop);
        p.device = Device::Cpu;
        p.devices.clear();
        p.gpu_names.clear();
        p.device_reason = "the GPU cannot run this model: " + k.stop;
        return;
    }
    p.device = Device::Cuda;
    p.device_reason = f.device == "cuda" ? "--device cuda"
                                         : fmt::format(
                                               "auto: {} GPU(s) found ({}); --device cpu "
                                               "for the CPU",
                                               n, machine.source);
}

void choose_kv_dtype(const RunFlags& f, const ModelConfig& c, RunPlan& p) {
    const KvCacheDtype kv = parse_kv_cache_dtype(f.kv_cache_dtype, "--kv-cache-dtype");
    std::string note;
    p.kv_dtype = resolve_kv_cache_dtype(kv, c, &note);
    if (kv != KvCacheDtype::Auto) {
        p.kv_reason = "--kv-cache-dtype " + f.kv_cache_dtype;
    } else if (p.kv_dtype == DType::F8_E4M3) {
        p.kv_reason = note.empty() ? "auto: the checkpoint's FP8 scheme" : "auto: " + note;
    } else if (p.device == Device::Cuda) {
        p.kv_dtype = DType::BF16;
        p.kv_reason =
            "auto: BF16, the GPU's default latent cache (the checkpoint asks for no FP8 cache; "
            "--kv-cache-dtype fp8 halves it)";
    } else {
        p.kv_reason = "auto: exact F32 on the CPU (the checkpoint asks for no FP8 cache)";
    }
}

void choose_layout(const RunFlags& f, const ModelHeaders& m, RunPlan& p) {
    const ModelConfig& c = *m.config;
    if (f.expert_parallel && c.n_routed_experts == 0)
        bad_input("--expert-parallel: {} has no routed experts; leave the flag out", c.path);
    p.layout = myriad::Layout(f.tp, f.expert_parallel, 0);
    // Heads, widths and quantised groups: the message names the tensor and the --tp that work.
    if (m.checkpoint)
        validate_checkpoint(c, *m.checkpoint, p.layout);
    else
        check_layout(c, p.layout);
    if (p.device == Device::Cuda)
        if (const std::string why = gpu_layout_problem(c, p.layout); !why.empty())
            bad_input("--device cuda {}", why);
}

// The smallest TP (one rank per GPU of `gpu_bytes`) whose shard and reserves leave room for
// one sequence of `context` tokens; 0 when none up to 64 does.
int fitting_tp(const RunFlags& f, const ModelHeaders& m, int64_t gpu_bytes, int64_t context,
               int64_t kv_token) {
    for (int tp = 1; tp <= 64; tp *= 2) {
        if (tp > 1) {
            try {
                check_layout(*m.config, myriad::Layout(tp, f.expert_parallel));
            } catch (const Error&) {
                continue;
            }
        }
        const int ep = f.expert_parallel ? tp : 1;
        PlanOptions po;
        po.max_batched_tokens = f.max_num_batched_tokens;
        po.max_num_seqs = f.max_num_seqs;
        po.naive_context_tokens = f.naive_context_tokens;
        const int64_t need = weight_bytes_per_gpu(*m.weights, *m.config, tp, ep).total() +
                             activation_bytes(*m.config, po, tp, ep) + kGpuWorkspaceBytes +
                             kCudaGraphBytes + context * kv_token;
        if (static_cast<double>(need) <= f.gpu_memory_utilization * static_cast<double>(gpu_bytes))
            return tp;
    }
    return 0;
}

void size_memory(const RunFlags& f, const ModelHeaders& m, const MachineGpus& machine, RunPlan& p) {
    const ModelConfig& c = *m.config;
    const int ep = f.expert_parallel ? f.tp : 1;
    PlanOptions po;
    po.max_batched_tokens = f.max_num_batched_tokens;
    po.max_num_seqs = f.max_num_seqs;
    po.naive_context_tokens = f.naive_context_tokens;
    p.weight_bytes = weight_bytes_per_gpu(*m.weights, c, f.tp, ep).total();
    p.activation_bytes = activation_bytes(c, po, f.tp, ep);
    p.kv_bytes_per_token = kv_bytes_per_token(c, p.kv_dtype);
    const int64_t block_bytes = p.kv_block_size * p.kv_bytes_per_token;
    const int64_t context = f.max_model_len > 0 ? f.max_model_len : c.max_position_embeddings;

    if (p.device == Device::Cuda) {
        p.workspace_bytes = kGpuWorkspaceBytes;
        p.cuda_graph_bytes = kCudaGraphBytes;
        p.gpu_memory_utilization = f.gpu_memory_utilization;
        int smallest = p.devices.front();
        p.budget_bytes = INT64_MAX;
        for (int d : p.devices) {
            const uint64_t mem = machine.gpus[static_cast<size_t>(d)].memory;
            const int64_t b = rank_budget(p.devices, d, mem, f.gpu_memory_utilization);
            const int ranks = static_cast<int>(std::count(p.devices.begin(), p.devices.end(), d));
            p.ranks_per_gpu = std::max(p.ranks_per_gpu, ranks);
            if (b < p.budget_bytes) {
                p.budget_bytes = b;
                smallest = d;
            }
        }
        p.gpu_bytes = static_cast<int64_t>(machine.gpus[static_cast<size_t>(smallest)].memory);
        const int64_t left = p.budget_bytes - p.weight_bytes - p.reserve_bytes();
        const int ranks =
            static_cast<int>(std::count(p.devices.begin(), p.devices.end(), smallest));
        if (left <
            block_bytes * std::max<int64_t>(1, (context + p.kv_block_size - 1) / p.kv_block_size)) {
            // Not even one sequence of max_model_len: first see whether a shorter context fits,
            // else what would make the model fit at all.
            const int64_t need_one = p.weight_bytes + p.reserve_bytes() + block_bytes;
            const int64_t per_rank_card = p.gpu_bytes / ranks;
            std::string nearest;
            if (left >= block_bytes * 2) {
                const int64_t tokens = left / block_bytes * p.kv_block_size;
                nearest = fmt::format("--max-model-len {} (the most this cache holds)", tokens);
            }
            const double util = static_cast<double>(p.weight_bytes + p.reserve_bytes() +
                                                    context * p.kv_bytes_per_token) /
                                static_cast<double>(per_rank_card);
            if (util <= 0.98) {
                const double up = std::ceil(util * 100) / 100;
                nearest += fmt::format("{}--gpu-memory-utilization {:.2f}",
                                       nearest.empty() ? "" : ", or ", up);
            }
            const int tp = fitting_tp(f, m, per_rank_card, context, p.kv_bytes_per_token);
            if (ranks > 1)
                nearest += fmt::format("{}fewer ranks on GPU {} (--devices; {} share it now)",
                                       nearest.empty() ? "" : ", or ", smallest, ranks);
            if (tp > f.tp)
                nearest += fmt::format("{}--tp {} ({} GPUs of {}{})",
                                       nearest.empty() ? "" : ", or ", tp, tp, gb(p.gpu_bytes),
                                       f.expert_parallel ? " with --expert-parallel" : "");
            if (nearest.empty()) nearest = "more or larger GPUs";
            bad_input(
                "{} on {} GPU(s): a rank may use {} ({:.0f}% of GPU {}'s {}{}); it needs {} of "
                "weights + {} of activations, workspace and CUDA graphs = {}, and a sequence "
                "of {} tokens (max_model_len, {}) needs {} of KV cache in {}; {} left. "
                "Nearest that works: {}",
                p.layout.label(), p.devices.size(), gb(p.budget_bytes),
                100 * f.gpu_memory_utilization, smallest, gb(p.gpu_bytes),
                ranks > 1 ? fmt::format(", shared by {} ranks", ranks) : std::string(),
                gb(p.weight_bytes), gb(p.reserve_bytes()), gb(need_one - block_bytes), context,
                f.max_model_len > 0 ? "--max-model-len" : "the model's max_position_embeddings",
                gb(context * p.kv_bytes_per_token), kv_name(p.kv_dtype),
                gb(std::max<int64_t>(0, left)), nearest);
        }
        p.kv_blocks = left / block_bytes;
        p.kv_blocks_reason =
            fmt::format("{:.0f}% of {} / {} rank(s) - weights - reserves, in blocks of {} tokens",
                        100 * f.gpu_memory_utilization, gb(p.gpu_bytes), ranks, p.kv_block_size);
    } else {
        p.kv_cache_memory = f.kv_cache_memory;
        p.budget_bytes = f.kv_cache_memory / f.tp;
        p.kv_blocks = p.budget_bytes / block_bytes;
        p.kv_blocks_reason =
            fmt::format("--kv-cache-memory {}{}, in blocks of {} tokens", gib(f.kv_cache_memory),
                        f.tp > 1 ? fmt::format(" / {} ranks", f.tp) : "", p.kv_block_size);
        if (f.kv_blocks == 0 && p.kv_blocks * p.kv_block_size < context)
            bad_input(
                "--kv-cache-memory {}: a rank's {} holds {} tokens in {}, less than one sequence "
                "of {} tokens (max_model_len, {}). Nearest that works: --max-model-len {}, or "
                "--kv-cache-memory {}",
                gib(f.kv_cache_memory), gib(p.budget_bytes), p.kv_blocks * p.kv_block_size,
                kv_name(p.kv_dtype), context,
                f.max_model_len > 0 ? "--max-model-len" : "the model's max_position_embeddings",
                std::max<int64_t>(1, p.kv_blocks * p.kv_block_size),
                gib(context * p.kv_bytes_per_token * f.tp));
    }
    if (f.kv_blocks > 0) {
        if (f.kv_blocks > p.kv_blocks && p.device == Device::Cuda)
            bad_input("--kv-blocks {}: a rank's budget holds {} blocks ({}); use at most that",
                      f.kv_blocks, p.kv_blocks, p.kv_blocks_reason);
        const int64_t need = (context + p.kv_block_size - 1) / p.kv_block_size;
        if (f.kv_blocks < need)
            bad_input(
                "--kv-blocks {} holds {} tokens, less than one sequence of {} (max_model_len). "
                "Nearest that works: --kv-blocks {}, or --max-model-len {}",
                f.kv_blocks, f.kv_blocks * p.kv_block_size, context, need,
                f.kv_blocks * p.kv_block_size);
        p.kv_blocks = f.kv_blocks;
        p.kv_blocks_reason = "--kv-blocks";
    }
}

}  // namespace

MachineGpus probe_machine() {
    MachineGpus m;
    std::string why;
    const int n = cuda_device_count(&why);
    for (int i = 0; i < n; ++i) {
        GpuInfo g;
        if (cuda_device_info(i, &g)) m.gpus.push_back(g);
    }
    if (m.gpus.empty()) m.why_none = why.empty() ? "no CUDA device" : why;
    m.built_archs = cuda_built_architectures();
    return m;
}

RunPlan make_run_plan(const RunFlags& f, const ModelHeaders& m, const MachineGpus& machine) {
    check_run_flags(f);
    MYRIAD_CHECK(m.config && m.weights, "a run plan without the model's config and weights");
    const ModelConfig& c = *m.config;
    RunPlan p;
    p.model = m.path;
    p.tp = f.tp;
    p.expert_parallel = f.expert_parallel;
    p.max_num_seqs = f.max_num_seqs;
    p.max_num_batched_tokens = f.max_num_batched_tokens;
    p.naive_context_tokens = f.naive_context_tokens;
    p.threads = f.threads > 0 ? f.threads : hardware_threads();

    if (f.max_model_len > c.max_position_embeddings)
        bad_input(
            "--max-model-len {} is longer than {}'s max_position_embeddings {} (the positions it "
            "was trained for). Nearest that works: --max-model-len {}",
            f.max_model_len, c.path, c.max_position_embeddings, c.max_position_embeddings);
    p.max_model_len = f.max_model_len > 0 ? f.max_model_len : c.max_position_embeddings;
    p.max_model_len_reason =
        f.max_model_len > 0 ? "--max-model-len" : "the model's max_position_embeddings";

    choose_device(f, m, machine, p);
    choose_layout(f, m, p);
    choose_kv_dtype(f, c, p);
    if (p.device == Device::Cuda) {
        // The kernel choices, said once: they are the same on every GPU that can run them.
        const GpuInfo& g = machine.gpus[static_cast<size_t>(p.devices.front())];
        if (g.cc > 0 && m.checkpoint)
            p.kernels =
                plan_gpu_kernels(
                    g, machine.built_archs,
                    KernelChoices::from_environment(
                        g, kernel_shapes(c, checkpoint_linear_formats(c, *m.checkpoint),
                                         myriad::Layout(p.tp, p.expert_parallel, 0), p.kv_dtype)))
                    .lines;
    }
    size_memory(f, m, machine, p);

    if (f.tp == 1) {
        p.all_reduce.algorithm = "none (one rank)";
    } else if (p.device == Device::Cpu) {
        p.all_reduce.algorithm = "CPU threads (sums in rank order, in process)";
    } else {
        p.all_reduce.algorithm =
            "GPU kernels over registered buffers where the ranks reach each other's memory "
            "(else copies through the host): one-shot below the crossover, two-shot from it, "
            "NCCL above a third where libnccl loads (ranks on distinct GPUs); fused with the "
            "residual add and the norm where the message fits one round";
        p.all_reduce.two_shot_from = kDefaultTwoShotFrom;
    }
    return p;
}

std::string size_label(int64_t bytes) {
    if (bytes < 0) return "never (one-shot at every size)";
    return fmt::format("{} KiB", bytes >> 10);
}

nlohmann::ordered_json run_plan_json(const RunPlan& p) {
    nlohmann::ordered_json j;
    j["model"] = p.model;
    j["device"] = p.device == Device::Cuda ? "cuda" : "cpu";
    j["device_reason"] = p.device_reason;
    j["devices"] = p.devices;
    j["gpus"] = p.gpu_names;
    j["layout"] = p.layout.label();
    j["tp"] = p.tp;
    j["expert_parallel"] = p.expert_parallel;
    j["threads"] = p.threads;
    j["kv_cache_dtype"] = kv_name(p.kv_dtype);
    j["kv_cache_dtype_reason"] = p.kv_reason;
    j["kernels"] = p.kernels;
    j["max_model_len"] = p.max_model_len;
    j["max_model_len_reason"] = p.max_model_len_reason;
    j["max_num_seqs"] = p.max_num_seqs;
    j["max_num_batched_tokens"] = p.max_num_batched_tokens;
    j["naive_context_tokens"] = p.naive_context_tokens;
    nlohmann::ordered_json mem;
    mem["weight_bytes"] = p.weight_bytes;
    mem["activation_bytes"] = p.activation_bytes;
    mem["workspace_bytes"] = p.workspace_bytes;
    mem["cuda_graph_bytes"] = p.cuda_graph_bytes;
    if (p.device == Device::Cuda) {
        mem["gpu_memory_utilization"] = p.gpu_memory_utilization;
        mem["gpu_bytes"] = p.gpu_bytes;
        mem["ranks_per_gpu"] = p.ranks_per_gpu;
    } else {
        mem["kv_cache_memory"] = p.kv_cache_memory;
    }
    mem["budget_bytes"] = p.budget_bytes;
    mem["kv_bytes_per_token"] = p.kv_bytes_per_token;
    mem["kv_cache_bytes"] = p.kv_cache_bytes();
    j["per_rank"] = mem;
    j["kv_block_size"] = p.kv_block_size;
    j["kv_blocks"] = p.kv_blocks;
    j["kv_tokens"] = p.kv_tokens();
    j["kv_blocks_reason"] = p.kv_blocks_reason;
    nlohmann::ordered_json ar;
    ar["algorithm"] = p.all_reduce.algorithm;
    ar["two_shot_from"] = p.all_reduce.two_shot_from;
    ar["measured_two_shot_from"] = p.all_reduce.measured_two_shot_from;
    ar["measured"] = p.all_reduce.measured;
    j["all_reduce"] = ar;
    return j;
}

std::string run_plan_text(const RunPlan& p) {
    std::string out;
    auto row = [&](std::string_view key, const std::string& value) {
        out += fmt::format("  {:<22} {}\n", key, value);
    };
    out += "run plan\n";
    row("model", p.model);
    row("device",
        fmt::format("{} ({})", p.device == Device::Cuda ? "cuda" : "cpu", p.device_reason));
    if (!p.devices.empty()) row("ranks on GPUs", list(p.devices));
    for (const std::string& g : p.gpu_names) row("", g);
    row("layout", fmt::format("{} ({} rank(s){})", p.layout.label(), p.tp,
                              p.expert_parallel ? ", whole routed experts per rank" : ""));
    if (p.device == Device::Cpu) row("threads", std::to_string(p.threads));
    row("kv cache dtype", fmt::format("{} ({})", kv_name(p.kv_dtype), p.kv_reason));
    for (size_t i = 0; i < p.kernels.size(); ++i) row(i == 0 ? "kernels" : "", p.kernels[i]);
    row("max model len", fmt::format("{} ({})", p.max_model_len, p.max_model_len_reason));
    row("max num seqs", std::to_string(p.max_num_seqs));
    row("max batched tokens", std::to_string(p.max_num_batched_tokens));
    row("weights / rank", human(p.weight_bytes));
    row("reserves / rank", fmt::format("{} (activations {}, workspace {}, CUDA graphs {})",
                                       human(p.reserve_bytes()), human(p.activation_bytes),
                                       human(p.workspace_bytes), human(p.cuda_graph_bytes)));
    row("budget / rank",
        p.device == Device::Cuda
            ? fmt::format(
                  "{} ({:.0f}% of {}{})", human(p.budget_bytes), 100 * p.gpu_memory_utilization,
                  human(p.gpu_bytes),
                  p.ranks_per_gpu > 1 ? fmt::format(" / {} ranks", p.ranks_per_gpu) : std::string())
            : fmt::format("{} of KV cache (--kv-cache-memory {})", human(p.budget_bytes),
                          gib(p.kv_cache_memory)));
    row("kv cache / rank",
        fmt::format("{} blocks of {} tokens = {} tokens, {} ({} bytes a token; {})", p.kv_blocks,
                    p.kv_block_size, p.kv_tokens(), human(p.kv_cache_bytes()), p.kv_bytes_per_token,
                    p.kv_blocks_reason));
    row("all-reduce", p.all_reduce.algorithm);
    if (p.all_reduce.two_shot_from >= 0)
        row("", fmt::format("two-shot from {} (default){}", size_label(p.all_reduce.two_shot_from),
                            p.all_reduce.measured.empty()
                                ? std::string("; measured at start")
                                : fmt::format("; measured: from {} ({})",
                                              size_label(p.all_reduce.measured_two_shot_from),
                                              p.all_reduce.measured)));
    return out;
}

std::string memory_check(const RunPlan& p, int64_t used) {
    const int64_t planned = p.planned_rank_bytes() * static_cast<int64_t>(p.devices.size());
    if (planned <= 0) return "";
    const double off = static_cast<double>(used - planned) / static_cast<double>(planned);
    if (std::abs(off) <= 0.05) return "";
    return fmt::format(
        "memory: the plan said {} on the GPUs after loading and warm-up (weights {}, reserves {}, "
        "KV cache {} per rank, {} rank(s)); {} are in use, {} {} ({:+.1f}%){}",
        gb(planned), gb(p.weight_bytes), gb(p.reserve_bytes()), gb(p.kv_cache_bytes()),
        p.devices.size(), gb(used), gb(std::abs(used - planned)), used > planned ? "more" : "less",
        100 * off,
        used > planned ? "; lower --gpu-memory-utilization if other processes need the GPU" : "");
}

}  // namespace myriad::plan
