// What part of a download is already on disk: blobs/ETAG.incomplete holds the bytes (written at
// their offsets, in any order) and blobs/ETAG.incomplete.parts which fixed-size chunks are
// complete. A chunk counts only once its bytes were flushed to disk, so a killed download resumes
// from the chunks marked here and redoes the rest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace myriad::hub {

class PartState {
  public:
    // Reads `path` (the .parts file) when it matches `size` and `chunk`; else starts empty.
    PartState(std::string path, int64_t size, int64_t chunk);

    int64_t chunks() const { return static_cast<int64_t>(done_.size()); }
    int64_t chunk_bytes() const { return chunk_; }
    // [first, last] bytes of chunk i.
    std::pair<int64_t, int64_t> range(int64_t i) const;
    bool done(int64_t i) const { return done_[static_cast<size_t>(i)] != 0; }
    int64_t done_bytes() const;
    bool complete() const;
    // Marks chunk i and writes the file (atomically: a temporary, then rename).
    void mark(int64_t i);
    void remove();  // deletes the .parts file

  private:
    void save() const;
    std::string path_;
    int64_t size_, chunk_;
    std::vector<char> done_;
};

}  // namespace myriad::hub
