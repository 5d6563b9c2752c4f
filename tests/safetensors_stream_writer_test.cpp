// SafetensorsStreamWriter: pieces written out of order from several threads make the same file
// as write_safetensors with the whole tensors, read back by the project's reader; a short write,
// an out-of-range piece and an abandoned writer leave no file behind.
#include "format/safetensors_stream_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "format/safetensors.h"
#include "format/safetensors_writer.h"
#include "temp_dir.h"
#include "util/error.h"

namespace myriad {
namespace {

using testing::TempDir;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<TensorToWrite> sample_tensors() {
    std::vector<TensorToWrite> t = {{"a.weight", DType::BF16, {3, 5}, {}},
                                    {"a.weight_scale_2", DType::F32, {}, {}},
                                    {"b.codes", DType::U8, {1000}, {}}};
    for (size_t i = 0; i < t.size(); ++i) {
        size_t n = dtype_size(t[i].dtype);
        for (int64_t d : t[i].shape) n *= static_cast<size_t>(d);
        t[i].bytes.resize(n);
        for (size_t j = 0; j < n; ++j) t[i].bytes[j] = static_cast<uint8_t>(17 * i + 7 * j);
    }
    return t;
}

TEST(SafetensorsStreamWriter, PiecesFromThreadsMakeTheSameFile) {
    TempDir dir;
    const auto tensors = sample_tensors();
    write_safetensors(dir.file("whole.safetensors"), tensors, {{"format", "pt"}});
    std::vector<TensorSpec> specs;
    for (const auto& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
    SafetensorsStreamWriter w(dir.file("pieces.safetensors"), specs, {{"format", "pt"}});
    EXPECT_FALSE(std::filesystem::exists(dir.file("pieces.safetensors")));  // only .partial
    EXPECT_EQ(w.tensor_bytes(2), 1000u);
    // Every tensor in pieces of 7 bytes, the pieces in reverse order, two threads at once.
    std::vector<std::thread> threads;
    for (int part = 0; part < 2; ++part)
        threads.emplace_back([&, part] {
            for (size_t i = 0; i < tensors.size(); ++i) {
                const auto& b = tensors[i].bytes;
                for (size_t at = (b.size() / 7) * 7;; at -= 7) {
                    if ((at / 7) % 2 == static_cast<size_t>(part) && at < b.size())
                        w.write(i, at, b.data() + at, std::min<size_t>(7, b.size() - at));
                    if (at == 0) break;
                }
            }
        });
    for (auto& t : threads) t.join();
    w.finish();
    EXPECT_EQ(read_file(dir.file("pieces.safetensors")), read_file(dir.file("whole.safetensors")));
    SafetensorsFile f(dir.file("pieces.safetensors"));
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.tensors()[2].name, "b.codes");
    EXPECT_EQ(w.file_bytes(), std::filesystem::file_size(dir.file("pieces.safetensors")));
}

TEST(SafetensorsStreamWriter, ShortOrStrayWritesLeaveNoFile) {
    TempDir dir;
    const std::string path = dir.file("x.safetensors");
    {
        SafetensorsStreamWriter w(path, {{"t", DType::F32, {4}}});
        const float v[4] = {1, 2, 3, 4};
        EXPECT_THROW(w.write(0, 8, v, 16), Error);  // past the tensor's 16 bytes
        EXPECT_THROW(w.write(1, 0, v, 4), Error);   // no tensor 1
        w.write(0, 0, v, 12);
        EXPECT_THROW(w.finish(), Error);  // 12 of 16 bytes
    }
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
    {
        SafetensorsStreamWriter w(path, {{"t", DType::F32, {4}}});
        const float v[4] = {1, 2, 3, 4};
        w.write(0, 0, v, 16);
        w.finish(true);  // with the page cache dropped
    }
    SafetensorsFile f(path);
    EXPECT_EQ(f.tensors()[0].end, 16u);
}

TEST(SafetensorsStreamWriter, UncreatableFileIsBadInputNamingIt) {
    try {
        SafetensorsStreamWriter w("/nonexistent-dir/x.safetensors", {{"t", DType::U8, {1}}});
        ADD_FAILURE() << "created";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.safetensors.partial"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace myriad
