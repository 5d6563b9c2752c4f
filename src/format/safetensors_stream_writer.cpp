#include "format/safetensors_stream_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace myriad {

namespace {

void write_all(int fd, const uint8_t* p, size_t n, uint64_t at, const std::string& path) {
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
        if (w < 0) {
            if (errno == EINTR) continue;
            internal_error("{}: write failed: {}", path, std::strerror(errno));
        }
        p += w;
        n -= static_cast<size_t>(w);
        at += static_cast<uint64_t>(w);
    }
}

}  // namespace

SafetensorsStreamWriter::SafetensorsStreamWriter(std::string path, std::vector<TensorSpec> tensors,
                                                 const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), tmp_(path_ + ".partial"), tensors_(std::move(tensors)) {
    const std::string header = safetensors_header_text(tensors_, metadata, &sizes_);
    uint64_t at = 0;
    for (uint64_t s : sizes_) {
        offsets_.push_back(at);
        at += s;
    }
    data_bytes_ = at;
    data_start_ = 8 + header.size();
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) bad_input("{}: cannot create: {}", tmp_, std::strerror(errno));
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(header.size() >> (8 * i));
    write_all(fd_, len, 8, 0, tmp_);
    write_all(fd_, reinterpret_cast<const uint8_t*>(header.data()), header.size(), 8, tmp_);
}

SafetensorsStreamWriter::~SafetensorsStreamWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!done_) ::unlink(tmp_.c_str());
}

void SafetensorsStreamWriter::write(size_t i, uint64_t offset, const void* data, size_t n) {
    MYRIAD_CHECK(i < sizes_.size(), "{}: tensor index {} of {}", tmp_, i, sizes_.size());
    MYRIAD_CHECK(offset <= sizes_[i] && n <= sizes_[i] - offset,
                 "{}: bytes [{}, {}) outside tensor {} of {} bytes", tmp_, offset, offset + n,
                 tensors_[i].name, sizes_[i]);
    write_all(fd_, static_cast<const uint8_t*>(data), n, data_start_ + offsets_[i] + offset, tmp_);
    written_ += n;
}

void SafetensorsStreamWriter::finish(bool drop_cache) {
    MYRIAD_CHECK(!done_, "{}: finished twice", path_);
    MYRIAD_CHECK(written_.load() == data_bytes_, "{}: {} of its {} tensor bytes were written", tmp_,
                 written_.load(), data_bytes_);
    if (drop_cache) {
        if (::fdatasync(fd_) != 0) internal_error("{}: fdatasync: {}", tmp_, std::strerror(errno));
        ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    }
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) internal_error("{}: close: {}", tmp_, std::strerror(errno));
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    if (ec) bad_input("{}: cannot write: {}", path_, ec.message());
    done_ = true;
}

}  // namespace myriad
