#include "ops/synthetic_weight.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "util/error.h"

namespace myriad {

namespace {

struct HostSynthetic {
    std::vector<uint8_t> data;  // dense BF16 values or quantised codes
    std::vector<uint8_t> scales;
};

// fill(i) for i in [0, n), split over the machine's cores when n is large.
template <class F>
void parallel_fill(size_t n, F fill) {
    const size_t threads =
        n < (size_t{1} << 22) ? 1 : std::max<size_t>(1, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t)
        pool.emplace_back([=] {
            for (size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) fill(i);
        });
    for (auto& th : pool) th.join();
}

}  // namespace

WeightSource materialize_synthetic(const WeightSource& src, std::shared_ptr<void>& keep) {
    const SyntheticValues v = src.synthetic;
    MYRIAD_CHECK(v.seed != 0, "materialize_synthetic on a weight that is not synthetic");
    auto host = std::make_shared<HostSynthetic>();
    WeightSource out = src;
    out.synthetic = {};
    const size_t elems = static_cast<size_t>(src.src_rows * src.src_cols);
    switch (src.format) {
        case WeightFormat::Dense: {
            host->data.resize(elems * 2);
            auto* d = reinterpret_cast<uint16_t*>(host->data.data());
            parallel_fill(elems, [=](size_t i) {
                d[i] = synth::dense_bf16(v.seed, i, v.center, v.amplitude);
            });
            out.data = host->data.data();
            out.dtype = DType::BF16;
            break;
        }
        case WeightFormat::Fp8Block: {
            host->data.resize(elems);
            uint8_t* d = host->data.data();
            parallel_fill(elems, [=](size_t i) { d[i] = synth::fp8_code(v.seed, i); });
            const size_t n_scales =
                static_cast<size_t>((src.src_rows + src.quant.block_rows - 1) /
                                    src.quant.block_rows * src.quant.scale_row_stride);
            host->scales.resize(n_scales * 4);
            auto* s = reinterpret_cast<float*>(host->scales.data());
            for (size_t i = 0; i < n_scales; ++i) s[i] = synth::fp8_scale(v.seed, i, v.amplitude);
            break;
        }
        case WeightFormat::Nvfp4: {
            host->data.resize(elems / 2);
            uint8_t* d = host->data.data();
            parallel_fill(elems / 2, [=](size_t i) { d[i] = synth::nvfp4_byte(v.seed, i); });
            host->scales.resize(elems / 16);
            uint8_t* s = host->scales.data();
            parallel_fill(elems / 16, [=](size_t i) { s[i] = synth::nvfp4_scale(v.seed, i); });
            break;
        }
        case WeightFormat::Int4Group: {
            host->data.resize(elems / 2);
            uint8_t* d = host->data.data();
            parallel_fill(elems / 2, [=](size_t i) { d[i] = synth::nvfp4_byte(v.seed, i); });
            const size_t n_scales = static_cast<size_t>(src.src_rows * src.quant.scale_row_stride);
            host->scales.resize(n_scales * 2);
            auto* s = reinterpret_cast<uint16_t*>(host->scales.data());
            for (size_t i = 0; i < n_scales; ++i)
                s[i] = synth::int4_scale_bf16(v.seed, i, v.amplitude);
            break;
        }
        default:
            internal_error("synthetic {} weights are not supported",
                           weight_format_name(src.format));
    }
    if (src.format != WeightFormat::Dense) {
        out.data = host->data.data();
        out.quant.codes = host->data.data();
        out.quant.scales = host->scales.data();
    }
    keep = host;
    return out;
}

}  // namespace myriad
