// The Hugging Face hub's HTTP API (reference.md §3.3): the file list of a revision with sizes and
// checksums, resolve URLs, small files and byte ranges. HF_ENDPOINT replaces the endpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/hf_cache.h"
#include "hub/http_client.h"

namespace myriad::hub {

struct HubFile {
    std::string path;
    int64_t size = -1;
    std::string sha256;   // LFS files
    std::string blob_id;  // git blob sha1
    bool lfs() const { return !sha256.empty(); }
    // The cache's blob name: the sha256 for LFS files, the git sha1 for the others.
    const std::string& etag() const { return lfs() ? sha256 : blob_id; }
};

struct RepoInfo {
    std::string commit;
    std::vector<HubFile> files;
};

// $HF_ENDPOINT without a trailing slash, else https://huggingface.co.
std::string hub_endpoint();

// GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true. Unknown repositories and
// revisions are bad input naming them (and HF_TOKEN for private ones).
RepoInfo fetch_repo_info(const RepoRef& ref, const HttpSettings& settings);

// {endpoint}/{repo}/resolve/{revision}/{path}
std::string resolve_url(const std::string& repo, const std::string& revision,
                        const std::string& path);

// A small file's bytes (config.json, the index), retried; bad input when the hub refuses.
std::string fetch_small_file(const std::string& repo, const std::string& revision,
                             const std::string& path, const HttpSettings& settings);

// Bytes [first, last] of a file by HTTP Range (a safetensors header).
std::string fetch_range(const std::string& repo, const std::string& revision,
                        const std::string& path, uint64_t first, uint64_t last,
                        const HttpSettings& settings);

}  // namespace myriad::hub
