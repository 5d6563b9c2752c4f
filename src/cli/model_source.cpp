#include "cli/model_source.h"

#include <filesystem>

namespace myriad::cli {

namespace fs = std::filesystem;

plan::ModelHeaders ModelSource::headers() const {
    plan::ModelHeaders h;
    h.path = dir;
    h.config = &config;
    h.checkpoint = checkpoint.get();
    h.weights = &weights;
    return h;
}

plan::WeightInventory ModelSource::inventory(const ModelConfig& c) const {
    if (const GgufModel* g = checkpoint->gguf()) return plan::weights_from_gguf(c, *g);
    std::vector<TensorInfo> tensors;
    for (const auto& f : checkpoint->files())
        tensors.insert(tensors.end(), f->tensors().begin(), f->tensors().end());
    return plan::weights_from_headers(c, tensors);
}

ModelSource open_model_source(const std::string& dir) {
    ModelSource s;
    s.dir = dir;
    s.config = load_model_config(dir);
    s.defaults = load_model_defaults(dir, s.config);
    s.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(dir));
    if (const GgufModel* g = s.checkpoint->gguf()) {
        s.weights = plan::weights_from_gguf(s.config, *g);
        s.tokenizer_file = dir;  // its vocabulary and template are inside
        s.chat_template_file = dir;
        return s;
    }
    s.weights = s.inventory(s.config);
    const fs::path p(dir);
    for (const char* name : {"tokenizer.json", "tiktoken.model"})
        if (fs::exists(p / name)) {
            s.tokenizer_file = (p / name).string();
            break;
        }
    for (const char* name : {"chat_template.jinja", "tokenizer_config.json"})
        if (fs::exists(p / name)) {
            s.chat_template_file = (p / name).string();
            break;
        }
    return s;
}

}  // namespace myriad::cli
