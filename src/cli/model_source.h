// A model folder (or .gguf file), opened once: config.json with its quantisation config, the
// generation defaults, the checkpoint's index and headers (mapped, no weight read), what they
// weigh, and where the tokenizer and the chat template are. The run plan and the loader receive
// this value; nothing opens the folder again to decide how to run.
#pragma once

#include <memory>
#include <string>

#include "engine/model_defaults.h"
#include "format/checkpoint.h"
#include "model/model_config.h"
#include "plan/run_plan.h"
#include "plan/weight_inventory.h"

namespace myriad::cli {

struct ModelSource {
    std::string dir;
    ModelConfig config;
    ModelDefaults defaults;
    std::unique_ptr<Checkpoint> checkpoint;
    plan::WeightInventory weights;   // from the headers
    std::string tokenizer_file;      // tokenizer.json, tiktoken.model or the .gguf; empty: none
    std::string chat_template_file;  // chat_template.jinja, tokenizer_config.json or the .gguf

    bool has_tokenizer() const { return !tokenizer_file.empty(); }
    plan::ModelHeaders headers() const;
    // What the checkpoint's headers weigh for `c` (this model's config as another run would load
    // it: with its MTP layers, say).
    plan::WeightInventory inventory(const ModelConfig& c) const;
};

// Bad input naming the file when the folder is not a model.
ModelSource open_model_source(const std::string& dir);

}  // namespace myriad::cli
