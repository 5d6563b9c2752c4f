// `myriad pull`: a revision's files into the HF cache, several files and several byte ranges of
// each at once, resumable from the part state on disk, every file verified (LFS: sha256; others:
// git blob sha1) before it enters blobs/; a file that fails verification is deleted and fetched
// again once, then the pull fails. Environment: MYRIAD_HUB_CHUNK (bytes per range, default
// 64 MiB) and those of http_client.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/hub_api.h"

namespace myriad::hub {

struct PullOptions {
    RepoRef ref;
    std::vector<std::string> include, exclude;  // fnmatch globs on the file path
    int jobs = 8;                               // ranges in flight
    int64_t chunk_bytes = int64_t{64} << 20;
};

struct PullResult {
    std::string snapshot;  // the snapshot folder
    int files = 0;
    int64_t bytes = 0;       // of the selected files
    int64_t downloaded = 0;  // fetched in this run
    int already = 0;         // files that were complete before
};

// The files of `info` that the include/exclude globs select (all when include is empty).
std::vector<HubFile> select_files(const RepoInfo& info, const PullOptions& options);

// Downloads the selected files. Bad input: not enough disk space. Failure (exit 1): a file that
// stays unreachable after the retries, changes size on the hub, or fails verification twice.
PullResult pull(const RepoInfo& info, const PullOptions& options, const HttpSettings& settings);

}  // namespace myriad::hub
