// The GGUF reader on files written here byte by byte: a valid file and its splits load; every
// corruption (truncation at any byte, bad magic/version, counts, string lengths, value and
// tensor types, offsets, overlaps, missing splits) is bad input naming the file and the field or
// tensor, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "format/gguf.h"
#include "temp_dir.h"
#include "util/dtype.h"
#include "util/error.h"

namespace myriad {
namespace {

// Builds GGUF bytes: metadata (strings, u32, arrays) and tensors with explicit offsets.
class GgufBytes {
  public:
    std::vector<uint8_t> out;

    template <typename T>
    void put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        out.insert(out.end(), p, p + sizeof(T));
    }
    void str(std::string_view s) {
        put<uint64_t>(s.size());
        out.insert(out.end(), s.begin(), s.end());
    }
    void header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
        put<uint32_t>(0x46554747);
        put<uint32_t>(version);
        put<uint64_t>(tensors);
        put<uint64_t>(kvs);
    }
    void kv_u32(std::string_view key, uint32_t v) {
        str(key);
        put<uint32_t>(4);
        put<uint32_t>(v);
    }
    void kv_str(std::string_view key, std::string_view v) {
        str(key);
        put<uint32_t>(8);
        str(v);
    }
    void tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t off) {
        str(name);
        put<uint32_t>(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) put<uint64_t>(d);
        put<uint32_t>(type);
        put<uint64_t>(off);
    }
    void align(size_t a = 32) {
        while (out.size() % a) out.push_back(0);
    }
};

// A valid file: two metadata entries (one string array), an F32 [4] and a Q8_0 [32 x 2] tensor.
std::vector<uint8_t> valid_file() {
    GgufBytes b;
    b.header(2, 3);
    b.kv_str("general.architecture", "test");
    b.kv_u32("general.alignment", 32);
    b.str("tokenizer.ggml.tokens");
    b.put<uint32_t>(9);  // array
    b.put<uint32_t>(8);  // of strings
    b.put<uint64_t>(2);
    b.str("a");
    b.str("bc");
    b.tensor("norm", {4}, 0, 0);
    b.tensor("w", {32, 2}, 8, 32);
    b.align();
    for (float f : {1.0f, 2.0f, -3.0f, 0.5f}) b.put(f);
    b.align();
    for (int row = 0; row < 2; ++row) {
        b.put<uint16_t>(f32_to_f16(row == 0 ? 0.5f : 0.25f));
        for (int j = 0; j < 32; ++j) b.put<int8_t>(static_cast<int8_t>(j - 16));
    }
    return b.out;
}

std::string message_of(const std::vector<uint8_t>& bytes) {
    try {
        parse_gguf(bytes.data(), bytes.size(), "t.gguf");
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        return e.what();
    }
    return "";
}

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

TEST(GgufReader, ValidFileParsesWithDataInPlace) {
    const auto bytes = valid_file();
    GgufHeader h = parse_gguf(bytes.data(), bytes.size(), "t.gguf");
    ASSERT_EQ(h.tensors.size(), 2u);
    EXPECT_EQ(h.metadata.at("general.architecture").str, "test");
    ASSERT_EQ(h.metadata.at("tokenizer.ggml.tokens").strings.size(), 2u);
    EXPECT_EQ(h.metadata.at("tokenizer.ggml.tokens").strings[1], "bc");
    EXPECT_EQ(h.tensors[1].shape(), (std::vector<int64_t>{2, 32}));
    EXPECT_EQ(h.tensors[1].nbytes, 68u);
    float row[32];
    gguf_dequantize_range(GgufType::Q8_0, h.tensors[1].data + 34, 0, 32, row);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(row[j], 0.25f * static_cast<float>(j - 16));
    float part[5];  // an unaligned window of a block
    gguf_dequantize_range(GgufType::Q8_0, h.tensors[1].data, 7, 5, part);
    for (int j = 0; j < 5; ++j) EXPECT_EQ(part[j], 0.5f * static_cast<float>(j + 7 - 16));
}

TEST(GgufReader, EveryTruncationIsBadInput) {
    const auto bytes = valid_file();
    for (size_t n = 0; n < bytes.size(); ++n) {
        std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_NE(message_of(cut), "") << "truncated to " << n << " bytes";
    }
}

// Replaces the bytes at `at` with `v`.
template <typename T>
std::vector<uint8_t> patched(std::vector<uint8_t> b, size_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof(T));
    return b;
}

size_t find(const std::vector<uint8_t>& b, std::string_view s) {
    auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
    return static_cast<size_t>(it - b.begin());
}

TEST(GgufReader, CorruptionsNameTheProblem) {
    const auto good = valid_file();
    // Offsets of fields in valid_file(): the tensor infos follow the name strings.
    const size_t w_info = find(good, "w\x02") + 1;  // after the name "w": n_dims
    const size_t norm_info = find(good, "norm") + 4;
    struct Case {
        std::vector<uint8_t> bytes;
        std::string expect;
    };
    const size_t tokens_count = find(good, "tokenizer.ggml.tokens") + 21 + 8;
    const Case cases[] = {
        {patched<uint32_t>(good, 0, 0x12345678), "not a GGUF file"},
        {patched<uint32_t>(good, 4, 7), "GGUF version 7"},
        {patched<uint64_t>(good, 8, uint64_t{1} << 60), "tensors, more than the file can hold"},
        {patched<uint64_t>(good, 16, uint64_t{1} << 61), "metadata entries, more than"},
        {patched<uint64_t>(good, 24, uint64_t{1} << 62), "length"},
        {patched<uint64_t>(good, tokens_count, uint64_t{1} << 40), "array of 1099511627776 STRING"},
        {patched<uint32_t>(good, w_info + 4 + 16, 3),
         "unsupported tensor type Q4_1 in tensor w of t.gguf"},
        {patched<uint32_t>(good, w_info + 4 + 16, 200),
         "unsupported tensor type type 200 in tensor w"},
        {patched<uint32_t>(good, w_info, 5), "tensor w has 5 dimensions"},
        {patched<uint64_t>(good, w_info + 4, 0), "tensor w has dimension 0 of size 0"},
        {patched<uint64_t>(good, w_info + 4, 31), "not a multiple of the Q8_0 block of 32"},
        {patched<uint64_t>(good, w_info + 24, 33), "not a multiple of the alignment 32"},
        {patched<uint64_t>(good, w_info + 24, 4096),
         "tensor w (68 bytes at data offset 4096) runs past"},
        {patched<uint64_t>(good, norm_info + 4 + 8 + 4, 32), "overlap"},
        {patched<uint32_t>(good, find(good, "general.alignment") + 17 + 4, 3), "power of two"},
    };
    for (const Case& c : cases) {
        const std::string msg = message_of(c.bytes);
        EXPECT_NE(msg.find(c.expect), std::string::npos) << "got: " << msg;
        EXPECT_NE(msg.find("t.gguf"), std::string::npos) << msg;
    }
    // A metadata value type that is not one of GGUF's 13.
    auto bad_type = patched<uint32_t>(good, find(good, "general.architecture") + 20, 13);
    EXPECT_NE(message_of(bad_type).find("value type 13"), std::string::npos);
}

TEST(GgufReader, SplitsOpenFromTheFirstAndMissingOnesAreNamed) {
    testing::TempDir dir;
    auto split_file = [&](int no, const std::string& tensor) {
        GgufBytes b;
        b.header(1, 3);
        b.str("split.no");
        b.put<uint32_t>(2);  // UINT16
        b.put<uint16_t>(static_cast<uint16_t>(no));
        b.str("split.count");
        b.put<uint32_t>(2);
        b.put<uint16_t>(3);
        b.str("split.tensors.count");
        b.put<uint32_t>(5);  // INT32
        b.put<int32_t>(3);
        b.tensor(tensor, {4}, 0, 0);
        b.align();
        for (int i = 0; i < 4; ++i) b.put<float>(static_cast<float>(no * 10 + i));
        return b.out;
    };
    const std::string prefix = dir.path() + "/m";
    for (int i = 0; i < 3; ++i)
        write(fmt::format("{}-{:05d}-of-00003.gguf", prefix, i + 1),
              split_file(i, "t" + std::to_string(i)));
    auto model = GgufModel::open(prefix + "-00001-of-00003.gguf");
    ASSERT_EQ(model->files().size(), 3u);
    ASSERT_NE(model->tensor("t2"), nullptr);
    float v;
    std::memcpy(&v, model->tensor("t2")->data + 4, 4);
    EXPECT_EQ(v, 21.0f);

    auto error_of = [](const std::string& path) -> std::string {
        try {
            GgufModel::open(path);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::BadInput);
            return e.what();
        }
        return "";
    };
    EXPECT_NE(error_of(prefix + "-00002-of-00003.gguf").find("pass the first one"),
              std::string::npos);
    std::remove((prefix + "-00003-of-00003.gguf").c_str());
    EXPECT_NE(error_of(prefix + "-00001-of-00003.gguf").find("split 3 of 3 is missing"),
              std::string::npos);
}

}  // namespace
}  // namespace myriad
