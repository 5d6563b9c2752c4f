#include "format/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace myriad {

std::string safetensors_header_text(const std::vector<TensorSpec>& tensors,
                                    const std::map<std::string, std::string>& metadata,
                                    std::vector<uint64_t>* sizes) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::set<std::string_view> seen;
    uint64_t offset = 0;
    if (sizes) sizes->clear();
    for (const auto& t : tensors) {
        MYRIAD_CHECK(t.name != "__metadata__" && !t.name.empty(),
                     "write_safetensors: invalid tensor name \"{}\"", t.name);
        MYRIAD_CHECK(seen.insert(t.name).second, "write_safetensors: tensor {} given twice",
                     t.name);
        uint64_t numel = 1;
        for (int64_t d : t.shape) {
            MYRIAD_CHECK(d >= 0, "write_safetensors: tensor {} has a negative dimension", t.name);
            MYRIAD_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel),
                         "write_safetensors: tensor {} is too large", t.name);
        }
        uint64_t nbytes = 0;
        MYRIAD_CHECK(!__builtin_mul_overflow(numel, dtype_size(t.dtype), &nbytes),
                     "write_safetensors: tensor {} is too large", t.name);
        header[t.name] = {{"dtype", dtype_name(t.dtype)},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + nbytes}}};
        offset += nbytes;
        if (sizes) sizes->push_back(nbytes);
    }
    std::string text = header.dump();
    // Pad with spaces so that the byte buffer starts 8-byte aligned (8 + header length).
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

namespace {

std::string build_header(const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata) {
    std::vector<TensorSpec> specs;
    specs.reserve(tensors.size());
    for (const auto& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
    std::vector<uint64_t> sizes;
    std::string text = safetensors_header_text(specs, metadata, &sizes);
    for (size_t i = 0; i < tensors.size(); ++i)
        MYRIAD_CHECK(sizes[i] == tensors[i].bytes.size(),
                     "write_safetensors: tensor {} has {} bytes, but dtype {} and its shape "
                     "need {}",
                     tensors[i].name, tensors[i].bytes.size(), dtype_name(tensors[i].dtype),
                     sizes[i]);
    return text;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    const std::string header = build_header(tensors, metadata);
    // Written beside the target and renamed into place: a reader never sees half a file.
    const std::string tmp = path + ".partial";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) bad_input("{}: cannot create: {}", tmp, std::strerror(errno));
    errno = 0;
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(header.size() >> (8 * i));
    bool ok = std::fwrite(len, 1, 8, f) == 8 &&
              std::fwrite(header.data(), 1, header.size(), f) == header.size();
    for (const auto& t : tensors) {
        if (!ok) break;
        ok = t.bytes.empty() || std::fwrite(t.bytes.data(), 1, t.bytes.size(), f) == t.bytes.size();
    }
    int write_errno = errno;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
        std::remove(tmp.c_str());
        internal_error("{}: write failed: {}", tmp,
                       std::strerror(write_errno ? write_errno : errno));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        bad_input("{}: cannot write: {}", path, ec.message());
    }
}

}  // namespace myriad
