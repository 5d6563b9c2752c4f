#include "format/read_speed.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/error.h"
#include "util/progress.h"

namespace myriad {

namespace {

// Bytes of the first `len` of the file behind `fd` that sit in the page cache (mincore on a
// fresh mapping: mapping pages does not read them).
uint64_t cached_bytes(int fd, uint64_t len) {
    if (len == 0) return 0;
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return 0;
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> vec((len + page - 1) / page);
    uint64_t n = 0;
    if (::mincore(p, len, vec.data()) == 0)
        for (unsigned char v : vec) n += (v & 1) ? page : 0;
    ::munmap(p, len);
    return std::min(n, len);
}

}  // namespace

std::string ReadSpeed::cache_note() const {
    if (cached_before == 0) return "nothing was in the page cache: a cold read";
    if (cached_after * 100 <= bytes)
        return "page cache dropped first (" + human_size(static_cast<double>(cached_before)) +
               " of it was cached)";
    return "the page cache could not be dropped for " +
           human_size(static_cast<double>(cached_after)) +
           " of it (mapped by a running process, or not this user's to drop): that part was a "
           "memory read; run as root or stop the process holding the files for a disk figure";
}

ReadSpeed measure_read_speed(const std::vector<std::string>& files, uint64_t limit) {
    ReadSpeed r;
    std::vector<int> fds;
    std::vector<uint64_t> lens;
    struct Close {
        std::vector<int>& f;
        ~Close() {
            for (int fd : f) ::close(fd);
        }
    } close_all{fds};
    uint64_t left = limit == 0 ? UINT64_MAX : limit;
    for (const std::string& path : files) {
        if (left == 0) break;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) bad_input("{}: cannot open: {}", path, std::strerror(errno));
        fds.push_back(fd);
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            bad_input("{}: not a regular file", path);
        const uint64_t len = std::min<uint64_t>(static_cast<uint64_t>(st.st_size), left);
        left -= len;
        lens.push_back(len);
        r.cached_before += cached_bytes(fd, len);
        ::posix_fadvise(fd, 0, static_cast<off_t>(len), POSIX_FADV_DONTNEED);
        r.cached_after += cached_bytes(fd, len);
    }
    std::vector<uint8_t> buf(size_t{16} << 20);
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < fds.size(); ++i) {
        ::posix_fadvise(fds[i], 0, static_cast<off_t>(lens[i]), POSIX_FADV_SEQUENTIAL);
        for (uint64_t at = 0; at < lens[i];) {
            const size_t want = static_cast<size_t>(std::min<uint64_t>(lens[i] - at, buf.size()));
            const ssize_t got = ::pread(fds[i], buf.data(), want, static_cast<off_t>(at));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0)
                internal_error("{}: reading at offset {} failed: {}", files[i], at,
                               std::strerror(errno));
            if (got == 0) break;  // shrank while read
            at += static_cast<uint64_t>(got);
            r.bytes += static_cast<uint64_t>(got);
        }
        ++r.files;
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // What was read for the measure is not kept: the load reads it again, once.
    for (size_t i = 0; i < fds.size(); ++i)
        ::posix_fadvise(fds[i], 0, static_cast<off_t>(lens[i]), POSIX_FADV_DONTNEED);
    return r;
}

}  // namespace myriad
