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

// The MTP golden (tests/goldens_mtp/v3_mtp, tools/make_mtp_golden.py): a prompt, the target's
// greedy token g0 after it, its hidden states before the final norm, the MTP layer's logits of
// row p = (hidden[p], token p + 1; g0 after the last), and the chain drafted from the last row.
struct MtpReference {
    std::vector<int32_t> prompt, chain;  // chain: d0, d1, d2
    int32_t g0 = 0;
    std::vector<float> hidden, logits, chain_logits;  // [T, H], [T, V], [chain - 1, V]
};
std::string mtp_golden_dir();
MtpReference load_mtp_reference();

// An EAGLE3 golden (tests/goldens_eagle3/NAME, tools/make_eagle3_golden.py): a draft for the
// moonlight_plain target, a prompt, the target's greedy g0 and aux hidden states ([T, 3 x hidden],
// the draft's order), the draft's logits of row p = (aux[p], token p + 1; g0 after the last) over
// its own vocabulary, and the chain (target ids) drafted from the last row.
struct Eagle3Reference {
    std::vector<int32_t> prompt, chain;
    int32_t g0 = 0;
    std::vector<float> aux, logits, chain_logits;  // [T, 3H], [T, Vd], [chain - 1, Vd]
};
std::string eagle3_golden_dir(const std::string& name);
Eagle3Reference load_eagle3_reference(const std::string& name);

// The six golden models.
extern const char* const kGoldenModels[6];

}  // namespace myriad::testing
