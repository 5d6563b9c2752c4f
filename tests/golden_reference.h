// The reference logits of tests/goldens (made by tools/make_goldens.py with transformers).
#pragma once

#include <string>
#include <vector>

namespace myriad::testing {

struct GoldenPrompt {
    std::vector<int32_t> ids, generated;  // generated: g0..g8
    std::vector<float> prefill, decode;   // [T, V], [8, V]
};

struct GoldenReference {
    int64_t vocab = 0;
    GoldenPrompt p[2];
};

std::string golden_dir(const std::string& name);
GoldenReference load_golden_reference(const std::string& name);
// reference.safetensors of the checkpoint folder `dir` (e.g. one of tests/goldens_quant).
GoldenReference load_reference_in(const std::string& dir);

// The six golden models.
extern const char* const kGoldenModels[6];

}  // namespace myriad::testing
