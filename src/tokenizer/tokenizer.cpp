// Tokenizer::load: which kind of tokenizer a folder holds.
#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "format/gguf.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tiktoken_tokenizer.h"
#include "tokenizer/tokenizer_config.h"
#include "util/error.h"
#include "util/mmap_file.h"

namespace myriad {

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (is_gguf_path(dir) && fs::is_regular_file(dir, ec))
        return load_gguf_tokenizer(*GgufModel::open(dir));
    if (!fs::is_directory(dir, ec)) bad_input("{}: is not a folder", dir);
    const std::string config_path = (fs::path(dir) / "tokenizer_config.json").string();
    const std::string json_path = (fs::path(dir) / "tokenizer.json").string();
    const std::string tiktoken_path = (fs::path(dir) / "tiktoken.model").string();
    auto text = [](const MappedFile& f) {
        return std::string_view(reinterpret_cast<const char*>(f.data()), f.size());
    };
    if (fs::exists(json_path, ec)) {
        MappedFile f(json_path);
        return std::make_unique<HfTokenizer>(text(f), read_tokenizer_config(config_path),
                                             json_path);
    }
    if (fs::exists(tiktoken_path, ec)) {
        MappedFile f(tiktoken_path);
        return std::make_unique<TiktokenTokenizer>(text(f), read_tokenizer_config(config_path),
                                                   tiktoken_path, config_path);
    }
    bad_input("{}: no tokenizer.json or tiktoken.model in this folder", dir);
}

}  // namespace myriad
