// ModelConfig from a GGUF file of llama.cpp's deepseek2 architecture (reference.md §3.2): the
// hyperparameters under "deepseek2.*", the vocabulary size from token_embd, bos/eos from
// tokenizer.ggml.*. Errors name the file and the metadata key.
#pragma once

#include "format/gguf.h"
#include "model/model_config.h"

namespace myriad {

ModelConfig gguf_model_config(const GgufModel& model);

}  // namespace myriad
