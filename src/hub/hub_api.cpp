#include "hub/hub_api.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

#include "format/json_file.h"
#include "util/error.h"

namespace myriad::hub {

namespace {

// A refusal of the hub as a one-line error: 401/404 name the repository (and HF_TOKEN), other
// statuses the URL.
[[noreturn]] void refused(const HttpResponse& r, const std::string& what, const std::string& url) {
    auto code = r.headers.find("x-error-code");
    const std::string error_code = code == r.headers.end() ? "" : code->second;
    if (error_code == "RevisionNotFound")
        bad_input("{}: revision not found on {}", what, hub_endpoint());
    if (error_code == "EntryNotFound") bad_input("{}: no such file on {}", what, hub_endpoint());
    if (r.status == 401 || r.status == 403 || error_code == "RepositoryNotFound" ||
        error_code == "GatedRepo")
        bad_input(
            "{}: not found on {}, or private or gated (HTTP {}): check the name, and set HF_TOKEN "
            "to a token that may read it",
            what, hub_endpoint(), r.status);
    if (r.status == 404) bad_input("{}: not found on {} (HTTP 404, {})", what, hub_endpoint(), url);
    if (r.status == 0)
        internal_error(
            "{}: {} did not answer: {} (MYRIAD_HUB_RETRIES and MYRIAD_HUB_TIMEOUT set "
            "how long to keep trying)",
            what, url, r.describe());
    internal_error("{}: {} answered {}", what, url, r.describe());
}

}  // namespace

std::string hub_endpoint() {
    std::string e = "https://huggingface.co";
    if (const char* v = std::getenv("HF_ENDPOINT"); v && *v) e = v;
    while (e.ends_with('/')) e.pop_back();
    return e;
}

std::string resolve_url(const std::string& repo, const std::string& revision,
                        const std::string& path) {
    return fmt::format("{}/{}/resolve/{}/{}", hub_endpoint(), repo, url_encode(revision, false),
                       url_encode(path, true));
}

RepoInfo fetch_repo_info(const RepoRef& ref, const HttpSettings& s) {
    const std::string url = fmt::format("{}/api/models/{}/revision/{}?blobs=true", hub_endpoint(),
                                        ref.repo, url_encode(ref.revision, false));
    HttpRequest req;
    req.url = url;
    const HttpResponse r = http_with_retries(req, s);
    if (r.status != 200) refused(r, ref.text(), url);
    const auto j = parse_json(r.body, url);
    RepoInfo info;
    if (!j.is_object() || !j.contains("sha") || !j["sha"].is_string() || !j.contains("siblings") ||
        !j["siblings"].is_array())
        internal_error("{}: the answer lacks \"sha\" or \"siblings\"", url);
    info.commit = j["sha"].get<std::string>();
    if (!is_commit_hash(info.commit))
        internal_error("{}: \"sha\" {} is not a commit id", url, printable(info.commit));
    for (const auto& sib : j["siblings"]) {
        if (!sib.is_object() || !sib.contains("rfilename") || !sib["rfilename"].is_string())
            internal_error("{}: a sibling without \"rfilename\"", url);
        HubFile f;
        f.path = sib["rfilename"].get<std::string>();
        // Paths become file names under the snapshot: refuse escapes.
        if (f.path.empty() || f.path.front() == '/' || f.path.find("..") != std::string::npos)
            internal_error("{}: refusing file name {}", url, printable(f.path));
        if (sib.contains("size") && sib["size"].is_number_integer())
            f.size = sib["size"].get<int64_t>();
        if (sib.contains("blobId") && sib["blobId"].is_string())
            f.blob_id = sib["blobId"].get<std::string>();
        if (sib.contains("lfs") && sib["lfs"].is_object()) {
            const auto& lfs = sib["lfs"];
            if (lfs.contains("sha256") && lfs["sha256"].is_string())
                f.sha256 = lfs["sha256"].get<std::string>();
            if (lfs.contains("size") && lfs["size"].is_number_integer())
                f.size = lfs["size"].get<int64_t>();
        }
        if (f.size < 0 || (f.sha256.empty() && f.blob_id.empty()))
            internal_error(
                "{}: no size or checksum for {} (the hub should give them with "
                "?blobs=true)",
                url, printable(f.path));
        info.files.push_back(std::move(f));
    }
    return info;
}

std::string fetch_small_file(const std::string& repo, const std::string& revision,
                             const std::string& path, const HttpSettings& s) {
    HttpRequest req;
    req.url = resolve_url(repo, revision, path);
    const HttpResponse r = http_with_retries(req, s);
    if (r.status != 200) refused(r, repo + "/" + path, req.url);
    return r.body;
}

std::string fetch_range(const std::string& repo, const std::string& revision,
                        const std::string& path, uint64_t first, uint64_t last,
                        const HttpSettings& s) {
    HttpRequest req;
    req.url = resolve_url(repo, revision, path);
    req.range = {first, last};
    HttpResponse r = http_with_retries(req, s);
    if (r.status == 200 && first == 0 && r.body.size() > last)
        r.body.resize(last + 1);
    else if (r.status != 206)
        refused(r, repo + "/" + path, req.url);
    if (r.body.size() != last - first + 1)
        internal_error("{}/{}: asked for bytes {}-{}, got {} bytes", repo, path, first, last,
                       r.body.size());
    return r.body;
}

}  // namespace myriad::hub
