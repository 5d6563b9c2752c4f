// The DeepSeek-V3 forward pass (DeepSeek-V3/R1, Kimi-K2/K2.5, Moonlight), written once against
// Ops for one tensor-parallel rank. Reads top to bottom: embedding, decoder layers (MLA, then a
// dense MLP or MoE), final norm, lm_head. reference.md §1.
#pragma once

#include <array>
#include <vector>

#include "format/checkpoint.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/naive_context.h"
#include "model/rope.h"
#include "model/route_observer.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "parallel/communicator.h"
#include "parallel/layout.h"

namespace myriad {

// Which MLA form computes attention. Auto: sequences with one new token (and decoding ones
// verifying a draft) use the absorbed form over the latent cache, longer ones the naive form. The
// others force one form (tests).
enum class AttentionMode : uint8_t { Auto, Naive, Absorbed };

// Deliberate mistakes, for control tests that prove the golden tests can fail. Never set in
// the program.
struct ModelFaults {
    bool rope_half_split = false;      // rotate half-split pairs instead of adjacent pairs
    bool no_mscale_squared = false;    // drop YaRN's mscale^2 from the softmax scale
    bool drop_shared_experts = false;  // leave out the shared experts
};

struct ModelOptions {
    AttentionMode attention = AttentionMode::Auto;
    ModelFaults faults;
    // Context tokens one naive-form attention call gathers and expands (model/naive_context.h);
    // longer contexts go in pieces. Tests set it small.
    int64_t naive_context_tokens = kNaiveContextTokens;
    // Test hook: told every MoE layer's routing (model/route_observer.h). Empty in the program.
    RouteObserver route_observer = {};
    // The process's shard reader and this rank's place in it (WorkerGroup sets it; null: each
    // weight read straight from the mapping).
    WeightFeed feed = {};
};

// The residual stream entering chosen decoder layers, for an EAGLE3 drafter: layer j's input is
// layer j - 1's output (0: the embedding), as vLLM counts its aux hidden states. `out` (host,
// [layers.size(), T, hidden], layer by layer in the order given) is written on rank 0 only.
struct LayerInputs {
    std::vector<int64_t> layers;
    float* out = nullptr;
};

class DeepseekV3 {
  public:
    // Rank layout.rank() of layout.world(), which `comm` connects (check_layout passed).
    DeepseekV3(const ModelConfig& config, const Checkpoint& checkpoint, Ops& ops,
               Communicator& comm, const Layout& layout, ModelOptions options = {});
    // The tensor-parallel layout of comm's ranks (routed experts split too).
    DeepseekV3(const ModelConfig& config, const Checkpoint& checkpoint, Ops& ops,
               Communicator& comm, ModelOptions options = {})
        : DeepseekV3(config, checkpoint, ops, comm, Layout(comm.world(), false, comm.rank()),
                     options) {}

    const ModelConfig& config() const { return config_; }
    size_t weight_bytes() const { return weights_.bytes; }
    const ModelWeights& weights() const { return weights_; }

    // Runs one step over the flat batch and writes the logits of step.logit_rows, full
    // vocabulary, to `logits` (host memory, [logit_rows, vocab_size]) on every rank. With
    // `sampling` (one rank on a backend that samples(): Ops::sample; or every rank of several,
    // each passing the same sampling and its own `tokens`: sampled across the vocabulary slices,
    // model/sliced_sampling.cpp), the backend chooses tokens[i] for the rows not marked host,
    // the same on every rank, and only the host rows' logits reach `logits`. A step
    // with logprob spans (prompt logprobs) writes their results to `logprobs` on rank 0 (other
    // ranks take part in the gathers and may pass null).
    // With `hidden_out` (host, [T, hidden_size]; rank 0 is enough), every row's hidden state
    // before the final norm goes there too (the MTP drafter's input); with `layer_inputs`, the
    // inputs of its layers (the EAGLE3 drafter's); the step then runs op by op.
    void forward(const StepInput& step, const KvCache& cache, float* logits,
                 const StepSampling* sampling = nullptr, int32_t* tokens = nullptr,
                 LogprobRows* logprobs = nullptr, float* hidden_out = nullptr,
                 const LayerInputs* layer_inputs = nullptr);

    // MTP layer `mtp` of config.mtp_layers (reference.md §1.9) over a step whose row i pairs
    // hidden_in[i] (host, [T, hidden_size]: the target's hidden state at position p, or the MTP
    // layer's own output for a chained draft) with token_ids[i], the token at p + 1. Its
    // attention's KV goes to `cache` (layer `mtp` of a cache of mtp_layers layers, addressed by
    // the step's slots and block tables like the target's). For step.logit_rows, on every rank:
    // the full-vocabulary logits [rows, vocab] to `logits` and the layer's output (before
    // shared_head.norm) [rows, hidden] to `hidden_out` (host; null: not wanted). A row at
    // position 0 embeds its token as zeros, as vLLM does.
    void forward_mtp(const StepInput& step, const float* hidden_in, const KvCache& cache,
                     float* logits, float* hidden_out, int64_t mtp = 0);

  private:
    void check_step(const StepInput& step, const KvCache& cache) const;
    // h (the residual stream entering `layer`) to the host rows of `in` that name the layer.
    void copy_layer_input(const LayerInputs& in, int64_t layer, Tensor h);
    // The logits of `normed` [n, hidden] (final-normed rows), full vocabulary, to host `logits`.
    void head_logits(Tensor normed, float* logits);
    void attention(const LayerWeights& w, const KvLayerView& cache, const StepInput& step, Tensor x,
                   Tensor out);
    // Which form each sequence of the step takes, and the naive form's calls and workspace.
    void plan_attention(const StepInput& step);
    // The naive form for sequences [n_absorbed_, ...) of the step, the calls of naive_calls_.
    void naive_attention(const AttentionWeights& a, const KvLayerView& cache, const StepInput& step,
                         Tensor q, Tensor o);
    // Across ranks (world > 1, model/sliced_sampling.cpp): tokens[i] for every row of this rank's
    // logits `part` [n, shard] not marked host, the same on every rank; the host rows' whole
    // logits to `logits` [n, vocab].
    void sample_across_ranks(Tensor part, const StepSampling& sampling, int32_t* tokens,
                             float* logits);
    // A device buffer of its own per slot that outlives the step's scratch (a replayed step
    // takes none), grown when a step needs more.
    Tensor sampling_buffer(size_t slot, DType dt, std::initializer_list<int64_t> dims);
    // The step's logprob spans from the final hidden states h [T, hidden].
    void logprob_rows(const StepInput& step, Tensor h, LogprobRows* out);
    void mlp(const MlpWeights& w, Tensor x, Tensor out);
    void moe(int64_t layer, const LayerWeights& w, Tensor x, Tensor out);
    void observe_route(int64_t layer, const LayerWeights& w, const RouterParams& p, Tensor x,
                       Tensor ids, Tensor weights);

    ModelConfig config_;
    Ops& ops_;
    Communicator& comm_;
    Layout layout_;
    ModelOptions options_;
    ModelWeights weights_;
    int64_t local_heads_;
    float softmax_scale_;
    RopeParams rope_;
    std::shared_ptr<void> rope_storage_;

    // The naive form's work in the current step, the same for every layer: its calls, and a
    // workspace of naive_context_tokens context rows taken once per step that has such calls,
    // whatever its contexts. (The scratch ops take inside a call, in proportion to its context
    // tokens, is given back after it: warm_up_step makes a call of the bound.)
    struct NaiveWorkspace {
        Tensor latent, k_rot, kv;  // [L, latent], [L, dr], [L, heads, dn + dv]
        Tensor lse;                // [T, heads]: a pieced sequence's rows, first q_len of them
    };
    struct SamplingBuffer {
        std::shared_ptr<void> storage;
        void* data = nullptr;
        size_t bytes = 0;
    };
    std::array<SamplingBuffer, 4> sampling_buffers_;
    size_t n_absorbed_ = 0;  // sequences [0, n_absorbed_) take the absorbed form
    std::vector<NaiveCall> naive_calls_;
    NaiveWorkspace naive_ws_;
};

}  // namespace myriad
