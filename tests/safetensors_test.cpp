#include "format/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/safetensors_writer.h"
#include "temp_dir.h"
#include "util/error.h"

namespace myriad {
namespace {

using testing::TempDir;

// A file of: u64 header length, `header`, `buffer_size` bytes of data.
std::string raw_file(std::string_view header, size_t buffer_size) {
    std::string bytes(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
    bytes += header;
    bytes.append(buffer_size, '\x5a');
    return bytes;
}

SafetensorsHeader parse(const std::string& bytes, const std::string& path = "model.safetensors") {
    return parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                    path);
}

// Parsing `bytes` must fail as bad input with a one-line message holding every one of `parts`.
void expect_bad(const std::string& bytes, std::initializer_list<std::string_view> parts) {
    try {
        parse(bytes);
        ADD_FAILURE() << "accepted: " << bytes.substr(8);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        std::string msg = e.what();
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        EXPECT_TRUE(msg.starts_with("model.safetensors: ")) << msg;
        for (auto part : parts)
            EXPECT_NE(msg.find(part), std::string::npos) << msg << " / " << part;
    }
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 31 * i);
    return v;
}

TEST(Safetensors, RoundTripEveryDtype) {
    TempDir dir;
    const DType dtypes[] = {DType::BF16, DType::F16, DType::F32, DType::F8_E4M3,
                            DType::U8,   DType::I8,  DType::I32, DType::I64};
    std::vector<TensorToWrite> tensors;
    uint8_t seed = 1;
    for (DType dt : dtypes) {
        std::string name = "layer." + std::string(dtype_name(dt)) + ".weight";
        tensors.push_back({name, dt, {4, 6}, pattern(24 * dtype_size(dt), seed++)});
    }
    tensors.push_back({"scalar", DType::F32, {}, pattern(4, seed++)});
    tensors.push_back({"empty", DType::BF16, {0, 7}, {}});
    std::string path = dir.file("model.safetensors");
    write_safetensors(path, tensors, {{"format", "pt"}});

    SafetensorsFile file(path);
    ASSERT_EQ(file.tensors().size(), tensors.size());
    EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& info = file.tensors()[i];  // header order is write order
        EXPECT_EQ(info.name, tensors[i].name);
        EXPECT_EQ(info.dtype, tensors[i].dtype) << info.name;
        EXPECT_EQ(info.shape, tensors[i].shape) << info.name;
        TensorView view = file.view(info);
        EXPECT_EQ(*view.file, path);
        ASSERT_EQ(view.nbytes(), tensors[i].bytes.size()) << info.name;
        if (view.nbytes() > 0) {
            EXPECT_EQ(std::memcmp(view.data, tensors[i].bytes.data(), view.nbytes()), 0)
                << info.name;
        }
        EXPECT_EQ(reinterpret_cast<uintptr_t>(view.data) % dtype_size(info.dtype), 0u) << info.name;
    }
    EXPECT_EQ(file.find("layer.I64.weight")->numel(), 24);
    EXPECT_EQ(file.find("scalar")->numel(), 1);
    EXPECT_EQ(file.find("missing"), nullptr);
    EXPECT_EQ(file.view(*file.find("layer.BF16.weight")).shape_str(), "[4, 6]");
}

TEST(Safetensors, WriterPadsHeaderToEightBytes) {
    TempDir dir;
    for (size_t name_len = 1; name_len <= 9; ++name_len) {
        std::string path = dir.file("t.safetensors");
        write_safetensors(path, {{std::string(name_len, 'w'), DType::U8, {3}, {1, 2, 3}}});
        std::string bytes = read_file(path);
        SafetensorsHeader header = parse(bytes);
        EXPECT_EQ(header.data_start % 8, 0u) << name_len;
        EXPECT_EQ(bytes.size(), header.data_start + 3);
        EXPECT_EQ(bytes.back(), 3);
    }
    std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
    EXPECT_EQ(parse(raw_file(header + "       ", 2)).data_start, 8 + header.size() + 7);
}

TEST(Safetensors, WriterRejectsBytesThatDoNotMatchTheShape) {
    TempDir dir;
    EXPECT_THROW(write_safetensors(dir.file("x.safetensors"), {{"w", DType::F32, {2, 2}, {0, 0}}}),
                 Error);
    EXPECT_THROW(write_safetensors(dir.file("x.safetensors"),
                                   {{"w", DType::U8, {1}, {0}}, {"w", DType::U8, {1}, {0}}}),
                 Error);
}

TEST(Safetensors, AcceptsEmptyHeaderAndNullMetadata) {
    EXPECT_TRUE(parse(raw_file("{}", 0)).tensors.empty());
    EXPECT_TRUE(parse(raw_file(R"(  {"__metadata__": null}  )", 0)).metadata.empty());
}

TEST(Safetensors, RejectsBadLengthPrefix) {
    expect_bad("", {"empty file"});
    expect_bad(std::string("\x02\x00\x00", 3), {"3 bytes", "too short"});
    std::string too_long = raw_file("{}", 0);
    too_long[0] = 100;  // claims 100 bytes of header, the file has 2
    expect_bad(too_long, {"header length 100", "past the end"});
    std::string huge = raw_file("{}", 0);
    huge[3] = 0x10;  // 268 MB
    expect_bad(huge, {"100 MB"});
    std::string max(8, '\xff');
    expect_bad(max + "{}", {"100 MB"});
}

TEST(Safetensors, RejectsHeadersThatAreNotJsonObjects) {
    expect_bad(raw_file("{\"a\": ", 0), {"not valid JSON"});
    expect_bad(raw_file("", 0), {"not valid JSON"});
    expect_bad(raw_file("[1, 2]", 0), {"expected a JSON object"});
    expect_bad(raw_file("\"text\"", 0), {"expected a JSON object"});
    expect_bad(raw_file("{\"a\": 1e999}", 0), {"not valid JSON"});
    // Invalid UTF-8 and control bytes are escaped, keeping the message on one printable line.
    expect_bad(raw_file("{\"w\xff\n\": 1}", 0), {"not valid JSON"});
    expect_bad(raw_file("{} {}", 0), {"not valid JSON"});
}

TEST(Safetensors, RejectsBadEntries) {
    const std::string t = "model.layers.0.mlp.gate.weight";
    auto entry = [&](std::string_view body) {
        return "{\"" + t + "\": " + std::string(body) + "}";
    };
    expect_bad(raw_file(entry("5"), 0), {t, "expected an object"});
    expect_bad(raw_file(entry(R"({"shape":[1],"data_offsets":[0,4]})"), 4),
               {t, "dtype is missing"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","data_offsets":[0,4]})"), 4),
               {t, "shape is missing"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[1]})"), 4),
               {t, "data_offsets is missing"});
    expect_bad(raw_file(entry(R"({"dtype":7,"shape":[1],"data_offsets":[0,4]})"), 4),
               {t, "dtype has type number"});
    expect_bad(raw_file(entry(R"({"dtype":"F99","shape":[1],"data_offsets":[0,4]})"), 4),
               {t, "unknown dtype \"F99\""});
    expect_bad(raw_file(entry(R"({"dtype":"F8_E5M2","shape":[1],"data_offsets":[0,1]})"), 1),
               {t, "dtype F8_E5M2 is not supported by myriad"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":{"a":1},"data_offsets":[0,4]})"), 4),
               {t, "shape has type object"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":["1"],"data_offsets":[0,4]})"), 4),
               {t, "shape holds a string"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})"), 4),
               {t, "shape holds a number"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), 4),
               {t, "negative dimension -1"});
    expect_bad(
        raw_file(entry(R"({"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]})"), 4),
        {t, "impossibly large"});
    expect_bad(
        raw_file(
            entry(
                R"({"dtype":"F32","shape":[4294967296,4294967296,4294967296,0],"data_offsets":[0,0]})"),
            0),
        {t, "more elements than any file can hold"});
    expect_bad(
        raw_file(entry(R"({"dtype":"I64","shape":[2305843009213693952],"data_offsets":[0,0]})"), 0),
        {t, "more elements"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[1],"data_offsets":"0-4"})"), 4),
               {t, "data_offsets has type string"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})"), 8),
               {t, "data_offsets has 3 elements"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"), 4),
               {t, "negative -4"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0,"4"]})"), 4),
               {t, "data_offsets holds a string"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[0],"data_offsets":[4,0]})"), 4),
               {t, "[4, 0] begin after they end"});
    expect_bad(raw_file(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})"), 4),
               {t, "[0, 8] run past the end of the data buffer (4 bytes)"});
    expect_bad(
        raw_file(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615]})"),
                 4),
        {t, "run past the end"});
}

TEST(Safetensors, ByteSizeMismatchNamesFileTensorAndSizes) {
    std::string header =
        R"({"model.layers.0.mlp.gate.weight":{"dtype":"BF16","shape":[8,8],"data_offsets":[0,96]}})";
    try {
        parse(raw_file(header, 96));
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_STREQ(e.what(),
                     "model.safetensors: tensor model.layers.0.mlp.gate.weight: data_offsets [0, "
                     "96] hold 96 bytes but dtype BF16 and shape [8, 8] need 128");
    }
}

TEST(Safetensors, RejectsOverlapsGapsAndTrailingBytes) {
    auto two = [](std::string_view a, std::string_view b) {
        return "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + std::string(a) +
               "},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + std::string(b) + "}}";
    };
    EXPECT_EQ(parse(raw_file(two("[8,16]", "[0,8]"), 16)).tensors[0].name, "a");
    expect_bad(raw_file(two("[0,8]", "[4,12]"), 12), {"tensor b", "overlap tensor a"});
    expect_bad(raw_file(two("[0,8]", "[0,8]"), 8), {"overlap"});
    expect_bad(raw_file(two("[0,8]", "[12,20]"), 20), {"tensor b", "gap after tensor a"});
    expect_bad(raw_file(two("[4,12]", "[12,20]"), 20), {"tensor a", "bytes [0, 4)"});
    expect_bad(raw_file(two("[0,8]", "[8,16]"), 24), {"holds 24 bytes", "cover only 16"});
    // A zero-size tensor inside another one overlaps it too.
    std::string inside = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                         R"("z":{"dtype":"U8","shape":[0],"data_offsets":[4,4]}})";
    expect_bad(raw_file(inside, 8), {"tensor z", "overlap tensor a"});
    std::string at_end = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                         R"("z":{"dtype":"U8","shape":[0],"data_offsets":[8,8]}})";
    EXPECT_EQ(parse(raw_file(at_end, 8)).tensors.size(), 2u);
}

TEST(Safetensors, RejectsDuplicateNamesAndBadMetadata) {
    std::string dup = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                      R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
    expect_bad(raw_file(dup, 2), {"tensor a appears twice"});
    expect_bad(raw_file(R"({"__metadata__": [1]})", 0), {"__metadata__ has type array"});
    expect_bad(raw_file(R"({"__metadata__": {"format": 1}})", 0), {"__metadata__ entry format"});
}

TEST(Safetensors, TensorNamesWithControlCharactersStayOnOneLine) {
    expect_bad(raw_file(R"({"bad\nname": 5})", 0), {"tensor bad\\x0aname"});
}

// Every truncation and every single-byte change of a valid file is either read or rejected as
// bad input; nothing else (the fuzz target explores further).
TEST(Safetensors, DamagedFilesAreRejectedNotCrashed) {
    TempDir dir;
    std::string path = dir.file("model.safetensors");
    write_safetensors(
        path, {{"a", DType::BF16, {2, 3}, pattern(12, 1)}, {"b", DType::I32, {2}, pattern(8, 2)}},
        {{"format", "pt"}});
    const std::string good = read_file(path);
    auto try_parse = [](const std::string& bytes) {
        try {
            parse(bytes);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        }
    };
    for (size_t len = 0; len < good.size(); ++len) try_parse(good.substr(0, len));
    for (size_t i = 0; i < good.size(); ++i) {
        for (int flip : {0x01, 0x20, 0x80, 0xff}) {
            std::string bad = good;
            bad[i] = static_cast<char>(bad[i] ^ flip);
            try_parse(bad);
        }
    }
}

TEST(Safetensors, MissingFileIsBadInput) {
    TempDir dir;
    try {
        SafetensorsFile file(dir.file("nope.safetensors"));
        FAIL() << "opened";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(std::string(e.what()).find("nope.safetensors"), std::string::npos);
    }
    std::string empty = dir.write("empty.safetensors", "");
    EXPECT_THROW(SafetensorsFile{empty}, Error);
}

}  // namespace
}  // namespace myriad
