// Routing decisions recomputed in double (route_decision.h).
#include "route_decision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace myriad::testing {

Decision route_reference(const RouteRecord& r, const float* logits) {
    Decision d;
    const int64_t E = r.experts, G = r.n_group, k = r.top_k, per = E / G;
    d.choice.resize(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e)
        d.choice[e] = 1.0 / (1.0 + std::exp(-double(logits[e]))) + double(r.bias[e]);
    // Stable order: larger first, lower index among equals (torch.topk on ties, the CPU's sort).
    auto order_by = [](const std::vector<double>& v) {
        std::vector<int> o(v.size());
        std::iota(o.begin(), o.end(), 0);
        std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return v[a] > v[b]; });
        return o;
    };
    std::vector<char> allowed(static_cast<size_t>(E), 1);
    d.group_kept.assign(static_cast<size_t>(G), 1);
    if (G > 1) {
        std::vector<double> gs(static_cast<size_t>(G));
        for (int64_t g = 0; g < G; ++g) {
            std::vector<double> in(d.choice.begin() + g * per, d.choice.begin() + (g + 1) * per);
            std::sort(in.rbegin(), in.rend());
            gs[g] = in[0] + (per > 1 ? in[1] : 0.0);
        }
        const std::vector<int> go = order_by(gs);
        for (int64_t i = r.topk_group; i < G; ++i) {
            d.group_kept[go[i]] = 0;
            for (int64_t e = go[i] * per; e < (go[i] + 1) * per; ++e) allowed[e] = 0;
        }
        if (r.topk_group < G) d.group_gap = gs[go[r.topk_group - 1]] - gs[go[r.topk_group]];
    }
    std::vector<double> masked(d.choice);
    for (int64_t e = 0; e < E; ++e)
        if (!allowed[e]) masked[e] = -INFINITY;
    const std::vector<int> eo = order_by(masked);
    d.ids.assign(eo.begin(), eo.begin() + k);
    if (k < E && std::isfinite(masked[eo[k]])) d.expert_gap = masked[eo[k - 1]] - masked[eo[k]];
    return d;
}

RouteComparison compare_token_route(const RouteRecord& ref, const RouteRecord& other, int64_t t,
                                    double tie_gap) {
    RouteComparison c;
    const int64_t k = ref.top_k, E = ref.experts;
    std::vector<int> a(&ref.ids[t * k], &ref.ids[t * k] + k),
        b(&other.ids[t * k], &other.ids[t * k] + k);
    std::vector<int> sa = a, sb = b;
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    c.same_experts = sa == sb;
    if (c.same_experts) return c;
    const Decision dr = route_reference(ref, &ref.logits[t * E]);
    const Decision d_o = route_reference(other, &other.logits[t * E]);
    double delta = 0;
    for (int64_t e = 0; e < E; ++e) delta = std::max(delta, std::abs(dr.choice[e] - d_o.choice[e]));
    const bool groups_differ = dr.group_kept != d_o.group_kept;
    const double margin = groups_differ ? dr.group_gap : dr.expert_gap;
    c.near_tie = margin <= 2 * delta + tie_gap;
    c.what = fmt::format(
        "layer {} token {}: experts [{}] against [{}], {} margin {:.3e}, largest score "
        "difference {:.3e}",
        ref.layer, t, fmt::join(a, ","), fmt::join(b, ","), groups_differ ? "group" : "expert",
        margin, delta);
    return c;
}

}  // namespace myriad::testing
