#include "model/deepseek_v3.h"

#include <algorithm>
#include <cstring>

#include "model/residual_reduce.h"
#include "util/error.h"

namespace myriad {

// q_a_layernorm and kv_a_layernorm use 1e-6 whatever rms_norm_eps says, as transformers and
// DeepSeek's own code do (reference.md §1.2).
constexpr float kLatentNormEps = 1e-6f;

DeepseekV3::DeepseekV3(const ModelConfig& config, const Checkpoint& checkpoint, Ops& ops,
                       Communicator& comm, const Layout& layout, ModelOptions options)
    : config_(config), ops_(ops), comm_(comm), layout_(layout), options_(options) {
    MYRIAD_CHECK(layout_.world() == comm_.world() && layout_.rank() == comm_.rank(),
                 "layout rank {} of {} on communicator rank {} of {}", layout_.rank(),
                 layout_.world(), comm_.rank(), comm_.world());
    MYRIAD_CHECK(options_.naive_context_tokens >= 1,
                 "ModelOptions::naive_context_tokens is {}; it must be at least 1",
                 options_.naive_context_tokens);
    weights_ = load_weights(config_, checkpoint, ops_, layout_, options_.feed);
    local_heads_ = layout_.local_heads(config_.num_attention_heads);
    softmax_scale_ = compute_softmax_scale(config_);
    if (options_.faults.no_mscale_squared)
        softmax_scale_ = static_cast<float>(1.0 / std::sqrt(double(config_.qk_head_dim())));
    RopeTable table = compute_rope_table(config_);
    rope_.inv_freq = Tensor(nullptr, DType::F32, {static_cast<int64_t>(table.inv_freq.size())});
    rope_storage_ = ops_.allocate(rope_.inv_freq);
    ops_.copy_from_host(table.inv_freq.data(), rope_.inv_freq);
    rope_.attention_factor = table.attention_factor;
    rope_.style = options_.faults.rope_half_split ? RopeStyle::HalfSplit : RopeStyle::AdjacentPairs;
}

void DeepseekV3::check_step(const StepInput& step, const KvCache& cache) const {
    const int64_t t_count = step.num_tokens();
    MYRIAD_CHECK(static_cast<int64_t>(step.positions.size()) == t_count &&
                     static_cast<int64_t>(step.slots.size()) == t_count,
                 "step has {} tokens, {} positions, {} slots", t_count, step.positions.size(),
                 step.slots.size());
    int64_t row = 0;
    for (const SeqSlice& s : step.seqs) {
        MYRIAD_CHECK(s.q_begin == row && s.q_len >= 1 && s.ctx_len >= s.q_len,
                     "sequence rows [{}, +{}) with context {} do not follow row {}", s.q_begin,
                     s.q_len, s.ctx_len, row);
        MYRIAD_CHECK(static_cast<int64_t>(s.block_table.size()) * cache.block_size() >= s.ctx_len,
                     "block table of {} blocks cannot hold {} tokens", s.block_table.size(),
                     s.ctx_len);
        for (int64_t i = 0; i < s.q_len; ++i)
            MYRIAD_CHECK(step.positions[s.q_begin + i] == s.ctx_len - s.q_len + i,
                         "token {} has position {}, expected {}", s.q_begin + i,
                         step.positions[s.q_begin + i], s.ctx_len - s.q_len + i);
        row += s.q_len;
    }
    MYRIAD_CHECK(row == t_count, "sequences cover {} of {} tokens", row, t_count);
    for (int32_t r : step.logit_rows)
        MYRIAD_CHECK(r >= 0 && r < t_count, "logit row {} outside {} tokens", r, t_count);
    int64_t logprob_rows = 0;
    for (const LogprobSpan& s : step.logprob_spans) {
        MYRIAD_CHECK(s.row >= 0 && s.n >= 1 && s.row + s.n <= t_count,
                     "logprob rows [{}, +{}) outside {} tokens", s.row, s.n, t_count);
        logprob_rows += s.n;
    }
    MYRIAD_CHECK(logprob_rows == step.num_logprob_rows() && step.logprob_top_n >= 0 &&
                     step.logprob_top_n <= kMaxTopLogprobs,
                 "{} logprob rows with {} targets and top {}", logprob_rows,
                 step.num_logprob_rows(), step.logprob_top_n);
    for (TokenId id : step.logprob_targets)
        MYRIAD_CHECK(id >= 0 && id < config_.vocab_size, "logprob target {} outside {} tokens", id,
                     config_.vocab_size);
    for (TokenId id : step.token_ids)
        if (id < 0 || id >= config_.vocab_size)
            bad_input("token id {} is outside the vocabulary of {} tokens", id, config_.vocab_size);
}

void DeepseekV3::forward(const StepInput& step, const KvCache& cache, float* logits,
                         const StepSampling* sampling, int32_t* tokens, LogprobRows* logprobs,
                         float* hidden_out, const LayerInputs* layer_inputs) {
    check_step(step, cache);
    if (layer_inputs && !layer_inputs->out) layer_inputs = nullptr;
    MYRIAD_CHECK(!(hidden_out || layer_inputs) || step.eager,
                 "a step whose hidden states leave the device runs eagerly");
    const bool across = sampling && comm_.world() > 1;
    MYRIAD_CHECK(!sampling || ((across || ops_.samples()) &&
                               sampling->rows.size() == step.logit_rows.size()),
                 "sampling on the backend needs several ranks or a backend that samples, and a "
                 "row per logit row");
    // Every rank replays its own graph, the collectives inside meeting on the device. A recorded
    // step ends at its logits: one with logprob rows runs op by op. Sampled across ranks, the
    // recording ends at this rank's slice of the logits, and the choice runs after it.
    if ((comm_.world() == 1 || comm_.graph_safe()) && step.logprob_spans.empty() && !hidden_out &&
        !layer_inputs) {
        if (across) {
            const Tensor part = ops_.replay_step_logits(step, weights_.lm_head.rows);
            if (part.data) {
                sample_across_ranks(part, *sampling, tokens, logits);
                return;
            }
        } else if (ops_.replay_step(step, logits, config_.vocab_size, sampling, tokens)) {
            return;
        }
    }
    ops_.reset_scratch();
    ops_.begin_step(step);
    const int64_t t_count = step.num_tokens(), hidden = config_.hidden_size;
    const float eps = static_cast<float>(config_.rms_norm_eps);

    Tensor h = ops_.scratch(DType::F32, {t_count, hidden});
    ops_.embed(weights_.embed, weights_.vocab_begin, h);
    comm_.all_reduce_sum(h);  // each rank holds a slice of the vocabulary

    Tensor x = ops_.scratch(DType::F32, {t_count, hidden});
    Tensor y = ops_.scratch(DType::F32, {t_count, hidden});
    plan_attention(step);
    // Each sub-layer's all-reduce, residual add and the norm that follows are one seam
    // (residual_reduce.h: one kernel where the communicator fuses them); x holds the normed input
    // of the next sub-layer.
    const int64_t n_layers = config_.num_hidden_layers;
    if (n_layers > 0) ops_.rmsnorm(h, weights_.layers[0].input_norm, eps, x);
    for (int64_t l = 0; l < n_layers; ++l) {
        // A layer's scratch is its own: what it computes lands in h, x and y, so the next layer
        // reuses the memory (a long prefill of 61 layers would otherwise hold 61 layers' worth).
        const ScratchMark layer_mark = ops_.mark_scratch();
        if (layer_inputs) copy_layer_input(*layer_inputs, l, h);
        const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
        attention(w, cache.layer(l), step, x, y);
        reduce_add_rmsnorm(comm_, ops_, y, h, &w.post_attention_norm, eps, x);
        if (w.moe)
            moe(l, w, x, y);
        else
            mlp(w.dense, x, y);
        const Weight* next =
            l + 1 < n_layers ? &weights_.layers[static_cast<size_t>(l + 1)].input_norm : nullptr;
        reduce_add_rmsnorm(comm_, ops_, y, h, next, eps, x);
        ops_.release_scratch(layer_mark);
    }
    if (hidden_out) ops_.copy_to_host(h, hidden_out);

    if (!step.logprob_spans.empty()) logprob_rows(step, h, logprobs);
    const int64_t n = static_cast<int64_t>(step.logit_rows.size());
    if (n == 0) return;
    Tensor last = ops_.scratch(DType::F32, {n, hidden});
    ops_.gather_logit_rows(h, last);
    Tensor normed = ops_.scratch(DType::F32, {n, hidden});
    ops_.rmsnorm(last, weights_.final_norm, eps, normed);
    if (!sampling) return head_logits(normed, logits);
    Tensor part = ops_.scratch(DType::F32, {n, weights_.lm_head.rows});
    ops_.linear(normed, weights_.lm_head, part);
    if (across) {  // each rank's slice: candidates cross, every rank chooses the same tokens
        MYRIAD_CHECK(comm_.world() * weights_.lm_head.rows == config_.vocab_size,
                     "{} ranks of {} vocabulary rows cover {}", comm_.world(),
                     weights_.lm_head.rows, config_.vocab_size);
        ops_.end_recording(part);
        sample_across_ranks(part, *sampling, tokens, logits);
        return;
    }
    ops_.sample(part, *sampling, tokens, logits);  // one rank: [n, vocab] already
}

void DeepseekV3::copy_layer_input(const LayerInputs& in, int64_t layer, Tensor h) {
    const size_t per = static_cast<size_t>(h.dim(0) * h.dim(1));
    for (size_t i = 0; i < in.layers.size(); ++i)
        if (in.layers[i] == layer) ops_.copy_to_host(h, in.out + i * per);
}

void DeepseekV3::head_logits(Tensor normed, float* logits) {
    const int64_t n = normed.dim(0);
    const int64_t world = comm_.world(), shard = weights_.lm_head.rows;
    Tensor part = ops_.scratch(DType::F32, {n, shard});
    ops_.linear(normed, weights_.lm_head, part);
    if (world == 1) return ops_.copy_to_host(part, logits);  // [n, vocab] already
    MYRIAD_CHECK(world * shard == config_.vocab_size, "{} ranks of {} vocabulary rows cover {}",
                 world, shard, config_.vocab_size);
    Tensor gathered = ops_.scratch(DType::F32, {n, world * shard});
    comm_.all_gather_columns(part, gathered);
    ops_.copy_to_host(gathered, logits);
}

void DeepseekV3::forward_mtp(const StepInput& step, const float* hidden_in, const KvCache& cache,
                             float* logits, float* hidden_out, int64_t mtp) {
    MYRIAD_CHECK(mtp >= 0 && mtp < static_cast<int64_t>(weights_.mtp.size()),
                 "MTP layer {} of the {} loaded (--speculative mtp loads them)", mtp,
                 weights_.mtp.size());
    check_step(step, cache);
    ops_.reset_scratch();
    ops_.begin_step(step);
    const MtpWeights& m = weights_.mtp[static_cast<size_t>(mtp)];
    const LayerWeights& w = m.layer;
    const int64_t t_count = step.num_tokens(), hidden = config_.hidden_size;
    const float eps = static_cast<float>(config_.rms_norm_eps);

    // eh_proj(concat(enorm(e), hnorm(h_prev))) as the sum of its two column halves' products.
    Tensor e = ops_.scratch(DType::F32, {t_count, hidden});
    ops_.embed(weights_.embed, weights_.vocab_begin, e);
    comm_.all_reduce_sum(e);
    const std::vector<float> zeros(static_cast<size_t>(hidden), 0.0f);
    for (int64_t r = 0; r < t_count; ++r)
        if (step.positions[static_cast<size_t>(r)] == 0)
            ops_.copy_from_host(zeros.data(), e.rows(r, r + 1));
    Tensor prev = ops_.scratch(DType::F32, {t_count, hidden});
    ops_.copy_from_host(hidden_in, prev);
    Tensor en = ops_.scratch(DType::F32, {t_count, hidden});
    ops_.rmsnorm(e, m.enorm, eps, en);
    Tensor hn = ops_.scratch(DType::F32, {t_count, hidden});
    ops_.rmsnorm(prev, m.hnorm, eps, hn);
    Tensor h = ops_.scratch(DType::F32, {t_count, hidden});
    ops_.linear(en, m.eh_proj_e, h);
    Tensor y = ops_.scratch(DType::F32, {t_count, hidden});
    ops_.linear(hn, m.eh_proj_h, y);
    ops_.add(h, y);

    // One decoder layer over it, attending to the MTP layer's own cache.
    Tensor x = ops_.scratch(DType::F32, {t_count, hidden});
    plan_attention(step);
    ops_.rmsnorm(h, w.input_norm, eps, x);
    attention(w, cache.layer(mtp), step, x, y);
    comm_.all_reduce_sum(y);
    ops_.add_rmsnorm(h, y, w.post_attention_norm, eps, x);
    if (w.moe)
        moe(config_.num_hidden_layers + mtp, w, x, y);
    else
        mlp(w.dense, x, y);
    comm_.all_reduce_sum(y);
    ops_.add(h, y);

    const int64_t n = static_cast<int64_t>(step.logit_rows.size());
    if (n == 0) return;
    Tensor last = ops_.scratch(DType::F32, {n, hidden});
    ops_.gather_logit_rows(h, last);
    if (hidden_out) ops_.copy_to_host(last, hidden_out);
    Tensor normed = ops_.scratch(DType::F32, {n, hidden});
    ops_.rmsnorm(last, m.head_norm, eps, normed);
    head_logits(normed, logits);
}

// A pass at a time: the final norm and lm_head of a few rows, the vocabulary slices gathered from
// the ranks, and the log-softmax and top-N where the logits are (rank 0's device), so only the
// numbers asked for come back.
void DeepseekV3::logprob_rows(const StepInput& step, Tensor h, LogprobRows* out) {
    const int64_t hidden = config_.hidden_size, world = comm_.world();
    const int64_t shard = weights_.lm_head.rows, top_n = step.logprob_top_n;
    const float eps = static_cast<float>(config_.rms_norm_eps);
    const bool keep = comm_.rank() == 0 && out;
    if (keep) out->resize(step.num_logprob_rows(), top_n);
    int64_t done = 0;
    for (const LogprobSpan& span : step.logprob_spans) {
        for (int64_t b = 0; b < span.n; b += kLogprobRowsPerPass) {
            const int64_t m = std::min(kLogprobRowsPerPass, span.n - b);
            const ScratchMark mark = ops_.mark_scratch();
            Tensor normed = ops_.scratch(DType::F32, {m, hidden});
            ops_.rmsnorm(h.rows(span.row + b, span.row + b + m), weights_.final_norm, eps, normed);
            Tensor part = ops_.scratch(DType::F32, {m, shard});
            ops_.linear(normed, weights_.lm_head, part);
            Tensor all = part.view({1, m, shard});
            if (world > 1) {
                all = ops_.scratch(DType::F32, {world, m, shard});
                comm_.all_gather(part, all);
            }
            if (keep)
                ops_.logprob_rows(all, config_.vocab_size, step.logprob_targets.data() + done,
                                  top_n, out->target.data() + done,
                                  out->top_ids.data() + done * top_n,
                                  out->top.data() + done * top_n);
            ops_.release_scratch(mark);
            done += m;
        }
    }
}

void DeepseekV3::attention(const LayerWeights& w, const KvLayerView& cache, const StepInput& step,
                           Tensor x, Tensor out) {
    const ModelConfig& c = config_;
    const int64_t t_count = x.dim(0), heads = local_heads_;
    const int64_t dn = c.qk_nope_head_dim, dr = c.qk_rope_head_dim, dq = dn + dr;
    const int64_t dv = c.v_head_dim, latent = c.kv_lora_rank;
    const AttentionWeights& a = w.attn;

    // Queries: [T, heads, dn + dr], the rope part rotated in place.
    Tensor q = ops_.scratch(DType::F32, {t_count, heads, dq});
    if (c.q_lora_rank > 0) {
        Tensor qa = ops_.scratch(DType::F32, {t_count, c.q_lora_rank});
        ops_.linear(x, a.q_a, qa);
        ops_.rmsnorm(qa, a.q_a_norm, kLatentNormEps, qa);
        ops_.linear(qa, a.q_b, q);
    } else {
        ops_.linear(x, a.q, q);
    }

    // The compressed KV of the new tokens goes into the latent cache (normalised, rotated), and
    // the queries' rope part is rotated in place.
    Tensor ckv = ops_.scratch(DType::F32, {t_count, latent + dr});
    ops_.linear(x, a.kv_a, ckv);
    ops_.mla_rope_and_append(q, dn, ckv, a.kv_a_norm, kLatentNormEps, rope_, cache);

    Tensor o = ops_.scratch(DType::F32, {t_count, heads, dv});
    if (n_absorbed_ > 0) {
        const SeqSlice& last = step.seqs[n_absorbed_ - 1];
        const int64_t rows = last.q_begin + last.q_len;
        Tensor q_part = q.rows(0, rows);
        Tensor q_lat = ops_.scratch(DType::F32, {rows, heads, latent});
        ops_.mla_absorb_q(q_part, a.kv_b, dn, dv, q_lat);
        Tensor o_lat = ops_.scratch(DType::F32, {rows, heads, latent});
        ops_.mla_attention_absorbed(q_lat, q_part, dn, cache, 0, n_absorbed_, softmax_scale_,
                                    o_lat);
        ops_.mla_absorb_v(o_lat, a.kv_b, dn, dv, o.rows(0, rows));
    }
    if (!naive_calls_.empty()) naive_attention(a, cache, step, q, o);
    ops_.linear(o.view({t_count, heads * dv}), a.o, out);  // partial sum over this rank's heads
}

void DeepseekV3::plan_attention(const StepInput& step) {
    // Sequences [0, n_absorbed_) use the absorbed form, the rest the naive form.
    const size_t n_seqs = step.seqs.size();
    n_absorbed_ = 0;
    if (options_.attention == AttentionMode::Absorbed) {
        n_absorbed_ = n_seqs;
    } else if (options_.attention == AttentionMode::Auto) {
        while (n_absorbed_ < n_seqs &&
               (step.seqs[n_absorbed_].q_len == 1 || step.seqs[n_absorbed_].draft > 0))
            ++n_absorbed_;
    }
    plan_naive_calls(step.seqs, n_absorbed_, options_.naive_context_tokens, naive_calls_);
    if (naive_calls_.empty()) return;
    // One workspace for every layer's calls (they run one after another), of the bound's size
    // whatever this step's contexts are.
    const ModelConfig& c = config_;
    const int64_t rows = options_.naive_context_tokens, heads = local_heads_;
    naive_ws_.latent = ops_.scratch(DType::F32, {rows, c.kv_lora_rank});
    naive_ws_.k_rot = ops_.scratch(DType::F32, {rows, c.qk_rope_head_dim});
    naive_ws_.kv = ops_.scratch(DType::F32, {rows, heads, c.qk_nope_head_dim + c.v_head_dim});
    naive_ws_.lse = ops_.scratch(DType::F32, {step.num_tokens(), heads});
}

void DeepseekV3::naive_attention(const AttentionWeights& a, const KvLayerView& cache,
                                 const StepInput& step, Tensor q, Tensor o) {
    // Each call gives back the scratch its ops take (the BF16 copy of lat on the GPU): pieces of
    // a long context would otherwise add to the step's total one call at a time.
    for (const NaiveCall& call : naive_calls_) {
        const ScratchMark mark = ops_.mark_scratch();
        const int64_t n = call.tokens(step.seqs);
        Tensor lat = naive_ws_.latent.rows(0, n), k_rot = naive_ws_.k_rot.rows(0, n);
        Tensor kv = naive_ws_.kv.rows(0, n);
        if (call.pieced) {
            const ContextPiece& p = call.piece;
            ops_.mla_gather_context_piece(cache, p, lat, k_rot);
            ops_.linear(lat, a.kv_b, kv);
            Tensor lse = naive_ws_.lse.rows(0, step.seqs[p.seq].q_len);
            ops_.mla_attention_naive_piece(q, kv, k_rot, p, softmax_scale_, o, lse, p.begin == 0);
        } else {
            ops_.mla_gather_context(cache, call.seq_begin, call.seq_end, lat, k_rot);
            ops_.linear(lat, a.kv_b, kv);
            ops_.mla_attention_naive(q, kv, k_rot, call.seq_begin, call.seq_end, softmax_scale_, o);
        }
        ops_.release_scratch(mark);
    }
}

void DeepseekV3::mlp(const MlpWeights& w, Tensor x, Tensor out) {
    const int64_t t_count = x.dim(0), inter = w.gate.rows;
    Tensor g = ops_.scratch(DType::F32, {t_count, inter});
    ops_.linear_silu_mul(x, w.gate, w.up, g);
    ops_.linear(g, w.down, out);
}

void DeepseekV3::moe(int64_t layer, const LayerWeights& w, Tensor x, Tensor out) {
    const ModelConfig& c = config_;
    const int64_t t_count = x.dim(0), k = c.num_experts_per_tok;
    RouterParams p;
    p.n_experts = c.n_routed_experts;
    p.top_k = k;
    p.n_group = c.n_group;
    p.topk_group = c.topk_group;
    p.norm_topk_prob = c.norm_topk_prob;
    p.routed_scaling_factor = static_cast<float>(c.routed_scaling_factor);
    Tensor ids = ops_.scratch(DType::I32, {t_count, k});
    Tensor weights = ops_.scratch(DType::F32, {t_count, k});
    ops_.moe_route(x, w.router, w.router_bias, p, ids, weights);
    if (options_.route_observer) observe_route(layer, w, p, x, ids, weights);
    if (c.n_shared_experts > 0 && !options_.faults.drop_shared_experts) {
        mlp(w.shared, x, out);  // the routed experts are added to it: the same sums as before
        ops_.moe_experts_add(x, ids, weights, w.experts, out);
    } else {
        ops_.moe_experts(x, ids, weights, w.experts, out);
    }
}

void DeepseekV3::observe_route(int64_t layer, const LayerWeights& w, const RouterParams& p,
                               Tensor x, Tensor ids, Tensor weights) {
    RouteRecord r;
    r.layer = layer;
    r.tokens = x.dim(0);
    r.hidden = x.dim(1);
    r.experts = p.n_experts;
    r.top_k = p.top_k;
    r.n_group = p.n_group;
    r.topk_group = p.topk_group;
    r.norm_topk_prob = p.norm_topk_prob;
    r.routed_scaling_factor = p.routed_scaling_factor;
    const ScratchMark mark = ops_.mark_scratch();
    Tensor logits = ops_.scratch(DType::F32, {r.tokens, r.experts});
    ops_.router_logits(x, w.router, logits);
    r.x.resize(static_cast<size_t>(r.tokens * r.hidden));
    r.logits.resize(static_cast<size_t>(r.tokens * r.experts));
    r.bias.resize(static_cast<size_t>(r.experts));
    r.ids.resize(static_cast<size_t>(r.tokens * r.top_k));
    r.weights.resize(r.ids.size());
    ops_.copy_to_host(x, r.x.data());
    ops_.copy_to_host(logits, r.logits.data());
    ops_.copy_to_host(w.router_bias.data, r.bias.data());
    ops_.copy_to_host(ids, r.ids.data());
    ops_.copy_to_host(weights, r.weights.data());
    ops_.release_scratch(mark);
    options_.route_observer(r);
}

}  // namespace myriad
