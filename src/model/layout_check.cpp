#include "model/layout_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "model/linear_format.h"
#include "model/tensor_layout.h"
#include "util/error.h"

namespace myriad {

namespace {

// The widths every rank cuts evenly, by config field (the routed experts' only when they are
// tensor-parallel; with expert parallelism the shared experts' total width).
std::vector<std::pair<std::string, int64_t>> cut_fields(const ModelConfig& c, bool ep) {
    std::vector<std::pair<std::string, int64_t>> f = {
        {"num_attention_heads", c.num_attention_heads},
        {"intermediate_size", c.intermediate_size},
        {"vocab_size", c.vocab_size},
    };
    if (!ep)
        f.push_back({"moe_intermediate_size", c.moe_intermediate_size});
    else if (c.n_shared_experts > 0)
        f.push_back({"moe_intermediate_size * n_shared_experts",
                     c.moe_intermediate_size * c.n_shared_experts});
    return f;
}

bool fields_divide(const ModelConfig& c, bool ep, int64_t w) {
    for (const auto& [name, value] : cut_fields(c, ep))
        if (value % w != 0) return false;
    return true;
}

}  // namespace

std::vector<int> working_tp_sizes(const ModelConfig& c, bool ep) {
    std::vector<int> out;
    for (int w = 1; w <= std::min<int64_t>(c.num_attention_heads, 1 << 20); w *= 2) {
        if (!fields_divide(c, ep, w)) continue;
        try {
            check_layout(c, Layout(w, ep), "");
            out.push_back(w);
        } catch (const Error&) {
        }
    }
    return out;
}

void check_layout(const ModelConfig& c, const Layout& l, const std::string& prefix) {
    const int world = l.tp();
    if (world < 1 || (world & (world - 1)) != 0)
        bad_input("--tp {}: the tensor-parallel size must be a power of two (1, 2, 4, 8, ...)",
                  world);
    for (const auto& [name, value] : cut_fields(c, l.expert_parallel())) {
        if (value % world == 0) continue;
        std::vector<int64_t> working;
        for (int64_t w = 1; w <= std::min<int64_t>(c.num_attention_heads, 1 << 20); w *= 2)
            if (fields_divide(c, l.expert_parallel(), w)) working.push_back(w);
        bad_input("{}: --tp {}{} does not divide field {} = {}; --tp values that work: {}", c.path,
                  world, l.expert_parallel() ? " --expert-parallel" : "", name, value,
                  fmt::join(working, ", "));
    }
    for (const ExpectedTensor& t : expected_tensors(c))
        if (is_linear_weight(t.name))
            check_quantized_sharding(c, t, linear_format(c, t.name, prefix), l, prefix);
}

namespace {

// The first linear whose shard the CUDA kernels cannot take, as a sentence; empty if none.
std::string gpu_shard_problem(const ModelConfig& c, const Layout& l) {
    for (const ExpectedTensor& t : expected_tensors(c)) {
        if (!is_linear_weight(t.name) || t.shape.size() != 2) continue;
        const TensorShard s = tensor_shard(c, t, l);
        if (!s.held || (s.cols.size() % 8 == 0 && s.cols.begin % 8 == 0)) continue;
        return fmt::format(
            "{} [{}, {}] would hold inputs [{}, {}) on rank {}, and the CUDA "
            "kernels need a multiple of 8 inputs from a multiple of 8",
            t.name, t.shape[0], t.shape[1], s.cols.begin, s.cols.end, l.rank());
    }
    return {};
}

}  // namespace

std::string gpu_layout_problem(const ModelConfig& c, const Layout& l, const std::string& prefix) {
    (void)prefix;
    std::string why;
    for (int r = 0; r < l.tp() && why.empty(); ++r) why = gpu_shard_problem(c, l.of_rank(r));
    if (why.empty()) return {};
    std::vector<int> working;
    for (int w : working_tp_sizes(c, l.expert_parallel())) {
        bool ok = true;
        const Layout lw(w, l.expert_parallel());
        for (int r = 0; r < w && ok; ++r) ok = gpu_shard_problem(c, lw.of_rank(r)).empty();
        if (ok) working.push_back(w);
    }
    return fmt::format(
        "--tp {}{}: {}; --tp values the GPU can run{}: {}", l.tp(),
        l.expert_parallel() ? " --expert-parallel" : "", why,
        l.expert_parallel() ? " with --expert-parallel" : "",
        working.empty() ? std::string("none") : fmt::format("{}", fmt::join(working, ", ")));
}

}  // namespace myriad
