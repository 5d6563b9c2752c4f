// Where MODEL points, and the one message every command gives when no model is there (what a
// model is, and that `myriad pull` fetches one). resolve_model (commands.h) is
// resolve_model_folder(model, false).
#pragma once

#include <string>

namespace myriad::cli {

// MODEL as given (ORG/NAME[@REVISION] in the HF cache: its snapshot folder), or the shipped model
// when empty; whether anything is there is not checked.
std::string model_path(const std::string& model);

// model_path(model), which must be a model folder (config.json in it; with `tokenizer_only`, any
// folder) or a .gguf file; else bad input with that one message.
std::string resolve_model_folder(const std::string& model, bool tokenizer_only);

}  // namespace myriad::cli
