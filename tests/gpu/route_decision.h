// Routing decisions recomputed on the host in double precision from a backend's own router
// logits (model/route_observer.h records), to tell a near-tie that BF16 rounding may flip from a
// router that decides wrongly. Shared by the differential and MTP tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/route_observer.h"

namespace myriad::testing {

// One routing decision: the chosen experts in order, the kept groups, and the gaps at its two
// boundaries (infinity where there is no boundary).
struct Decision {
    std::vector<int> ids;
    std::vector<char> group_kept;
    double group_gap = INFINITY;   // topk_group-th best group score − the next one
    double expert_gap = INFINITY;  // k-th best allowed biased score − the next one
    std::vector<double> choice;    // sigmoid(logit) + bias of every expert
};

// The decision for one token's router logits (sigmoid scoring, score-correction bias, groups).
Decision route_reference(const RouteRecord& r, const float* logits);

// Token t of the same step routed on a reference backend and another one.
struct RouteComparison {
    bool same_experts = true;  // the same set of experts
    bool near_tie = false;     // they differ where the reference's margin is at most twice the
                               // backends' largest score difference (plus `tie_gap`)
    std::string what;          // a sentence naming the layer, the experts and the numbers
};
RouteComparison compare_token_route(const RouteRecord& ref, const RouteRecord& other, int64_t t,
                                    double tie_gap);

}  // namespace myriad::testing
