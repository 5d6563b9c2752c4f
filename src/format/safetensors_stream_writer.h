// A safetensors file written in pieces, for checkpoints too large to hold in memory: the header
// is written when the file is created (names, dtypes and shapes fix every offset), then each
// tensor's bytes are written at its place, from any thread and in any order, and finish() checks
// that every byte arrived and renames the file into place (a reader never sees half a file).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/safetensors_writer.h"

namespace myriad {

class SafetensorsStreamWriter {
  public:
    // Creates `path`.partial and writes the header. Throws a bad-input Error naming the file
    // when it cannot be created.
    SafetensorsStreamWriter(std::string path, std::vector<TensorSpec> tensors,
                            const std::map<std::string, std::string>& metadata = {});
    // Removes the partial file unless finish() succeeded.
    ~SafetensorsStreamWriter();
    SafetensorsStreamWriter(const SafetensorsStreamWriter&) = delete;
    SafetensorsStreamWriter& operator=(const SafetensorsStreamWriter&) = delete;

    const std::string& path() const { return path_; }
    const std::vector<TensorSpec>& tensors() const { return tensors_; }
    uint64_t tensor_bytes(size_t i) const { return sizes_[i]; }
    uint64_t data_bytes() const { return data_bytes_; }
    uint64_t file_bytes() const { return data_start_ + data_bytes_; }

    // Writes `n` bytes of tensor `i` starting `offset` bytes into it. Thread-safe (pwrite); a
    // range outside the tensor is an internal error, an I/O failure an internal error naming
    // the file and the reason.
    void write(size_t i, uint64_t offset, const void* data, size_t n);

    // Checks that as many bytes were written as the tensors hold, flushes, and renames the file
    // into place. `drop_cache`: fdatasync and drop the file's pages from the page cache, so that
    // a later read comes from the disk.
    void finish(bool drop_cache = false);

  private:
    std::string path_, tmp_;
    std::vector<TensorSpec> tensors_;
    std::vector<uint64_t> sizes_, offsets_;
    uint64_t data_start_ = 0, data_bytes_ = 0;
    std::atomic<uint64_t> written_{0};
    int fd_ = -1;
    bool done_ = false;
};

}  // namespace myriad
