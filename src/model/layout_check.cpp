#include "model/layout_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "model/linear_format.h"
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

}  // namespace myriad
