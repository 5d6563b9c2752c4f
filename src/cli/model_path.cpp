// Where MODEL points when it is left out: the model shipped in the repository.
#include <unistd.h>

#include <filesystem>

#include "cli/commands.h"

namespace myriad::cli {

std::string resolve_model(const std::string& model) {
    if (!model.empty()) return model;
    namespace fs = std::filesystem;
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
