#include "hub/checksum.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "util/error.h"

namespace myriad::hub {

struct Hasher::Impl {
    EVP_MD_CTX* ctx = nullptr;
};

Hasher::Hasher(HashKind kind, uint64_t size) : impl_(std::make_unique<Impl>()) {
    impl_->ctx = EVP_MD_CTX_new();
    if (!impl_->ctx ||
        EVP_DigestInit_ex(impl_->ctx, kind == HashKind::Sha256 ? EVP_sha256() : EVP_sha1(),
                          nullptr) != 1)
        internal_error("OpenSSL could not start a {} digest",
                       kind == HashKind::Sha256 ? "SHA-256" : "SHA-1");
    if (kind == HashKind::GitBlobSha1) {
        const std::string prefix = "blob " + std::to_string(size);
        update(prefix.data(), prefix.size() + 1);  // with the terminating NUL
    }
}

Hasher::~Hasher() {
    EVP_MD_CTX_free(impl_->ctx);
}

void Hasher::update(const void* data, size_t n) {
    EVP_DigestUpdate(impl_->ctx, data, n);
}

std::string Hasher::hex_digest() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(impl_->ctx, md, &len);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out += hex[md[i] >> 4];
        out += hex[md[i] & 15];
    }
    return out;
}

std::string sha256_hex(std::string_view data) {
    Hasher h(HashKind::Sha256);
    h.update(data.data(), data.size());
    return h.hex_digest();
}

std::string file_digest(const std::string& path, HashKind kind) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) bad_input("{}: cannot read the file: {}", path, std::strerror(errno));
    struct stat st {};
    ::fstat(fd, &st);
    Hasher h(kind, static_cast<uint64_t>(st.st_size));
    std::vector<char> buf(size_t{8} << 20);
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            bad_input("{}: read failed: {}", path, std::strerror(err));
        }
        if (n == 0) break;
        h.update(buf.data(), static_cast<size_t>(n));
    }
    ::close(fd);
    return h.hex_digest();
}

}  // namespace myriad::hub
