#include "gpu_test_util.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "ops/backend.h"

namespace myriad::testing {

KernelOverrides::KernelOverrides(const std::string& spec) {
    const char* e = std::getenv("MYRIAD_KERNELS");
    had_ = e != nullptr;
    if (had_) old_ = e;
    const std::string value = had_ && !old_.empty() ? old_ + "," + spec : spec;
    setenv("MYRIAD_KERNELS", value.c_str(), 1);
}

KernelOverrides::~KernelOverrides() {
    if (had_)
        setenv("MYRIAD_KERNELS", old_.c_str(), 1);
    else
        unsetenv("MYRIAD_KERNELS");
}

KernelChoices test_kernel_choices() {
    GpuInfo info;
    cuda_device_info(0, &info);
    return KernelChoices::from_environment(info);
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double diff = 0.0, ref = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        ref += double(b[i]) * b[i];
    }
    return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-30);
}

void GpuOpsTest::SetUp() {
    std::string why;
    ASSERT_GT(cuda_device_count(&why), 0) << "GPU tests need a CUDA device: " << why;
    gpu = std::make_unique<cuda::CudaOps>(0, test_kernel_choices());
}

std::vector<float> GpuOpsTest::randn(int64_t n, float scale) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = d(rng);
    return v;
}

std::vector<uint16_t> GpuOpsTest::randn_bf16(int64_t n, float scale) {
    std::vector<uint16_t> v(static_cast<size_t>(n));
    auto f = randn(n, scale);
    for (size_t i = 0; i < v.size(); ++i) v[i] = f32_to_bf16(f[i]);
    return v;
}

std::vector<uint8_t> GpuOpsTest::random_bytes(int64_t n, uint8_t lo, uint8_t hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<uint8_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<uint8_t>(d(rng));
    return v;
}

Tensor GpuOpsTest::host(std::vector<float>& v, std::initializer_list<int64_t> dims) {
    Tensor t(v.data(), DType::F32, dims);
    EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
    return t;
}

Tensor GpuOpsTest::dev(const std::vector<float>& v, std::initializer_list<int64_t> dims) {
    Tensor t(nullptr, DType::F32, dims);
    keep.push_back(gpu->allocate(t));
    gpu->copy_from_host(v.data(), t);
    return t;
}

Tensor GpuOpsTest::dev_i32(const std::vector<int32_t>& v, std::initializer_list<int64_t> dims) {
    Tensor t(nullptr, DType::I32, dims);
    keep.push_back(gpu->allocate(t));
    gpu->copy_from_host(v.data(), t);
    return t;
}

Tensor GpuOpsTest::poisoned(DType dt, std::initializer_list<int64_t> dims) {
    Tensor t(nullptr, dt, dims);
    keep.push_back(gpu->allocate(t));
    EXPECT_EQ(cudaMemset(t.data, 0xff, t.nbytes()), cudaSuccess);
    return t;
}

std::vector<float> GpuOpsTest::fetch(Tensor t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    gpu->copy_to_host(t, v.data());
    return v;
}

std::vector<int32_t> GpuOpsTest::fetch_i32(Tensor t) {
    std::vector<int32_t> v(static_cast<size_t>(t.numel()));
    gpu->copy_to_host(t, v.data());
    return v;
}

WeightSource bf16_source(const std::vector<uint16_t>& data, int64_t rows, int64_t cols) {
    WeightSource s;
    s.data = data.data();
    s.dtype = DType::BF16;
    s.src_rows = rows;
    s.src_cols = cols;
    s.row_end = rows;
    s.col_end = cols;
    return s;
}

WeightSource f32_vector_source(const std::vector<float>& data) {
    WeightSource s;
    s.data = data.data();
    s.dtype = DType::F32;
    s.src_rows = 1;
    s.src_cols = static_cast<int64_t>(data.size());
    s.row_end = 1;
    s.col_end = s.src_cols;
    return s;
}

QuantMatrix random_quant(WeightFormat f, int64_t rows, int64_t cols, std::mt19937& rng) {
    QuantMatrix m;
    m.format = f;
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> unit(0.5f, 2.0f);
    QuantizedData& q = m.src.quant;
    switch (f) {
        case WeightFormat::Fp8Block: {
            m.codes.resize(static_cast<size_t>(rows * cols));
            for (auto& c : m.codes) {
                c = static_cast<uint8_t>(byte(rng));
                if ((c & 0x7f) == 0x7f) c = 0x3f;  // no NaN codes
            }
            const int64_t sr = (rows + 127) / 128, sc = (cols + 127) / 128;
            m.scales.resize(static_cast<size_t>(sr * sc * 4));
            for (int64_t i = 0; i < sr * sc; ++i) {
                float s = 0.01f * unit(rng);
                std::memcpy(&m.scales[i * 4], &s, 4);
            }
            q.code_row_bytes = cols;
            q.scale_dtype = DType::F32;
            q.scale_row_stride = sc;
            q.block_rows = 128;
            q.block_cols = 128;
            break;
        }
        case WeightFormat::Nvfp4: {
            m.codes.resize(static_cast<size_t>(rows * cols / 2));
            for (auto& c : m.codes) c = static_cast<uint8_t>(byte(rng));
            m.scales.resize(static_cast<size_t>(rows * cols / 16));
            std::uniform_int_distribution<int> sc(0x28, 0x48);  // e4m3 0.125 .. 2
            for (auto& c : m.scales) c = static_cast<uint8_t>(sc(rng));
            q.code_row_bytes = cols / 2;
            q.scale_dtype = DType::F8_E4M3;
            q.scale_row_stride = cols / 16;
            q.block_rows = 1;
            q.block_cols = 16;
            q.global_scale = 0.02f;
            break;
        }
        case WeightFormat::Int4Group: {
            const int64_t g = 32;
            m.codes.resize(static_cast<size_t>(rows * cols / 2));
            for (auto& c : m.codes) c = static_cast<uint8_t>(byte(rng));
            m.scales.resize(static_cast<size_t>(rows * cols / g * 2));
            for (size_t i = 0; i < m.scales.size() / 2; ++i) {
                const uint16_t b = f32_to_bf16(0.01f * unit(rng));
                std::memcpy(&m.scales[i * 2], &b, 2);
            }
            q.code_row_bytes = cols / 2;
            q.scale_dtype = DType::BF16;
            q.scale_row_stride = cols / g;
            q.block_rows = 1;
            q.block_cols = g;
            break;
        }
        default:  // dense and GGUF blocks are not made here
            break;
    }
    q.codes = m.codes.data();
    q.scales = m.scales.data();
    q.bytes = m.codes.size() + m.scales.size();
    m.src.format = f;
    m.src.src_rows = rows;
    m.src.src_cols = cols;
    m.src.row_end = rows;
    m.src.col_end = cols;
    return m;
}

}  // namespace myriad::testing
