#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace myriad {

double yarn_get_mscale(double scale, double mscale) {
    if (scale <= 1.0) return 1.0;
    return 0.1 * mscale * std::log(scale) + 1.0;
}

namespace {
// Dimension index at which a frequency completes `rotations` turns over the original context.
double correction_dim(double rotations, int64_t dim, double base, double max_pos) {
    return (static_cast<double>(dim) * std::log(max_pos / (rotations * 2.0 * std::numbers::pi))) /
           (2.0 * std::log(base));
}
}  // namespace

RopeTable compute_rope_table(const ModelConfig& c) {
    const int64_t dim = c.qk_rope_head_dim, half = dim / 2;
    const float base = static_cast<float>(c.rope_theta);
    RopeTable table;
    table.inv_freq.resize(static_cast<size_t>(half));
    std::vector<float> pos_freq(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)
        pos_freq[i] = std::pow(base, static_cast<float>(2 * i) / static_cast<float>(dim));
    const RopeScaling& y = c.rope_scaling;
    if (!y.yarn) {
        for (int64_t i = 0; i < half; ++i) table.inv_freq[i] = 1.0f / pos_freq[i];
        return table;
    }
    const double max_pos = static_cast<double>(y.original_max_position_embeddings);
    double low = std::floor(correction_dim(y.beta_fast, dim, c.rope_theta, max_pos));
    double high = std::ceil(correction_dim(y.beta_slow, dim, c.rope_theta, max_pos));
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(dim - 1));
    if (low == high) high += 0.001;
    const float factor = static_cast<float>(y.factor);
    for (int64_t i = 0; i < half; ++i) {
        float ramp = (static_cast<float>(i) - static_cast<float>(low)) /
                     (static_cast<float>(high) - static_cast<float>(low));
        ramp = std::clamp(ramp, 0.0f, 1.0f);
        float extrapolation = 1.0f - ramp;  // share of the original frequency
        float f_extra = 1.0f / pos_freq[i];
        float f_inter = 1.0f / (factor * pos_freq[i]);
        table.inv_freq[i] = f_inter * (1.0f - extrapolation) + f_extra * extrapolation;
    }
    if (y.attention_factor) {
        table.attention_factor = static_cast<float>(*y.attention_factor);
    } else if (y.mscale != 0.0 && y.mscale_all_dim != 0.0) {
        table.attention_factor = static_cast<float>(yarn_get_mscale(y.factor, y.mscale) /
                                                    yarn_get_mscale(y.factor, y.mscale_all_dim));
    } else {
        table.attention_factor = static_cast<float>(yarn_get_mscale(y.factor, 1.0));
    }
    return table;
}

float compute_softmax_scale(const ModelConfig& c) {
    double scale = 1.0 / std::sqrt(static_cast<double>(c.qk_head_dim()));
    if (c.rope_scaling.yarn && c.rope_scaling.mscale_all_dim != 0.0) {
        double m = yarn_get_mscale(c.rope_scaling.factor, c.rope_scaling.mscale_all_dim);
        scale *= m * m;
    }
    return static_cast<float>(scale);
}

}  // namespace myriad
