#include "hub/downloader.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "hub/checksum.h"
#include "hub/part_state.h"
#include "util/error.h"
#include "util/log.h"
#include "util/progress.h"

namespace myriad::hub {

namespace fs = std::filesystem;

namespace {

bool matches_any(const std::vector<std::string>& globs, const std::string& path) {
    for (const auto& g : globs)
        if (::fnmatch(g.c_str(), path.c_str(), 0) == 0) return true;
    return false;
}

// One file being fetched: its open .incomplete file and part state.
struct FileJob {
    HubFile file;
    std::string blob, incomplete;
    std::unique_ptr<PartState> parts;
    int fd = -1;
    int64_t pending = 0;   // chunks not yet done
    int attempts = 0;      // whole-file attempts (a verification failure starts a new one)
    bool discard = false;  // its bytes are worthless (the file changed): delete on failure
};

// Shared by the workers.
struct Shared {
    const PullOptions* options;
    const HttpSettings* settings;
    std::string commit, snapshot;
    std::mutex mu;
    std::deque<std::pair<FileJob*, int64_t>> queue;  // (file, chunk)
    std::optional<Error> failure;
    std::atomic<int64_t> downloaded{0};
    Progress* progress = nullptr;
};

void open_job(FileJob& j, int64_t chunk) {
    j.parts = std::make_unique<PartState>(j.incomplete + ".parts", j.file.size, chunk);
    // Without the part state, bytes in an .incomplete file are of unknown worth: start over.
    if (j.parts->done_bytes() == 0) fs::remove(j.incomplete);
    j.fd = ::open(j.incomplete.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (j.fd < 0) bad_input("{}: cannot write: {}", j.incomplete, std::strerror(errno));
    if (::ftruncate(j.fd, j.file.size) != 0)
        bad_input("{}: cannot size the file to {} bytes: {}", j.incomplete, j.file.size,
                  std::strerror(errno));
    j.pending = 0;
    for (int64_t i = 0; i < j.parts->chunks(); ++i)
        if (!j.parts->done(i)) ++j.pending;
}

// The snapshot entry: snapshots/COMMIT/PATH -> ../../blobs/ETAG (one more ../ per folder of PATH).
void link_snapshot(const std::string& snapshot, const HubFile& f) {
    const fs::path link = fs::path(snapshot) / f.path;
    fs::create_directories(link.parent_path());
    std::string target = "../../blobs/" + f.etag();
    for (char ch : f.path)
        if (ch == '/') target = "../" + target;
    std::error_code ec;
    fs::remove(link, ec);
    fs::create_symlink(target, link, ec);
    if (ec) internal_error("{}: cannot create the snapshot link: {}", link.string(), ec.message());
}

// Fetches chunk `i` of `j`; true when its bytes are on disk. A non-transient refusal or a
// changed file throws.
bool fetch_chunk(Shared& s, FileJob& j, int64_t i) {
    const auto [first, last] = j.parts->range(i);
    int64_t written = 0;
    HttpRequest req;
    req.url = resolve_url(s.options->ref.repo, s.commit, j.file.path);
    req.range = {static_cast<uint64_t>(first), static_cast<uint64_t>(last)};
    req.small = false;
    req.sink = [&](const char* data, size_t n) {
        // Never write past the chunk: extra bytes (a server that ignores Range) abort it.
        if (written + static_cast<int64_t>(n) > last - first + 1) return false;
        size_t off = 0;
        while (off < n) {
            const ssize_t w = ::pwrite(j.fd, data + off, n - off, first + written);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return false;
            off += static_cast<size_t>(w);
            written += w;
        }
        s.progress->add(static_cast<int64_t>(n));
        s.downloaded += static_cast<int64_t>(n);
        return true;
    };
    const std::string what = s.options->ref.repo + "/" + j.file.path;
    for (int attempt = 0;; ++attempt) {
        if (attempt > 0) {
            backoff_sleep(*s.settings, attempt);
            s.progress->add(-written);  // those bytes are fetched again
            written = 0;
        }
        HttpResponse r = http_once(req, *s.settings);
        const int64_t want = last - first + 1;
        if (r.status == 206 || r.status == 200) {
            // Content-Range: bytes FIRST-LAST/TOTAL. Another total means the file changed.
            int64_t total = -1;
            if (auto it = r.headers.find("content-range"); it != r.headers.end()) {
                const size_t slash = it->second.rfind('/');
                if (slash != std::string::npos) total = std::atoll(it->second.c_str() + slash + 1);
            } else if (r.status == 200) {
                total = written;
            }
            if (total >= 0 && total != j.file.size) {
                j.discard = true;
                internal_error(
                    "{}: the file changed on the hub during the download: {} bytes expected "
                    "(revision {}), the server now has {}; run pull again",
                    what, j.file.size, s.commit, total);
            }
            if (written == want && (r.status == 206 || first == 0)) return true;
            r.error = fmt::format("{} of {} bytes arrived", written, want);
            r.status = 0;
        }
        if (!r.transient() || attempt >= s.settings->retries) {
            s.progress->add(-written);
            if (r.status == 401 || r.status == 403 || r.status == 404)
                bad_input(
                    "{}: the hub refused the download (HTTP {}); set HF_TOKEN if the "
                    "repository is private or gated",
                    what, r.status);
            internal_error(
                "{}: bytes {}-{} failed after {} retries: {} (MYRIAD_HUB_RETRIES, "
                "MYRIAD_HUB_TIMEOUT); run pull again to resume",
                what, first, last, attempt, r.describe());
        }
        log::debug("{}: bytes {}-{}: {}; retrying", what, first, last, r.describe());
    }
}

// All chunks are on disk: verify, then move into blobs/ and link; or delete and start over.
void finish_file(Shared& s, FileJob& j) {
    ::fdatasync(j.fd);
    ::close(j.fd);
    j.fd = -1;
    const std::string got =
        file_digest(j.incomplete, j.file.lfs() ? HashKind::Sha256 : HashKind::GitBlobSha1);
    const std::string what = s.options->ref.repo + "/" + j.file.path;
    if (got != j.file.etag()) {
        fs::remove(j.incomplete);
        j.parts->remove();
        s.progress->add(-j.file.size);
        if (++j.attempts >= 2)
            internal_error("{}: {} mismatch twice (expected {}, got {}); the download was deleted",
                           what, j.file.lfs() ? "sha256" : "git sha1", j.file.etag(), got);
        log::warn("{}: {} mismatch (expected {}, got {}); deleted, fetching it again", what,
                  j.file.lfs() ? "sha256" : "git sha1", j.file.etag(), got);
        open_job(j, s.options->chunk_bytes);
        std::lock_guard lock(s.mu);
        for (int64_t i = 0; i < j.parts->chunks(); ++i) s.queue.push_back({&j, i});
        return;
    }
    fs::rename(j.incomplete, j.blob);
    j.parts->remove();
    link_snapshot(s.snapshot, j.file);
    s.progress->note(
        fmt::format("{}: {} verified", j.file.path, human_size(static_cast<double>(j.file.size))));
}

void worker(Shared& s) {
    for (;;) {
        std::pair<FileJob*, int64_t> task;
        {
            std::lock_guard lock(s.mu);
            if (s.failure || s.queue.empty()) return;
            task = s.queue.front();
            s.queue.pop_front();
        }
        auto& [job, chunk] = task;
        try {
            if (!fetch_chunk(s, *job, chunk)) continue;
            ::fdatasync(job->fd);  // the bytes first, then the mark
            bool last = false;
            {
                std::lock_guard lock(s.mu);
                job->parts->mark(chunk);
                last = --job->pending == 0;
            }
            if (last) finish_file(s, *job);
        } catch (const Error& e) {
            std::lock_guard lock(s.mu);
            if (!s.failure) s.failure = e;
            return;
        }
    }
}

}  // namespace

std::vector<HubFile> select_files(const RepoInfo& info, const PullOptions& o) {
    std::vector<HubFile> out;
    for (const HubFile& f : info.files) {
        if (!o.include.empty() && !matches_any(o.include, f.path)) continue;
        if (matches_any(o.exclude, f.path)) continue;
        out.push_back(f);
    }
    return out;
}

PullResult pull(const RepoInfo& info, const PullOptions& o, const HttpSettings& settings) {
    if (o.jobs < 1 || o.jobs > 64) bad_input("--jobs {} must be 1 to 64", o.jobs);
    if (o.chunk_bytes < 1) bad_input("MYRIAD_HUB_CHUNK must be at least 1 byte");
    const fs::path repo = repo_cache_dir(o.ref.repo);
    const fs::path blobs = repo / "blobs";
    PullResult result;
    result.snapshot = (repo / "snapshots" / info.commit).string();
    std::error_code ec;
    fs::create_directories(blobs, ec);
    if (ec)
        bad_input("{}: cannot create the cache folder: {} (set HF_HOME)", blobs.string(),
                  ec.message());
    fs::create_directories(result.snapshot);

    const std::vector<HubFile> files = select_files(info, o);
    if (files.empty()) bad_input("{}: no files match --include/--exclude", o.ref.text());
    std::vector<std::unique_ptr<FileJob>> jobs;
    int64_t have = 0, need = 0;
    for (const HubFile& f : files) {
        result.bytes += f.size;
        ++result.files;
        const std::string blob = (blobs / f.etag()).string();
        if (fs::exists(blob) && static_cast<int64_t>(fs::file_size(blob)) == f.size) {
            link_snapshot(result.snapshot, f);  // already complete (verified when it was made)
            have += f.size;
            ++result.already;
            continue;
        }
        auto j = std::make_unique<FileJob>();
        j->file = f;
        j->blob = blob;
        j->incomplete = blob + ".incomplete";
        jobs.push_back(std::move(j));
    }
    // Free space: what is still missing, before anything is written.
    for (auto& j : jobs) {
        int64_t done = 0;
        if (fs::exists(j->incomplete + ".parts"))
            done = PartState(j->incomplete + ".parts", j->file.size, o.chunk_bytes).done_bytes();
        have += done;
        need += j->file.size - done;
    }
    struct statvfs vfs {};
    if (::statvfs(blobs.c_str(), &vfs) == 0) {
        const auto avail = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
        if (avail < need)
            bad_input(
                "{}: {} to download, {} free in {}; free space or set HF_HOME to a larger "
                "disk",
                o.ref.text(), human_size(static_cast<double>(need)),
                human_size(static_cast<double>(avail)), blobs.string());
    }

    Shared s;
    s.options = &o;
    s.settings = &settings;
    s.commit = info.commit;
    s.snapshot = result.snapshot;
    {
        Progress progress(o.ref.text(), result.bytes, have);
        s.progress = &progress;
        std::vector<FileJob*> empty_files;
        for (auto& j : jobs) {
            open_job(*j, o.chunk_bytes);
            if (j->pending == 0) empty_files.push_back(j.get());
            for (int64_t i = 0; i < j->parts->chunks(); ++i)
                if (!j->parts->done(i)) s.queue.push_back({j.get(), i});
        }
        try {
            for (FileJob* j : empty_files) finish_file(s, *j);  // empty or fully resumed
        } catch (const Error& e) {
            s.failure = e;
        }
        std::vector<std::thread> threads;
        for (int t = 0; t < o.jobs; ++t) threads.emplace_back([&] { worker(s); });
        for (auto& t : threads) t.join();
        for (auto& j : jobs) {
            if (j->fd >= 0) ::close(j->fd);
            if (j->discard) {
                fs::remove(j->incomplete, ec);
                j->parts->remove();
            }
        }
        if (!s.failure) {
            for (auto& j : jobs)
                if (j->pending != 0 || fs::exists(j->incomplete))
                    s.failure =
                        Error(ErrorKind::Internal,
                              fmt::format("{}: incomplete after the download", j->file.path));
        }
    }
    if (s.failure) throw *s.failure;
    result.downloaded = s.downloaded;
    if (info.commit != o.ref.revision) {
        fs::create_directories(repo / "refs" / fs::path(o.ref.revision).parent_path());
        std::ofstream(repo / "refs" / o.ref.revision, std::ios::trunc) << info.commit;
    }
    return result;
}

}  // namespace myriad::hub
