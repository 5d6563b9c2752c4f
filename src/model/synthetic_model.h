// Models of real shapes with generated weights (bench-model --random): the configs of the
// shapes benchmarks name, and each tensor's synthetic source for the ordinary loader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/model_config.h"
#include "model/tensor_layout.h"
#include "ops/weight.h"

namespace myriad {

// The shapes bench-model --random knows, for messages: "moonlight, kimi-k2".
std::string_view random_shape_names();

// The config of `shape` (moonlight: Moonlight-16B-A3B with the vocabulary of 129,280 used in the
// llama.cpp anchors; kimi-k2: Kimi-K2) cut to `layers` decoder layers (0: all), with weights in
// `format`: bf16 (every weight BF16), fp8 (DeepSeek FP8 blocks for every linear inside the
// layers, as DeepSeek's checkpoints), nvfp4 (routed experts NVFP4, the rest BF16, as NVIDIA's
// checkpoints). Bad input names the flag.
ModelConfig random_model_config(std::string_view shape, int64_t layers, std::string_view format);

// The synthetic source of tensor `t` stored in `format`: values from a seed derived from `seed`
// and the tensor's name, scaled so every linear keeps activations near unit size.
WeightSource synthetic_source(const ExpectedTensor& t, WeightFormat format,
                              const ModelConfig& config, uint64_t seed);

}  // namespace myriad
