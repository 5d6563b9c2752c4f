// gguf_dump FILE OUT: writes every tensor of FILE (in file order) dequantised to float32,
// concatenated, to OUT. tests/python/test_gguf.py compares it with gguf.quants.dequantize.
#include <cstdio>
#include <vector>

#include "format/gguf.h"
#include "util/error.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: gguf_dump FILE OUT\n");
        return 2;
    }
    try {
        myriad::GgufFile file(argv[1]);
        std::FILE* out = std::fopen(argv[2], "wb");
        if (!out) return 1;
        for (const auto& t : file.header().tensors) {
            std::vector<float> values(static_cast<size_t>(t.numel()));
            const int64_t ne0 = t.dims[0], rows = t.numel() / ne0;
            for (int64_t r = 0; r < rows; ++r)
                myriad::gguf_dequantize_range(t.type, t.data + r * t.row_bytes(), 0, ne0,
                                              values.data() + r * ne0);
            std::fwrite(values.data(), 4, values.size(), out);
        }
        std::fclose(out);
    } catch (const myriad::Error& e) {
        std::fprintf(stderr, "gguf_dump: %s\n", e.what());
        return e.exit_status();
    }
    return 0;
}
