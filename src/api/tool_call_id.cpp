#include "api/tool_call_id.h"

#include <fmt/format.h>

#include <random>

namespace myriad::api {

namespace {

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::string format_id(uint64_t hi, uint64_t lo) {
    return fmt::format("chatcmpl-tool-{:016x}{:016x}", hi, lo);
}

}  // namespace

ToolCallIdSource random_tool_call_ids() {
    std::random_device device;
    std::seed_seq seeds{device(), device(), device(), device()};
    std::mt19937_64 rng(seeds);
    return [rng]() mutable {
        uint64_t hi = rng();
        return format_id(hi, rng());
    };
}

ToolCallIdSource seeded_tool_call_ids(uint64_t seed) {
    return [state = seed]() mutable {
        uint64_t hi = splitmix64(state);
        return format_id(hi, splitmix64(state));
    };
}

}  // namespace myriad::api
