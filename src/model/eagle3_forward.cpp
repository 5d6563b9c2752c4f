#include "model/eagle3_forward.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace myriad {

namespace {

// y [n, w.rows] = x [n, w.cols] w^T, a weight row converted once for every input row.
void linear(const HostMatrix& w, const float* x, int64_t n, float* y) {
    std::vector<float> row(static_cast<size_t>(w.cols));
    for (int64_t o = 0; o < w.rows; ++o) {
        w.row(o, row.data());
        for (int64_t r = 0; r < n; ++r) {
            const float* xr = x + r * w.cols;
            double s = 0;
            for (int64_t i = 0; i < w.cols; ++i) s += static_cast<double>(xr[i]) * row[i];
            y[r * w.rows + o] = static_cast<float>(s);
        }
    }
}

void rmsnorm(const float* x, const std::vector<float>& w, double eps, int64_t n, float* y) {
    const int64_t d = static_cast<int64_t>(w.size());
    for (int64_t r = 0; r < n; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[r * d + i]) * x[r * d + i];
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
        for (int64_t i = 0; i < d; ++i)
            y[r * d + i] = static_cast<float>(w[static_cast<size_t>(i)] * (x[r * d + i] * inv));
    }
}

// Rotate-half rotary embedding of one head vector at `pos`.
void rotate(float* v, int64_t head_dim, int64_t pos, const Eagle3RopeTable& t) {
    const int64_t half = head_dim / 2;
    for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos) * t.inv_freq[static_cast<size_t>(i)];
        const double c = std::cos(a) * t.attention_factor, s = std::sin(a) * t.attention_factor;
        const double x1 = v[i], x2 = v[i + half];
        v[i] = static_cast<float>(x1 * c - x2 * s);
        v[i + half] = static_cast<float>(x2 * c + x1 * s);
    }
}

}  // namespace

Eagle3Draft::Eagle3Draft(Eagle3Config config, Eagle3Weights weights)
    : config_(std::move(config)), weights_(std::move(weights)), rope_(eagle3_rope_table(config_)) {}

void Eagle3Draft::forward(Eagle3Cache& cache, int64_t first, const std::vector<int32_t>& tokens,
                          const float* hidden, bool fused, float* out, int64_t logits_from,
                          float* logits) const {
    const Eagle3Config& c = config_;
    const Eagle3Weights& w = weights_;
    const int64_t n = static_cast<int64_t>(tokens.size()), H = c.hidden_size;
    const int64_t hd = c.head_dim, heads = c.num_attention_heads, kvh = c.num_key_value_heads;
    const int64_t kv_w = kvh * hd, q_w = heads * hd;
    MYRIAD_CHECK(first >= cache.start && first <= cache.length,
                 "EAGLE3 rows from position {} on a cache of positions [{}, {})", first,
                 cache.start, cache.length);
    MYRIAD_CHECK(logits_from >= 0 && logits_from <= n, "logits from row {} of {}", logits_from, n);
    if (n == 0) return;

    // g: the hidden state each row continues from; a: the attention's input [embed ; hidden].
    std::vector<float> g(static_cast<size_t>(n * H));
    if (fused)
        linear(w.fc, hidden, n, g.data());
    else
        std::copy(hidden, hidden + n * H, g.begin());
    std::vector<float> e(static_cast<size_t>(n * H)), en(e.size()), gn(e.size());
    for (int64_t r = 0; r < n; ++r) {
        const int32_t t = tokens[static_cast<size_t>(r)];
        MYRIAD_CHECK(t >= 0 && t < w.embed.rows, "token {} outside the draft's embedding", t);
        w.embed.row(t, e.data() + r * H);
    }
    rmsnorm(e.data(), w.input_norm, c.rms_norm_eps, n, en.data());
    rmsnorm(g.data(), w.hidden_norm, c.rms_norm_eps, n, gn.data());
    std::vector<float> a(static_cast<size_t>(n * 2 * H));
    for (int64_t r = 0; r < n; ++r) {
        std::copy(en.begin() + r * H, en.begin() + (r + 1) * H, a.begin() + r * 2 * H);
        std::copy(gn.begin() + r * H, gn.begin() + (r + 1) * H, a.begin() + r * 2 * H + H);
    }
    std::vector<float> residual = c.norm_before_residual ? gn : g;

    // Attention over the cache cut to `first`, with these rows' keys and values appended.
    std::vector<float> q(static_cast<size_t>(n * q_w)), k(static_cast<size_t>(n * kv_w)),
        v(k.size());
    linear(w.q, a.data(), n, q.data());
    linear(w.k, a.data(), n, k.data());
    linear(w.v, a.data(), n, v.data());
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t h = 0; h < heads; ++h) rotate(&q[r * q_w + h * hd], hd, first + r, rope_);
        for (int64_t h = 0; h < kvh; ++h) rotate(&k[r * kv_w + h * hd], hd, first + r, rope_);
    }
    cache.k.resize(static_cast<size_t>((first - cache.start) * kv_w));
    cache.v.resize(static_cast<size_t>((first - cache.start) * kv_w));
    cache.k.insert(cache.k.end(), k.begin(), k.end());
    cache.v.insert(cache.v.end(), v.begin(), v.end());
    cache.length = first + n;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    std::vector<float> attn(static_cast<size_t>(n * q_w));
    std::vector<double> score;
    for (int64_t r = 0; r < n; ++r) {
        const int64_t ctx = first - cache.start + r + 1;  // cache rows it attends to
        score.resize(static_cast<size_t>(ctx));
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t kh = h / (heads / kvh);
            const float* qh = &q[r * q_w + h * hd];
            double best = -INFINITY;
            for (int64_t j = 0; j < ctx; ++j) {
                const float* kj = &cache.k[j * kv_w + kh * hd];
                double s = 0;
                for (int64_t i = 0; i < hd; ++i) s += static_cast<double>(qh[i]) * kj[i];
                score[static_cast<size_t>(j)] = s * scale;
                best = std::max(best, s * scale);
            }
            double sum = 0;
            for (double& s : score) sum += (s = std::exp(s - best));
            float* oh = &attn[r * q_w + h * hd];
            for (int64_t i = 0; i < hd; ++i) {
                double acc = 0;
                for (int64_t j = 0; j < ctx; ++j)
                    acc += score[static_cast<size_t>(j)] * cache.v[j * kv_w + kh * hd + i];
                oh[i] = static_cast<float>(acc / sum);
            }
        }
    }
    std::vector<float> y(static_cast<size_t>(n * H));
    linear(w.o, attn.data(), n, y.data());
    for (size_t i = 0; i < y.size(); ++i) residual[i] += y[i];

    // The MLP: down(silu(gate(x)) * up(x)) of the post-attention norm, added to the residual.
    std::vector<float> x(y.size());
    rmsnorm(residual.data(), w.post_attention_norm, c.rms_norm_eps, n, x.data());
    const int64_t I = c.intermediate_size;
    std::vector<float> gt(static_cast<size_t>(n * I)), up(gt.size());
    linear(w.gate, x.data(), n, gt.data());
    linear(w.up, x.data(), n, up.data());
    for (size_t i = 0; i < gt.size(); ++i) gt[i] = gt[i] / (1.0f + std::exp(-gt[i])) * up[i];
    linear(w.down, gt.data(), n, y.data());
    for (size_t i = 0; i < y.size(); ++i) residual[i] += y[i];
    if (out) std::copy(residual.begin(), residual.end(), out);

    const int64_t m = n - logits_from;
    if (m == 0 || !logits) return;
    std::vector<float> normed(static_cast<size_t>(m * H));
    rmsnorm(residual.data() + logits_from * H, w.final_norm, c.rms_norm_eps, m, normed.data());
    linear(w.lm_head, normed.data(), m, logits);
}

}  // namespace myriad
