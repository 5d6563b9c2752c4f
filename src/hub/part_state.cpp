#include "hub/part_state.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace myriad::hub {

PartState::PartState(std::string path, int64_t size, int64_t chunk)
    : path_(std::move(path)), size_(size), chunk_(chunk) {
    const int64_t n = size == 0 ? 0 : (size + chunk - 1) / chunk;
    done_.assign(static_cast<size_t>(n), 0);
    std::ifstream in(path_);
    std::string magic, bits;
    int64_t s = -1, c = -1;
    if (!(in >> magic >> s >> c >> bits)) return;
    // A different size or chunk size (a changed file, another MYRIAD_HUB_CHUNK): start over.
    if (magic != "myriad-parts-1" || s != size || c != chunk ||
        bits.size() != static_cast<size_t>(n))
        return;
    for (size_t i = 0; i < bits.size(); ++i) done_[i] = bits[i] == '1';
}

std::pair<int64_t, int64_t> PartState::range(int64_t i) const {
    const int64_t first = i * chunk_;
    return {first, std::min(size_, first + chunk_) - 1};
}

int64_t PartState::done_bytes() const {
    int64_t b = 0;
    for (int64_t i = 0; i < chunks(); ++i)
        if (done(i)) b += range(i).second - range(i).first + 1;
    return b;
}

bool PartState::complete() const {
    for (char d : done_)
        if (!d) return false;
    return true;
}

void PartState::mark(int64_t i) {
    done_[static_cast<size_t>(i)] = 1;
    save();
}

void PartState::save() const {
    const std::string tmp = path_ + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << "myriad-parts-1 " << size_ << ' ' << chunk_ << ' ';
        for (char d : done_) out << (d ? '1' : '0');
        out << '\n';
        if (!out) internal_error("{}: cannot write the download state", tmp);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path_, ec);
    if (ec) internal_error("{}: cannot write the download state: {}", path_, ec.message());
}

void PartState::remove() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
}

}  // namespace myriad::hub
