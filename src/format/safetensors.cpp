#include "format/safetensors.h"

#include <algorithm>
#include <limits>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "format/json_file.h"
#include "util/error.h"

namespace myriad {

namespace {

// The reference implementation (huggingface/safetensors) rejects headers above 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

using Json = nlohmann::json;

// dtypes of the safetensors format (reference.md §3.1) that myriad does not read.
constexpr std::string_view kUnsupportedDtypes[] = {
    "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2", "C64"};

std::string shape_string(const std::vector<int64_t>& shape) {
    return fmt::format("[{}]", fmt::join(shape, ", "));
}

// A SAX handler that only records the keys of the top-level object, in order.
struct TopLevelKeys : nlohmann::json_sax<Json> {
    std::vector<std::string> keys;
    int depth = 0;

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return ++depth, true; }
    bool key(string_t& k) override {
        if (depth == 1) keys.push_back(k);
        return true;
    }
    bool end_object() override { return --depth, true; }
    bool start_array(std::size_t) override { return ++depth, true; }
    bool end_array() override { return --depth, true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        return false;
    }
};

// Reads and checks one tensor entry of the header.
TensorInfo parse_entry(const std::string& name, const Json& entry, uint64_t buffer_size,
                       const std::string& path) {
    const std::string shown = printable(name);
    auto fail = [&](std::string_view what) { bad_input("{}: tensor {}: {}", path, shown, what); };
    if (!entry.is_object())
        fail(
            fmt::format("header entry has type {}, expected an object with dtype, shape and "
                        "data_offsets",
                        entry.type_name()));

    TensorInfo info;
    info.name = name;

    auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end()) fail("dtype is missing");
    if (!dtype_it->is_string())
        fail(fmt::format("dtype has type {}, expected string", dtype_it->type_name()));
    const auto& dtype_name_str = dtype_it->get_ref<const std::string&>();
    auto dtype = dtype_from_name(dtype_name_str);
    if (!dtype && std::find(std::begin(kUnsupportedDtypes), std::end(kUnsupportedDtypes),
                            dtype_name_str) != std::end(kUnsupportedDtypes))
        fail(
            fmt::format("dtype {} is not supported by myriad (it reads BF16, F16, F32, F64, "
                        "F8_E4M3, U8, I8, I16, U16, I32, U32, I64, U64, BOOL)",
                        dtype_name_str));
    if (!dtype) fail(fmt::format("unknown dtype \"{}\"", printable(dtype_name_str)));
    info.dtype = *dtype;

    auto shape_it = entry.find("shape");
    if (shape_it == entry.end()) fail("shape is missing");
    if (!shape_it->is_array())
        fail(
            fmt::format("shape has type {}, expected an array of integers", shape_it->type_name()));
    // numel and byte size are computed with overflow checks: a shape may claim any size.
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& dim : *shape_it) {
        if (dim.is_number_integer() && !dim.is_number_unsigned())
            fail(fmt::format("shape has a negative dimension {}", dim.get<int64_t>()));
        if (!dim.is_number_unsigned())
            fail(fmt::format("shape holds a {}, expected non-negative integers", dim.type_name()));
        uint64_t d = dim.get<uint64_t>();
        if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            fail(fmt::format("shape has an impossibly large dimension {}", d));
        info.shape.push_back(static_cast<int64_t>(d));
        overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
    }
    uint64_t nbytes = 0;
    overflow = overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
               __builtin_mul_overflow(numel, dtype_size(info.dtype), &nbytes);
    if (overflow)
        fail(fmt::format("shape {} has more elements than any file can hold",
                         shape_string(info.shape)));

    auto offsets_it = entry.find("data_offsets");
    if (offsets_it == entry.end()) fail("data_offsets is missing");
    const Json& offsets = *offsets_it;
    if (!offsets.is_array())
        fail(fmt::format("data_offsets has type {}, expected [begin, end]", offsets.type_name()));
    if (offsets.size() != 2)
        fail(fmt::format("data_offsets has {} elements, expected [begin, end]", offsets.size()));
    for (const auto& o : offsets)
        if (!o.is_number_unsigned())
            fail(fmt::format("data_offsets holds {} {}, expected non-negative integers",
                             o.is_number_integer() ? "the negative" : "a",
                             o.is_number_integer() ? std::to_string(o.get<int64_t>())
                                                   : std::string(o.type_name())));
    info.begin = offsets[0].get<uint64_t>();
    info.end = offsets[1].get<uint64_t>();
    if (info.begin > info.end)
        fail(fmt::format("data_offsets [{}, {}] begin after they end", info.begin, info.end));
    if (info.end > buffer_size)
        fail(fmt::format("data_offsets [{}, {}] run past the end of the data buffer ({} bytes)",
                         info.begin, info.end, buffer_size));
    if (info.end - info.begin != nbytes)
        fail(fmt::format("data_offsets [{}, {}] hold {} bytes but dtype {} and shape {} need {}",
                         info.begin, info.end, info.end - info.begin, dtype_name(info.dtype),
                         shape_string(info.shape), nbytes));
    return info;
}

std::map<std::string, std::string> parse_metadata(const Json& value, const std::string& path) {
    std::map<std::string, std::string> metadata;
    if (value.is_null()) return metadata;
    if (!value.is_object())
        bad_input("{}: __metadata__ has type {}, expected an object of strings", path,
                  value.type_name());
    for (const auto& [key, v] : value.items()) {
        if (!v.is_string())
            bad_input("{}: __metadata__ entry {} has type {}, expected string", path,
                      printable(key), v.type_name());
        metadata.emplace(key, v.get<std::string>());
    }
    return metadata;
}

// Tensors must cover the byte buffer exactly: sorted by offset, each starts where the previous
// one ended, and the last ends at the end of the buffer (no overlap, no gap, no trailing bytes).
void check_coverage(const std::vector<TensorInfo>& tensors, uint64_t buffer_size,
                    const std::string& path) {
    std::vector<const TensorInfo*> sorted;
    sorted.reserve(tensors.size());
    for (const auto& t : tensors) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    uint64_t covered = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo* t : sorted) {
        if (t->begin < covered)
            bad_input("{}: tensor {}: data_offsets [{}, {}] overlap tensor {} at [{}, {}]", path,
                      printable(t->name), t->begin, t->end, printable(previous->name),
                      previous->begin, previous->end);
        if (t->begin > covered) {
            if (previous == nullptr)
                bad_input(
                    "{}: tensor {}: data_offsets [{}, {}] leave a gap: bytes [0, {}) of "
                    "the data buffer belong to no tensor",
                    path, printable(t->name), t->begin, t->end, t->begin);
            bad_input(
                "{}: tensor {}: data_offsets [{}, {}] leave a gap after tensor {}, which "
                "ends at {}",
                path, printable(t->name), t->begin, t->end, printable(previous->name), covered);
        }
        covered = t->end;
        previous = t;
    }
    if (covered != buffer_size)
        bad_input(
            "{}: the data buffer holds {} bytes but the tensors cover only {} (truncated "
            "header or trailing bytes)",
            path, buffer_size, covered);
}

}  // namespace

int64_t TensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string TensorView::shape_str() const {
    return shape_string(info->shape);
}

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size,
                                           const std::string& path) {
    return parse_safetensors_header(data, size, size, path);
}

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, uint64_t file_size,
                                           const std::string& path) {
    if (size > file_size) size = static_cast<size_t>(file_size);
    if (size == 0) bad_input("{}: empty file, not a safetensors file", path);
    if (size < 8)
        bad_input("{}: {} bytes, too short for a safetensors file (at least 8)", path, size);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
    if (header_len > kMaxHeaderBytes)
        bad_input("{}: header length {} is above the 100 MB limit: not a safetensors file?", path,
                  header_len);
    if (header_len > size - 8)
        bad_input(
            "{}: header length {} runs past the end of the file ({} bytes): truncated or "
            "not a safetensors file",
            path, header_len, size);

    // Plain json (std::map) keeps parsing O(n log n) for headers of 10^5 tensors (ordered_json
    // and nlohmann's callback parser are quadratic); a second, DOM-less pass records the order.
    const auto* text = reinterpret_cast<const char*>(data + 8);
    Json header;
    try {
        header = Json::parse(text, text + header_len);
    } catch (const Json::exception& e) {
        bad_input("{}: header is not valid JSON: {}", path, json_error_text(e));
    }
    if (!header.is_object())
        bad_input("{}: header has type {}, expected a JSON object", path, header.type_name());
    TopLevelKeys keys;
    Json::sax_parse(text, text + header_len, &keys);
    const std::vector<std::string>& order = keys.keys;

    SafetensorsHeader result;
    result.data_start = 8 + header_len;
    const uint64_t buffer_size = file_size - result.data_start;
    std::vector<std::string_view> sorted_names(order.begin(), order.end());
    std::sort(sorted_names.begin(), sorted_names.end());
    if (auto dup = std::adjacent_find(sorted_names.begin(), sorted_names.end());
        dup != sorted_names.end())
        bad_input("{}: tensor {} appears twice in the header", path, printable(*dup));
    for (const auto& name : order) {
        const Json& value = *header.find(name);
        if (name == "__metadata__") {
            result.metadata = parse_metadata(value, path);
            continue;
        }
        result.tensors.push_back(parse_entry(name, value, buffer_size, path));
    }
    check_coverage(result.tensors, buffer_size, path);
    return result;
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(path), header_(parse_safetensors_header(file_.data(), file_.size(), path)) {
    for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

TensorView SafetensorsFile::view(const TensorInfo& info) const {
    return TensorView{&info, file_.data() + header_.data_start + info.begin, &file_.path()};
}

}  // namespace myriad
