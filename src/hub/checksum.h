// Checksums the hub publishes: SHA-256 of LFS files (their etag) and the git blob SHA-1 of the
// others (sha1("blob <size>\0" + content)). OpenSSL's libcrypto does the hashing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace myriad::hub {

enum class HashKind { Sha256, GitBlobSha1 };

class Hasher {
  public:
    // GitBlobSha1 needs the content's size up front (it is part of the hashed prefix).
    explicit Hasher(HashKind kind, uint64_t size = 0);
    ~Hasher();
    Hasher(const Hasher&) = delete;
    Hasher& operator=(const Hasher&) = delete;
    void update(const void* data, size_t n);
    std::string hex_digest();  // lowercase hex; the hasher is spent

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view data);
// The digest of the file at `path`; bad input naming it when unreadable.
std::string file_digest(const std::string& path, HashKind kind);

}  // namespace myriad::hub
