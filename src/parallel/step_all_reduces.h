// The all-reduces one step issued, by message size, with the algorithm the group runs for each
// size and its time as measured at start: what a step's collectives cost (bench-model prints it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "parallel/communicator.h"

namespace myriad {

struct StepAllReduces {
    struct Size {
        size_t bytes = 0;
        int64_t count = 0;
        std::string algorithm;  // "" where the group measured nothing
        double us = -1;         // each, as measured; < 0: not measured
    };
    std::vector<Size> sizes;  // ascending bytes
    double ms = -1;           // the step's total; < 0 when some size was not measured
};

// The all-reduces `group` counted since `before` (its all_reduce_counts() then), costed.
StepAllReduces step_all_reduces(const CommGroup& group, const std::map<size_t, int64_t>& before);

}  // namespace myriad
