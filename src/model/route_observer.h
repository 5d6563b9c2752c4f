// A test hook on the router (tests/gpu/differential_test.cpp): after each MoE layer has routed
// the step's tokens, the observer gets, copied to the host, the router's input, its logits (the
// gate's product computed again by the same backend), the score-correction bias and the chosen
// experts with their weights. It lets a test compare the routing decisions of two backends and
// measure how close each one was to a tie. Never set by the program: the copies synchronise the
// device, and a decode step with an observer must not be captured into a CUDA graph.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace myriad {

struct RouteRecord {
    int64_t layer = 0;
    int64_t tokens = 0, hidden = 0, experts = 0, top_k = 0;
    int64_t n_group = 1, topk_group = 1;
    bool norm_topk_prob = true;
    float routed_scaling_factor = 1.0f;
    std::vector<float> x;        // [tokens, hidden]: the normed input of the MoE sub-layer
    std::vector<float> logits;   // [tokens, experts]
    std::vector<float> bias;     // [experts]
    std::vector<int32_t> ids;    // [tokens, top_k], in the backend's order of choice
    std::vector<float> weights;  // [tokens, top_k]
};

using RouteObserver = std::function<void(const RouteRecord&)>;

}  // namespace myriad
