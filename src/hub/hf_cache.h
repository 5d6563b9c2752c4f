// The Hugging Face cache layout shared with transformers, vLLM and llama.cpp (reference.md §3.3):
// $HF_HOME/hub/models--ORG--NAME/{blobs/ETAG, snapshots/COMMIT/PATH -> ../../blobs/ETAG,
// refs/REVISION (a file holding the commit)}; and ORG/NAME[@REVISION] names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace myriad::hub {

struct RepoRef {
    std::string repo;               // ORG/NAME
    std::string revision = "main";  // a branch, tag or commit
    std::string text() const { return revision == "main" ? repo : repo + "@" + revision; }
};

// ORG/NAME or ORG/NAME@REVISION with hub-legal names (letters, digits, '-', '_', '.'); nullopt
// for anything else (a path, a file name).
std::optional<RepoRef> parse_repo_id(std::string_view text);

// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub.
std::string hub_cache_dir();

// <cache>/models--ORG--NAME
std::string repo_cache_dir(const std::string& repo);

// The snapshot folder of `ref` when the cache holds it: refs/REVISION names the commit, or
// REVISION is itself a commit with a snapshots/ folder.
std::optional<std::string> cached_snapshot(const RepoRef& ref);

// A commit id: 40 lowercase hex digits.
bool is_commit_hash(std::string_view s);

}  // namespace myriad::hub
