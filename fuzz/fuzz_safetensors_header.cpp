// libFuzzer target: safetensors header parsing must accept or reject any bytes as bad input.
// Only myriad::Error is caught; any other exception or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "format/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "fuzz.safetensors";
    try {
        myriad::SafetensorsHeader header = myriad::parse_safetensors_header(data, size, path);
        // An accepted header describes tensors inside the input: touch their first and last byte.
        volatile uint8_t sink = 0;
        for (const auto& t : header.tensors) {
            if (t.end > t.begin)
                sink =
                    sink + data[header.data_start + t.begin] + data[header.data_start + t.end - 1];
            (void)t.numel();
        }
    } catch (const myriad::Error& e) {
        if (e.kind() != myriad::ErrorKind::BadInput) __builtin_trap();
    }
    return 0;
}
