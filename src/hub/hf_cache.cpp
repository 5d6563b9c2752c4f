#include "hub/hf_cache.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace myriad::hub {

namespace fs = std::filesystem;

namespace {

bool is_name(std::string_view s) {
    if (s.empty() || s.size() > 96 || s == "." || s == "..") return false;
    for (char ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.')
            return false;
    return true;
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

}  // namespace

bool is_commit_hash(std::string_view s) {
    if (s.size() != 40) return false;
    for (char ch : s)
        if (!std::isdigit(static_cast<unsigned char>(ch)) && (ch < 'a' || ch > 'f')) return false;
    return true;
}

std::optional<RepoRef> parse_repo_id(std::string_view text) {
    RepoRef ref;
    if (const size_t at = text.find('@'); at != std::string_view::npos) {
        ref.revision = std::string(text.substr(at + 1));
        text = text.substr(0, at);
        // Branch and tag names may hold '/', never whitespace or "..".
        if (ref.revision.empty() || ref.revision.find("..") != std::string::npos) return {};
        for (char ch : ref.revision)
            if (std::isspace(static_cast<unsigned char>(ch)) || ch == '\\') return {};
    }
    const size_t slash = text.find('/');
    if (slash == std::string_view::npos) return {};
    if (!is_name(text.substr(0, slash)) || !is_name(text.substr(slash + 1))) return {};
    ref.repo = std::string(text);
    return ref;
}

std::string hub_cache_dir() {
    if (std::string v = env("HF_HUB_CACHE"); !v.empty()) return v;
    if (std::string v = env("HF_HOME"); !v.empty()) return v + "/hub";
    if (std::string v = env("XDG_CACHE_HOME"); !v.empty()) return v + "/huggingface/hub";
    return env("HOME") + "/.cache/huggingface/hub";
}

std::string repo_cache_dir(const std::string& repo) {
    std::string folder = "models--" + repo;
    for (size_t i = 0; (i = folder.find('/', i)) != std::string::npos;) folder.replace(i, 1, "--");
    return hub_cache_dir() + "/" + folder;
}

std::optional<std::string> cached_snapshot(const RepoRef& ref) {
    const fs::path dir = repo_cache_dir(ref.repo);
    std::string commit;
    if (std::ifstream in(dir / "refs" / ref.revision); in) std::getline(in, commit);
    if (commit.empty() && is_commit_hash(ref.revision)) commit = ref.revision;
    if (!is_commit_hash(commit)) return {};
    const fs::path snap = dir / "snapshots" / commit;
    std::error_code ec;
    if (!fs::is_directory(snap, ec)) return {};
    return snap.string();
}

}  // namespace myriad::hub
