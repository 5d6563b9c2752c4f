// safetensors: one file = u64 header length, a JSON header, a byte buffer (reference.md §3.1).
// The file is memory-mapped; tensor views point into the mapping (zero copy).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/dtype.h"
#include "util/mmap_file.h"

namespace myriad {

// One tensor's header entry. Offsets are relative to the start of the byte buffer.
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
    int64_t numel() const;
};

// A zero-copy view of one tensor's bytes in a mapped file. The format does not align tensors:
// `data` is aligned to the dtype only when the writer ordered tensors for it (huggingface's writer
// puts larger dtypes first; write_safetensors keeps the caller's order).
struct TensorView {
    const TensorInfo* info = nullptr;
    const uint8_t* data = nullptr;
    const std::string* file = nullptr;  // the file it lives in, for error messages
    const std::string& name() const { return info->name; }
    DType dtype() const { return info->dtype; }
    const std::vector<int64_t>& shape() const { return info->shape; }
    size_t nbytes() const { return info->end - info->begin; }
    std::string shape_str() const;
};

struct SafetensorsHeader {
    std::vector<TensorInfo> tensors;  // in header order
    std::map<std::string, std::string> metadata;
    uint64_t data_start = 0;  // file offset of the byte buffer (8 + header length)
};

// Parses and validates a header from the first `size` bytes of a file: the length prefix within
// the file, JSON syntax, known dtypes, shapes whose byte size matches the offsets, offsets inside
// the buffer, no overlaps. Throws a bad-input Error naming `path` and the tensor. Never crashes on
// any input (it is the fuzz target's entry point).
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size,
                                           const std::string& path);
// The same from the first `size` bytes of a file of `file_size` bytes (a header fetched by HTTP
// Range): `size` must cover the length prefix and the header; offsets are checked against
// `file_size`.
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, uint64_t file_size,
                                           const std::string& path);

class SafetensorsFile {
  public:
    explicit SafetensorsFile(const std::string& path);

    const std::string& path() const { return file_.path(); }
    const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    // nullptr when absent.
    const TensorInfo* find(std::string_view name) const;
    TensorView view(const TensorInfo& info) const;
    // The whole mapped file (the shard reader brings its pages in and drops them).
    const uint8_t* map_data() const { return file_.data(); }
    size_t map_size() const { return file_.size(); }

  private:
    MappedFile file_;
    SafetensorsHeader header_;
    std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace myriad
