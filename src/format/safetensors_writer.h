// Writes safetensors files (tests that build checkpoints, and later `myriad quantize`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace myriad {

struct TensorToWrite {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;  // numel * dtype_size bytes, little-endian, row-major
};

// Writes tensors in the given order with an 8-byte aligned header. Throws on I/O errors.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace myriad
