// libFuzzer target: GGUF parsing (header, metadata, tensor infos) must accept or reject any bytes
// as bad input. Only myriad::Error is caught; any other exception or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "format/gguf.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "fuzz.gguf";
    try {
        myriad::GgufHeader h = myriad::parse_gguf(data, size, path);
        // An accepted header describes tensors inside the input: dequantise each one's first
        // and last block, and read every numeric array's last element.
        volatile float sink = 0.0f;
        float block[256];
        for (const auto& t : h.tensors) {
            const size_t bb = myriad::gguf_block_bytes(t.type);
            myriad::gguf_dequantize_blocks(t.type, t.data, 1, block);
            sink = sink + block[0];
            myriad::gguf_dequantize_blocks(t.type, t.data + t.nbytes - bb, 1, block);
            sink = sink + block[0];
        }
        for (const auto& [key, v] : h.metadata)
            if (v.raw != nullptr && v.count > 0)
                sink = sink + static_cast<float>(v.number_at(v.count - 1));
    } catch (const myriad::Error& e) {
        if (e.kind() != myriad::ErrorKind::BadInput) __builtin_trap();
    }
    return 0;
}
