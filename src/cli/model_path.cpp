// Where MODEL points: a path as given, ORG/NAME[@REVISION] through the HF cache's refs/ to its
// snapshot, or the model shipped in the repository when it is left out.
#include <unistd.h>

#include <filesystem>

#include "cli/commands.h"
#include "hub/hf_cache.h"

namespace myriad::cli {

std::string resolve_model(const std::string& model) {
    namespace fs = std::filesystem;
    if (!model.empty()) {
        // ORG/NAME[@REVISION] in the HF cache, unless a local path of that name exists.
        std::error_code ec;
        if (!fs::exists(model, ec))
            if (auto ref = hub::parse_repo_id(model))
                if (auto snapshot = hub::cached_snapshot(*ref)) return *snapshot;
        return model;
    }
    // Next to the executable (build/myriad -> models/...), then the source tree it was built from.
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path p = exe.parent_path().parent_path() / "models" / "myriad-tiny";
        if (fs::exists(p / "config.json")) return p.string();
    }
    return std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny";
}

}  // namespace myriad::cli
