#include "util/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "util/error.h"

namespace myriad {

Tensor::Tensor(void* data_, DType dt, std::initializer_list<int64_t> dims, Device dev)
    : data(data_), dtype(dt), device(dev) {
    MYRIAD_CHECK(dims.size() <= kMaxDims, "tensor rank {} exceeds {}", dims.size(), kMaxDims);
    for (int64_t d : dims) shape[ndim++] = d;
}

int64_t Tensor::numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
}

int64_t Tensor::stride(int i) const {
    if (i < 0) i += ndim;
    int64_t s = 1;
    for (int j = i + 1; j < ndim; ++j) s *= shape[j];
    return s;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
    MYRIAD_CHECK(ndim >= 1 && begin >= 0 && begin <= end && end <= shape[0],
                 "rows [{}, {}) out of range for shape {}", begin, end, shape_str());
    Tensor r = *this;
    r.shape[0] = end - begin;
    r.data =
        static_cast<uint8_t*>(data) + static_cast<size_t>(begin * stride(0)) * dtype_size(dtype);
    return r;
}

Tensor Tensor::view(std::initializer_list<int64_t> dims) const {
    Tensor r(data, dtype, dims, device);
    MYRIAD_CHECK(r.numel() == numel(), "view {} of tensor {} changes its size", r.shape_str(),
                 shape_str());
    return r;
}

std::string Tensor::shape_str() const {
    std::string s = "[";
    for (int i = 0; i < ndim; ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

void Buffer::Free::operator()(void* p) const {
    if (mapped > 0)
        munmap(p, mapped);
    else
        std::free(p);
}

Buffer::Buffer(size_t bytes, bool lazy) : size_(bytes) {
    if (lazy && bytes > 0) {
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) internal_error("out of host memory mapping {} bytes", bytes);
        data_ = std::unique_ptr<void, Free>(p, Free{bytes});
        return;
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (p == nullptr) internal_error("out of host memory allocating {} bytes", bytes);
    std::memset(p, 0, rounded == 0 ? 64 : rounded);
    data_.reset(p);
}

HostTensor::HostTensor(DType dt, std::initializer_list<int64_t> dims) {
    t = Tensor(nullptr, dt, dims);
    buffer = Buffer(t.nbytes());
    t.data = buffer.data();
}

}  // namespace myriad
