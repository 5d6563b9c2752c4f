#include "engine/drafter.h"

#include <algorithm>

#include "engine/eagle3_drafter.h"
#include "engine/mtp_drafter.h"
#include "engine/ngram_drafter.h"
#include "util/error.h"

namespace myriad {

SpeculativeMethod parse_speculative_method(const std::string& name) {
    if (name == "ngram") return SpeculativeMethod::Ngram;
    if (name == "mtp") return SpeculativeMethod::Mtp;
    if (name == "eagle3") return SpeculativeMethod::Eagle3;
    if (name == "none") return SpeculativeMethod::None;
    bad_input(
        "--speculative {}: the methods are ngram (prompt lookup), mtp (the checkpoint's MTP "
        "layers), eagle3 (an EAGLE3 draft checkpoint, --draft-model DIR) and none",
        name);
}

std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& config, WorkerGroup& workers) {
    switch (config.method) {
        case SpeculativeMethod::Ngram:
            return std::make_unique<NgramDrafter>(config);
        case SpeculativeMethod::Mtp:
            return std::make_unique<MtpDrafter>(workers);
        case SpeculativeMethod::Eagle3:
            return std::make_unique<Eagle3Drafter>(workers, config.draft_model);
        case SpeculativeMethod::None:
            break;
    }
    return nullptr;
}

int64_t next_draft_limit(int64_t limit, int64_t drafted, int64_t accepted, int64_t max) {
    if (drafted <= 0) return limit;
    return std::clamp<int64_t>(accepted == drafted ? drafted + 1 : accepted + 1, 1, max);
}

int64_t next_draft_rest(int64_t misses, int64_t rest_after) {
    if (rest_after <= 0 || misses < rest_after) return 0;
    const int64_t over = std::min<int64_t>(misses - rest_after, 4);
    return int64_t{2} << over;
}

}  // namespace myriad
