// The disk's sequential read rate over a model's own files (`myriad inspect --read-speed`, and
// serve's short sample): each file's pages are dropped from the page cache first where the kernel
// lets this user (POSIX_FADV_DONTNEED; mincore says how much stayed), then the files are read
// front to back with plain large reads, and dropped again. The yardstick of the load rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace myriad {

struct ReadSpeed {
    uint64_t bytes = 0;
    double seconds = 0;
    int files = 0;
    // Of the bytes measured: resident in the page cache before the drop, and after it (a
    // cached read is no measure of the disk).
    uint64_t cached_before = 0, cached_after = 0;
    double gb_per_s() const { return seconds > 0 ? static_cast<double>(bytes) / 1e9 / seconds : 0; }
    // "page cache dropped first (12.0 GB were cached)" or why it could not be.
    std::string cache_note() const;
};

// Reads `files` in order, at most `limit` bytes in all (0: every byte). Bad input naming a
// file that is missing or unreadable.
ReadSpeed measure_read_speed(const std::vector<std::string>& files, uint64_t limit = 0);

}  // namespace myriad
