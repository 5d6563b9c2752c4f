// GGUF v3 (reference.md §3.2): a header of typed metadata and tensor infos, then aligned tensor
// data; read over mmap, zero copy. A model may be split over NAME-0000i-of-0000N.gguf files
// (split.no / split.count / split.tensors.count): opening the first split opens them all.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf_quants.h"
#include "util/mmap_file.h"

namespace myriad {

enum class GgufValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType t);

// One metadata value. Scalars are widened (integers into `i` or `u`, floats into `f`); strings
// and string arrays point into the mapping; arrays of numbers keep their raw little-endian bytes.
// Arrays of arrays are validated but keep only their count.
struct GgufValue {
    GgufValueType type = GgufValueType::U8;
    int64_t i = 0;   // signed integers and BOOL
    uint64_t u = 0;  // unsigned integers (also mirrored into i when it fits)
    double f = 0.0;
    std::string_view str;
    GgufValueType elem = GgufValueType::U8;  // ARRAY: element type
    uint64_t count = 0;                      // ARRAY: elements
    const uint8_t* raw = nullptr;            // ARRAY of numbers: the elements
    std::vector<std::string_view> strings;   // ARRAY of STRING

    bool is_integer() const;
    bool is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }
    // Element k of a numeric array as a double / int64 (k < count).
    double number_at(uint64_t k) const;
    int64_t integer_at(uint64_t k) const;
};

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> dims;  // ggml order: dims[0] is the innermost (row) length
    GgufType type = GgufType::F32;
    uint64_t offset = 0;  // from the start of the data section
    uint64_t nbytes = 0;
    const uint8_t* data = nullptr;
    const std::string* file = nullptr;
    // The PyTorch-order shape (dims reversed).
    std::vector<int64_t> shape() const { return {dims.rbegin(), dims.rend()}; }
    int64_t numel() const;
    // Bytes of one row (dims[0] elements).
    size_t row_bytes() const;
};

struct GgufHeader {
    uint32_t version = 0;
    std::map<std::string, GgufValue, std::less<>> metadata;
    std::vector<GgufTensorInfo> tensors;  // in file order, data pointers set
    uint64_t alignment = 32;
    uint64_t data_start = 0;
};

// Parses and validates a whole file image: magic, version 3 (2 accepted), counts within the file,
// string lengths, value and tensor types, dims, alignment, tensor data inside the file and not
// overlapping. Errors are bad input naming `path` and the field or tensor. Never crashes or
// allocates more than the file's size suggests (the fuzz target's entry point).
GgufHeader parse_gguf(const uint8_t* data, size_t size, const std::string& path);

class GgufFile {
  public:
    explicit GgufFile(const std::string& path);
    const std::string& path() const { return file_.path(); }
    const GgufHeader& header() const { return header_; }
    size_t size() const { return file_.size(); }

  private:
    MappedFile file_;
    GgufHeader header_;
};

// A GGUF model: one file or all splits. Metadata comes from the first file.
class GgufModel {
  public:
    // `path` is a .gguf file; a split must be the first one (…-00001-of-0000N.gguf).
    static std::shared_ptr<GgufModel> open(const std::string& path);

    const std::string& path() const { return path_; }
    const std::vector<std::unique_ptr<GgufFile>>& files() const { return files_; }
    const std::map<std::string, GgufValue, std::less<>>& metadata() const {
        return files_.front()->header().metadata;
    }
    const GgufValue* find(std::string_view key) const;
    const GgufTensorInfo* tensor(std::string_view name) const;
    // Every tensor, across splits, in file order.
    std::vector<const GgufTensorInfo*> tensors() const;

    // Typed metadata access; errors name the file and the key.
    std::optional<int64_t> opt_integer(std::string_view key) const;
    std::optional<double> opt_number(std::string_view key) const;
    std::optional<bool> opt_bool(std::string_view key) const;
    std::optional<std::string_view> opt_string(std::string_view key) const;
    int64_t integer(std::string_view key) const;
    std::string_view string(std::string_view key) const;

  private:
    std::string path_;
    std::vector<std::unique_ptr<GgufFile>> files_;
    std::map<std::string, const GgufTensorInfo*, std::less<>> tensors_;
};

// True when `path` names a GGUF file (ends with .gguf).
bool is_gguf_path(std::string_view path);

}  // namespace myriad
