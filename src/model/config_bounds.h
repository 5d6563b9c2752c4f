// The counts and values of a model's configuration (config.json or GGUF metadata) checked
// before anything is sized by them: a config that claims a billion layers or experts is bad
// input naming the field, not an allocation that exhausts the machine.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace myriad {

// How the checked fields are spelled in messages: "field text_config.num_hidden_layers" or
// "metadata deepseek2.block_count".
struct ConfigFieldNames {
    std::string layers, experts, vocab, hidden, bos, eos, rope_theta;
};

// Counts beyond any model's (the largest published ones stay far below; see the .cpp), token
// ids outside [0, vocab_size) and a rope_theta a float cannot use are bad input from `source`
// naming the field. An eos id past the vocabulary is only warned about: it is never sampled.
void check_config_values(const ModelConfig& c, const ConfigFieldNames& names,
                         const std::string& source);

// Bad input naming the field when a count times the least its weights can take (one bit a
// weight) needs more than the `weight_bytes` the model's files hold.
void check_config_fits(const ModelConfig& c, uint64_t weight_bytes, const ConfigFieldNames& names,
                       const std::string& source);

}  // namespace myriad
