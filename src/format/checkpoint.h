// A checkpoint's tensors across one file or many shards (model.safetensors.index.json).
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/safetensors.h"

namespace myriad {

class Checkpoint {
  public:
    // `path` is a folder holding model.safetensors.index.json (sharded), model.safetensors, or
    // any *.safetensors files; or a single .safetensors file; or a .gguf file (the first of its
    // splits), whose tensors are read through gguf() instead. Bad input throws, naming the file.
    static Checkpoint open(const std::string& path);
    // A checkpoint of no files whose tensors are generated from `seed` (bench-model --random):
    // it holds no tensors; the model's loader asks the backend to build each weight from the
    // seed and the tensor's name (ops/synthetic_values.h).
    static Checkpoint synthetic(uint64_t seed);
    uint64_t synthetic_seed() const { return synthetic_seed_; }  // 0: not synthetic

    // The GGUF model when the checkpoint is one (it then has no safetensors tensors), else null.
    const GgufModel* gguf() const { return gguf_.get(); }

    const std::string& path() const { return path_; }
    bool has(std::string_view name) const;
    // Throws bad input "<file>: tensor <name> is missing" when absent.
    TensorView get(std::string_view name) const;
    // get() plus checks: dtype is one of `dtypes` (any if empty) and the shape equals `shape`;
    // a mismatch names the file, the tensor, what was found and what was expected.
    TensorView expect(std::string_view name, const std::vector<int64_t>& shape,
                      std::initializer_list<DType> dtypes = {}) const;
    // Every tensor name, sorted.
    std::vector<std::string> names() const;
    const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

  private:
    std::string path_;
    std::string index_path_;  // empty when not sharded
    std::shared_ptr<const GgufModel> gguf_;
    uint64_t synthetic_seed_ = 0;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, std::pair<size_t, const TensorInfo*>, std::less<>> tensors_;
};

}  // namespace myriad
