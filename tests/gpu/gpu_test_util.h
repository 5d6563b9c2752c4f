// Helpers of the GPU tests: the same op on the CPU backend (the reference) and the CUDA backend,
// on fresh random data, compared norm-wise; device outputs are poisoned with NaN first so an
// element the GPU never wrote fails the comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda/cuda_ops.h"

namespace myriad::testing {

// Overrides of the kernel choices (MYRIAD_KERNELS, ops/kernel_choices.h) for the backends created
// in its scope: `spec` ("exact=1", "graphs=0") is added after the variable's value, which comes
// back at the end. Scopes nest ("exact=1" then "graphs=0" gives both).
class KernelOverrides {
  public:
    explicit KernelOverrides(const std::string& spec);
    ~KernelOverrides();
    KernelOverrides(const KernelOverrides&) = delete;
    KernelOverrides& operator=(const KernelOverrides&) = delete;

  private:
    bool had_ = false;
    std::string old_;
};

// GPU 0's kernel choices with MYRIAD_KERNELS's overrides (the tests' backends).
KernelChoices test_kernel_choices();

// ‖a − b‖ / ‖b‖ over all elements; infinity when a holds a NaN or infinity.
double rel_err(const std::vector<float>& a, const std::vector<float>& b);

class GpuOpsTest : public ::testing::Test {
  protected:
    void SetUp() override;

    std::vector<float> randn(int64_t n, float scale = 1.0f);
    std::vector<uint16_t> randn_bf16(int64_t n, float scale = 1.0f);
    std::vector<uint8_t> random_bytes(int64_t n, uint8_t lo = 0, uint8_t hi = 255);

    // A host tensor over `v` (the CPU backend's input) and a device copy of it.
    Tensor host(std::vector<float>& v, std::initializer_list<int64_t> dims);
    Tensor dev(const std::vector<float>& v, std::initializer_list<int64_t> dims);
    Tensor dev_i32(const std::vector<int32_t>& v, std::initializer_list<int64_t> dims);
    // An uninitialised device tensor filled with NaN bytes (0xff).
    Tensor poisoned(DType dt, std::initializer_list<int64_t> dims);
    std::vector<float> fetch(Tensor t);
    std::vector<int32_t> fetch_i32(Tensor t);

    // The same step on both backends.
    void begin_step(const StepInput& st) {
        cpu.begin_step(st);
        gpu->begin_step(st);
    }

    std::mt19937 rng{12345};
    CpuOps cpu{2};
    std::unique_ptr<cuda::CudaOps> gpu;
    std::vector<std::shared_ptr<void>> keep;
};

// A checkpoint-like source of a whole BF16 matrix [rows, cols].
WeightSource bf16_source(const std::vector<uint16_t>& data, int64_t rows, int64_t cols);
// A vector (norm weight, bias) of F32 values.
WeightSource f32_vector_source(const std::vector<float>& data);

// Random quantised matrices of the three formats, with host storage for codes and scales.
struct QuantMatrix {
    WeightFormat format;
    std::vector<uint8_t> codes, scales;
    WeightSource src;  // the whole tensor; set row/col ranges for a shard
};
QuantMatrix random_quant(WeightFormat f, int64_t rows, int64_t cols, std::mt19937& rng);

}  // namespace myriad::testing
