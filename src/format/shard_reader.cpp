#include "format/shard_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>

#include "util/error.h"

namespace myriad {

namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

uint64_t page_size() {
    static const uint64_t p = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    return p;
}

uint64_t round_down(uint64_t v, uint64_t a) {
    return v / a * a;
}
uint64_t round_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

// Kernels before 5.14 have no MADV_POPULATE_READ: the first EINVAL switches every thread to pread.
std::atomic<bool> g_no_populate{false};

}  // namespace

ShardReader::ShardReader(std::vector<ReadFile> files, std::vector<std::vector<ByteSpan>> consumers,
                         ShardReaderOptions options)
    : files_(std::move(files)), spans_(std::move(consumers)), options_(std::move(options)) {
    const uint64_t page = page_size();
    options_.threads = std::max(1, options_.threads);
    options_.chunk_bytes = std::max(page, round_down(options_.chunk_bytes, page));
    for (size_t c = 0; c < spans_.size(); ++c)
        for (const ByteSpan& s : spans_[c]) check_span(s, "consumer " + std::to_string(c));
    // The page-aligned union of every span, file by file, cut into chunks.
    for (int f = 0; f < static_cast<int>(files_.size()); ++f) {
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        const uint64_t limit = round_up(files_[f].size, page);
        for (const auto& list : spans_)
            for (const ByteSpan& s : list)
                if (s.file == f && s.end > s.begin)
                    ranges.emplace_back(round_down(s.begin, page),
                                        std::min(round_up(s.end, page), limit));
        std::sort(ranges.begin(), ranges.end());
        std::vector<std::pair<uint64_t, uint64_t>> merged;
        for (const auto& r : ranges) {
            if (!merged.empty() && r.first <= merged.back().second)
                merged.back().second = std::max(merged.back().second, r.second);
            else
                merged.push_back(r);
        }
        for (const auto& [b, e] : merged)
            for (uint64_t at = b; at < e; at += options_.chunk_bytes) {
                Chunk c;
                c.file = f;
                c.begin = at;
                c.end = std::min(e, at + options_.chunk_bytes);
                c.global = planned_;
                planned_ += c.end - c.begin;
                chunks_.push_back(c);
            }
    }
    stats_.bytes_planned = planned_;
    span_chunks_.resize(spans_.size());
    for (size_t c = 0; c < spans_.size(); ++c)
        for (const ByteSpan& s : spans_[c]) {
            const auto range = chunks_of(s);
            span_chunks_[c].push_back(range);
            for (size_t k = range.first; k <= range.second && range.first != kNone; ++k)
                ++chunks_[k].pending;
        }
    waiting_.assign(spans_.size(), kNone);
    position_.assign(spans_.size(), 0);
    finished_.assign(spans_.size(), false);
    for (size_t c = 0; c < spans_.size(); ++c) {
        finished_[c] = spans_[c].empty();
        if (!spans_[c].empty() && span_chunks_[c][0].first != kNone)
            position_[c] = chunks_[span_chunks_[c][0].first].global;
    }
    for (const ReadFile& f : files_) {
        const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            for (int d : fds_) ::close(d);
            bad_input("{}: cannot open: {}", f.path, std::strerror(err));
        }
        fds_.push_back(fd);
    }
}

void ShardReader::start(std::function<void(uint64_t)> on_read) {
    MYRIAD_CHECK(threads_.empty(), "shard reader started twice");
    on_read_ = std::move(on_read);
    start_ = std::chrono::steady_clock::now();
    const int n = static_cast<int>(std::min<size_t>(static_cast<size_t>(options_.threads),
                                                    std::max<size_t>(chunks_.size(), 1)));
    for (int t = 0; t < n; ++t) threads_.emplace_back([this] { run(); });
}

ShardReader::~ShardReader() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    work_cv_.notify_all();
    read_cv_.notify_all();
    for (auto& t : threads_) t.join();
    for (int fd : fds_) ::close(fd);
}

void ShardReader::check_span(const ByteSpan& s, const std::string& who) const {
    MYRIAD_CHECK(s.file >= 0 && s.file < static_cast<int>(files_.size()) && s.begin <= s.end &&
                     s.end <= files_[static_cast<size_t>(s.file)].size,
                 "shard reader: {} asks for bytes [{}, {}) of file {} outside it", who, s.begin,
                 s.end, s.file);
}

std::pair<size_t, size_t> ShardReader::chunks_of(const ByteSpan& s) const {
    if (s.end <= s.begin) return {kNone, 0};
    auto find = [&](uint64_t off) {
        // The last chunk of the file starting at or before `off`.
        auto it = std::upper_bound(chunks_.begin(), chunks_.end(), std::make_pair(s.file, off),
                                   [](const std::pair<int, uint64_t>& v, const Chunk& c) {
                                       return v.first < c.file ||
                                              (v.first == c.file && v.second < c.begin);
                                   });
        MYRIAD_CHECK(it != chunks_.begin(), "shard reader: span outside every chunk");
        return static_cast<size_t>(it - chunks_.begin()) - 1;
    };
    return {find(s.begin), find(s.end - 1)};
}

bool ShardReader::pick(size_t* chunk) {
    // First the chunks a consumer is waiting for, wherever they are.
    for (size_t c = 0; c < spans_.size(); ++c) {
        if (waiting_[c] == kNone) continue;
        const auto [first, last] = span_chunks_[c][waiting_[c]];
        for (size_t k = first; k <= last && first != kNone; ++k)
            if (chunks_[k].state == State::Unread) {
                *chunk = k;
                return true;
            }
    }
    while (next_ < chunks_.size() && chunks_[next_].state != State::Unread) ++next_;
    if (next_ >= chunks_.size()) return false;
    uint64_t slowest = std::numeric_limits<uint64_t>::max();
    for (size_t c = 0; c < spans_.size(); ++c)
        if (!finished_[c]) slowest = std::min(slowest, position_[c]);
    if (slowest == std::numeric_limits<uint64_t>::max()) return false;
    if (chunks_[next_].global >= slowest + options_.window_bytes) return false;
    *chunk = next_++;
    return true;
}

void ShardReader::run() {
    for (;;) {
        size_t k = 0;
        {
            std::unique_lock lock(mu_);
            for (;;) {
                if (stop_ || error_) return;
                if (pick(&k)) break;
                const bool all_done =
                    std::all_of(finished_.begin(), finished_.end(), [](bool b) { return b; });
                bool handed_out = true;
                for (size_t i = next_; i < chunks_.size() && handed_out; ++i)
                    handed_out = chunks_[i].state != State::Unread;
                if (all_done || handed_out) return;
                work_cv_.wait(lock);
            }
            chunks_[k].state = State::Reading;
        }
        try {
            read_chunk(chunks_[k]);
        } catch (...) {
            {
                std::lock_guard lock(mu_);
                if (!error_) error_ = std::current_exception();
            }
            read_cv_.notify_all();
            work_cv_.notify_all();
            return;
        }
        const uint64_t bytes = chunks_[k].end - chunks_[k].begin;
        // Told before the chunk counts as read: a consumer that saw every byte read has seen
        // every byte counted.
        if (on_read_) on_read_(bytes);
        {
            std::lock_guard lock(mu_);
            chunks_[k].state = State::Read;
            stats_.bytes_read += bytes;
            ++stats_.reads;
            stats_.read_log.push_back({chunks_[k].file, chunks_[k].begin, chunks_[k].end});
            stats_.read_seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        }
        read_cv_.notify_all();
    }
}

void ShardReader::read_chunk(const Chunk& c) {
    const ReadFile& f = files_[static_cast<size_t>(c.file)];
    if (!options_.use_pread && !g_no_populate.load()) {
        void* at = const_cast<uint8_t*>(f.map + c.begin);
        if (::madvise(at, c.end - c.begin, MADV_POPULATE_READ) == 0) return;
        if (errno != EINVAL)
            internal_error("{}: reading bytes [{}, {}) failed: {}", f.path, c.begin, c.end,
                           std::strerror(errno));
        g_no_populate = true;
    }
    // pread through the page cache into a scratch buffer: the mapping then finds the pages there.
    thread_local std::vector<uint8_t> scratch(size_t{8} << 20);
    const int fd = fds_[static_cast<size_t>(c.file)];
    const uint64_t end = std::min(c.end, f.size);
    for (uint64_t at = c.begin; at < end;) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(end - at, scratch.size()));
        const ssize_t got = ::pread(fd, scratch.data(), want, static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            internal_error("{}: reading at offset {} failed: {}", f.path, at, std::strerror(errno));
        if (got == 0)
            bad_input("{}: ends at byte {}, before the {} bytes its header promises", f.path, at,
                      f.size);
        at += static_cast<uint64_t>(got);
    }
}

void ShardReader::drop_chunk(const Chunk& c) {
    const ReadFile& f = files_[static_cast<size_t>(c.file)];
    // Out of this mapping first (the page cache keeps mapped pages), then out of the cache.
    ::madvise(const_cast<uint8_t*>(f.map + c.begin), c.end - c.begin, MADV_DONTNEED);
    ::posix_fadvise(fds_[static_cast<size_t>(c.file)], static_cast<off_t>(c.begin),
                    static_cast<off_t>(c.end - c.begin), POSIX_FADV_DONTNEED);
}

void ShardReader::wait(int consumer, size_t index) {
    const auto cu = static_cast<size_t>(consumer);
    MYRIAD_CHECK(cu < spans_.size() && index < spans_[cu].size(),
                 "shard reader: consumer {} has no span {}", consumer, index);
    const auto [first, last] = span_chunks_[cu][index];
    if (first == kNone) return;
    MYRIAD_CHECK(!threads_.empty(), "shard reader waited on before start()");
    std::unique_lock lock(mu_);
    waiting_[cu] = index;
    position_[cu] = chunks_[first].global;
    work_cv_.notify_all();
    read_cv_.wait(lock, [&] {
        if (stop_ || error_) return true;
        for (size_t k = first; k <= last; ++k)
            if (chunks_[k].state != State::Read) return false;
        return true;
    });
    waiting_[cu] = kNone;
    if (error_) std::rethrow_exception(error_);
    MYRIAD_CHECK(!stop_, "shard reader stopped while consumer {} waited", consumer);
}

void ShardReader::release(int consumer, size_t index) {
    const auto cu = static_cast<size_t>(consumer);
    MYRIAD_CHECK(cu < spans_.size() && index < spans_[cu].size(),
                 "shard reader: consumer {} has no span {}", consumer, index);
    const auto [first, last] = span_chunks_[cu][index];
    if (first == kNone) return;
    std::vector<size_t> drop;
    {
        std::lock_guard lock(mu_);
        for (size_t k = first; k <= last; ++k) {
            MYRIAD_CHECK(chunks_[k].pending > 0, "shard reader: chunk {} released twice", k);
            if (--chunks_[k].pending == 0 && chunks_[k].state == State::Read &&
                options_.drop_after_release) {
                drop.push_back(k);
                ++stats_.drops;
                stats_.bytes_dropped += chunks_[k].end - chunks_[k].begin;
            }
        }
    }
    for (size_t k : drop) drop_chunk(chunks_[k]);
}

void ShardReader::finish(int consumer) {
    {
        std::lock_guard lock(mu_);
        finished_[static_cast<size_t>(consumer)] = true;
        waiting_[static_cast<size_t>(consumer)] = kNone;
    }
    work_cv_.notify_all();
}

ShardReadStats ShardReader::stats() const {
    std::lock_guard lock(mu_);
    return stats_;
}

}  // namespace myriad
