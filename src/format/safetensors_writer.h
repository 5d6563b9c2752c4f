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

// A tensor's header entry before its bytes exist (the streaming writer's input).
struct TensorSpec {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
};

// The header text of a file holding `tensors` in that order, padded with spaces so that the byte
// buffer starts 8-byte aligned; `sizes` (when given) gets each tensor's byte size. Invalid names,
// duplicates, negative dimensions and overflowing sizes are internal errors naming the tensor.
std::string safetensors_header_text(const std::vector<TensorSpec>& tensors,
                                    const std::map<std::string, std::string>& metadata,
                                    std::vector<uint64_t>* sizes = nullptr);

// Writes tensors in the given order with an 8-byte aligned header. Throws on I/O errors.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace myriad
