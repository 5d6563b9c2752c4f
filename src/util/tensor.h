// Tensor: a non-owning view (dtype, shape, contiguous row-major layout, device, pointer).
// Buffer: owned host memory, 64-byte aligned.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "util/dtype.h"

namespace myriad {

enum class Device : uint8_t { Cpu, Cuda };

constexpr int kMaxDims = 4;

struct Tensor {
    void* data = nullptr;
    DType dtype = DType::F32;
    Device device = Device::Cpu;
    int ndim = 0;
    std::array<int64_t, kMaxDims> shape{};

    Tensor() = default;
    Tensor(void* data_, DType dt, std::initializer_list<int64_t> dims, Device dev = Device::Cpu);

    int64_t dim(int i) const { return shape[i < 0 ? i + ndim : i]; }
    int64_t numel() const;
    size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
    // Elements per step of dimension `i` (contiguous row-major).
    int64_t stride(int i) const;
    template <typename T>
    T* ptr() const {
        return static_cast<T*>(data);
    }
    // Rows [begin, end) of the outermost dimension.
    Tensor rows(int64_t begin, int64_t end) const;
    // The same memory with another shape of equal element count.
    Tensor view(std::initializer_list<int64_t> dims) const;
    std::string shape_str() const;
};

// Owned, aligned, zeroed host memory; the backing store of CPU tensors. `lazy` (the CPU's KV
// cache) maps fresh anonymous pages, which the kernel zeroes as they are first touched: a cache
// of --kv-cache-memory takes memory as it fills, not at start.
class Buffer {
  public:
    Buffer() = default;
    explicit Buffer(size_t bytes, bool lazy = false);
    void* data() const { return data_.get(); }
    size_t size() const { return size_; }

  private:
    struct Free {
        size_t mapped;  // bytes of an anonymous mapping (0, value-initialised: aligned_alloc)
        void operator()(void* p) const;
    };
    std::unique_ptr<void, Free> data_;
    size_t size_ = 0;
};

// A host tensor that owns its memory (tests, CPU weights, results).
struct HostTensor {
    Buffer buffer;
    Tensor t;
    HostTensor() = default;
    HostTensor(DType dt, std::initializer_list<int64_t> dims);
    float* f32() const { return t.ptr<float>(); }
};

}  // namespace myriad
