// ActivationRecorder: the CPU backend, recording the largest |input| each linear layer sees
// while text runs through the model, for static activation scales (NVFP4's input_scale). Routed
// experts are recorded from the tokens routed to them, their down_proj from silu(gate) * up.
#pragma once

#include <map>
#include <string>
#include <unordered_map>

#include "model/weights.h"
#include "ops/cpu/cpu_ops.h"

namespace myriad {

class ActivationRecorder : public CpuOps {
  public:
    using CpuOps::CpuOps;

    // Names the linear weights of a model built on this backend (checkpoint module names, e.g.
    // "model.layers.3.mlp.experts.5.down_proj"); only named weights are reported.
    void name_weights(const ModelWeights& weights);
    // max |input| per module, for the modules that saw any input.
    std::map<std::string, float> input_amax() const;

    void linear(Tensor x, const Weight& w, Tensor out) override;
    void moe_experts(Tensor x, Tensor ids, Tensor weights, const std::vector<MlpWeights>& experts,
                     Tensor out) override;

  private:
    void record(const Weight& w, const float* x, int64_t n);

    std::unordered_map<const void*, float> amax_;
    std::unordered_map<const void*, std::string> names_;
};

}  // namespace myriad
