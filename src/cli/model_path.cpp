// Where MODEL points: a path as given, ORG/NAME[@REVISION] through the HF cache's refs/ to its
// snapshot, or the model shipped in the repository when it is left out.
#include <unistd.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "format/gguf.h"
#include "hub/hf_cache.h"
#include "util/error.h"

namespace myriad::cli {

namespace {

constexpr std::string_view kWhatIsAModel =
    "a model is a folder holding config.json, the safetensors weights and the tokenizer files "
    "(as on the Hugging Face hub), a .gguf file, or ORG/NAME already downloaded; "
    "`myriad pull ORG/NAME` downloads one";

}  // namespace

std::string model_path(const std::string& model) {
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

std::string resolve_model_folder(const std::string& model, bool tokenizer_only) {
    namespace fs = std::filesystem;
    const std::string path = model_path(model);
    const std::string shown = model.empty() ? path : model;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        if (tokenizer_only || fs::exists(fs::path(path) / "config.json", ec)) return path;
        bad_input("model {}: the folder has no config.json; {}", shown, kWhatIsAModel);
    }
    if (fs::is_regular_file(path, ec)) {
        if (is_gguf_path(path)) return path;
        bad_input("model {}: a file that is not .gguf; {}", shown, kWhatIsAModel);
    }
    if (auto ref = hub::parse_repo_id(model);
        ref && !model.starts_with(".") && !model.starts_with("/"))
        bad_input(
            "model {}: no such folder here, and not in the Hugging Face cache ({}); "
            "`myriad pull {}` downloads it",
            shown, hub::hub_cache_dir(), model);
    bad_input("model {}: no such file or folder; {}", shown, kWhatIsAModel);
}

std::string resolve_model(const std::string& model) {
    return resolve_model_folder(model, /*tokenizer_only=*/false);
}

}  // namespace myriad::cli
