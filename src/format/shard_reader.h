// ShardReader: reads the byte ranges the ranks of one process need of a checkpoint's mapped files
// from disk, once, with a few threads, ahead of the ranks that copy them (reference: issue 25,
// "loading at the speed of the disk").
//
// Every consumer (a rank loading in this process) says up front which spans of which files it
// will read, in the order it reads them. The union of all spans, widened to whole pages, is cut
// into chunks in (file, offset) order; the threads bring each chunk into the mapping once
// (MADV_POPULATE_READ, or pread where the kernel lacks it), so ranks that share bytes share the
// read. A consumer waits for its span's chunks, copies them, and releases the span; a chunk
// every span of which was released is dropped from the mapping and the page cache (MADV_DONTNEED
// and POSIX_FADV_DONTNEED), so the weights never sit in memory twice. Spans a consumer keeps
// reading later (the CPU backend's zero-copy quantised weights) are never released, so stay.
// The threads read at most `window_bytes` ahead of the slowest consumer, and always the chunks a
// consumer is waiting for, so memory stays bounded and nothing deadlocks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace myriad {

// One file of the checkpoint and its read-only mapping (MappedFile).
struct ReadFile {
    std::string path;
    const uint8_t* map = nullptr;
    uint64_t size = 0;
};

// Bytes [begin, end) of file `file` (an index into the reader's files).
struct ByteSpan {
    int file = 0;
    uint64_t begin = 0, end = 0;
};

struct ShardReaderOptions {
    int threads = 4;
    uint64_t chunk_bytes = uint64_t{64} << 20;  // large, page-aligned reads
    uint64_t window_bytes = uint64_t{4} << 30;  // read ahead of the slowest consumer
    bool drop_after_release = true;             // MADV_DONTNEED + POSIX_FADV_DONTNEED
    bool use_pread = false;                     // pread instead of MADV_POPULATE_READ (tests)
};

// What the reader did, for tests and the load line.
struct ShardReadStats {
    uint64_t bytes_planned = 0;  // the page-aligned union of every consumer's spans
    uint64_t bytes_read = 0;
    int64_t reads = 0;  // chunks read
    uint64_t bytes_dropped = 0;
    int64_t drops = 0;  // chunks dropped after their last release
    // Every read, as (file, begin, end) in the order the threads issued them.
    std::vector<ByteSpan> read_log;
    double read_seconds = 0;  // from the start to the last chunk read
};

class ShardReader {
  public:
    // consumers[c]: the spans consumer c will wait for, in its order. Bad input naming the file
    // when one cannot be opened.
    ShardReader(std::vector<ReadFile> files, std::vector<std::vector<ByteSpan>> consumers,
                ShardReaderOptions options);
    // Starts the threads; `on_read` (optional) is told the bytes of each chunk read, from them.
    void start(std::function<void(uint64_t bytes)> on_read = {});
    ~ShardReader();  // stops the threads (consumers still waiting are woken with an error)
    ShardReader(const ShardReader&) = delete;
    ShardReader& operator=(const ShardReader&) = delete;

    // Blocks until span `index` of `consumer` is in memory. Throws the read error (naming the
    // file) when a read failed.
    void wait(int consumer, size_t index);
    // The consumer has copied span `index` and never reads it again.
    void release(int consumer, size_t index);
    // The consumer waits for nothing more (it finished or failed): the window no longer waits on
    // it.
    void finish(int consumer);

    uint64_t total_bytes() const { return planned_; }
    int consumers() const { return static_cast<int>(spans_.size()); }
    const std::vector<ByteSpan>& spans(int consumer) const { return spans_[consumer]; }
    ShardReadStats stats() const;

  private:
    enum class State : uint8_t { Unread, Reading, Read };
    struct Chunk {
        int file;
        uint64_t begin, end;  // page-aligned file offsets
        uint64_t global;      // bytes of all chunks before it (the window's measure)
        State state = State::Unread;
        int pending = 0;  // spans overlapping it not yet released
    };
    void run();
    bool pick(size_t* chunk);  // with mu_ held
    void read_chunk(const Chunk& c);
    void drop_chunk(const Chunk& c);
    std::pair<size_t, size_t> chunks_of(const ByteSpan& s) const;  // [first, last]
    void check_span(const ByteSpan& s, const std::string& who) const;

    std::vector<ReadFile> files_;
    std::vector<int> fds_;
    std::vector<std::vector<ByteSpan>> spans_;
    std::vector<std::vector<std::pair<size_t, size_t>>> span_chunks_;
    ShardReaderOptions options_;
    std::function<void(uint64_t)> on_read_;
    std::vector<Chunk> chunks_;
    uint64_t planned_ = 0;
    size_t next_ = 0;                 // first chunk not yet handed out in order
    std::vector<size_t> waiting_;     // per consumer: the span it waits on (or SIZE_MAX)
    std::vector<uint64_t> position_;  // per consumer: global bytes of its latest span
    std::vector<bool> finished_;
    mutable std::mutex mu_;
    std::condition_variable read_cv_, work_cv_;
    bool stop_ = false;
    std::exception_ptr error_;
    ShardReadStats stats_;
    std::chrono::steady_clock::time_point start_;
    std::vector<std::thread> threads_;
};

}  // namespace myriad
