#include "format/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "format/safetensors_writer.h"
#include "temp_dir.h"
#include "util/error.h"

namespace myriad {
namespace {

using testing::TempDir;

TensorToWrite f32(std::string name, std::vector<int64_t> shape, float first = 0.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
        float v = first + static_cast<float>(i);
        std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
    return {std::move(name), DType::F32, std::move(shape), std::move(bytes)};
}

float first_f32(const TensorView& v) {
    float x;
    std::memcpy(&x, v.data, 4);
    return x;
}

// The message of the bad-input Error that `fn` throws; fails the test when it throws none.
template <typename Fn>
std::string bad_input_message(Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error thrown";
    return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

// Two shards and their index, as `save_pretrained` lays them out.
void write_sharded(const TempDir& dir, const std::string& index_json) {
    write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                      {f32("model.embed_tokens.weight", {4, 2}, 1.0f),
                       f32("model.layers.0.input_layernorm.weight", {2}, 10.0f)});
    write_safetensors(dir.file("model-00002-of-00002.safetensors"),
                      {f32("model.norm.weight", {2}, 20.0f), f32("lm_head.weight", {4, 2}, 30.0f)});
    dir.write("model.safetensors.index.json", index_json);
}

const char* kIndex = R"({
  "metadata": {"total_size": 96},
  "weight_map": {
    "lm_head.weight": "model-00002-of-00002.safetensors",
    "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.input_layernorm.weight": "model-00001-of-00002.safetensors",
    "model.norm.weight": "model-00002-of-00002.safetensors"
  }
})";

TEST(Checkpoint, OpensSingleFileAndItsFolder) {
    TempDir dir;
    write_safetensors(dir.file("model.safetensors"), {f32("b", {2, 3}, 5.0f), f32("a", {1})});
    for (const std::string& path : {dir.path(), dir.file("model.safetensors")}) {
        Checkpoint ck = Checkpoint::open(path);
        EXPECT_EQ(ck.path(), path);
        EXPECT_EQ(ck.names(), (std::vector<std::string>{"a", "b"}));
        EXPECT_TRUE(ck.has("b"));
        EXPECT_FALSE(ck.has("c"));
        TensorView b = ck.expect("b", {2, 3}, {DType::F32});
        EXPECT_EQ(first_f32(b), 5.0f);
        EXPECT_EQ(b.nbytes(), 24u);
        EXPECT_EQ(ck.files().size(), 1u);
    }
}

TEST(Checkpoint, OpensEverySafetensorsFileOfAFolder) {
    TempDir dir;
    write_safetensors(dir.file("part-b.safetensors"), {f32("y", {2})});
    write_safetensors(dir.file("part-a.safetensors"), {f32("x", {3}, 7.0f)});
    dir.write("notes.txt", "not weights");
    Checkpoint ck = Checkpoint::open(dir.path());
    EXPECT_EQ(ck.names(), (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(ck.files().size(), 2u);
    EXPECT_EQ(first_f32(ck.get("x")), 7.0f);
}

TEST(Checkpoint, DuplicateTensorAcrossFilesIsBadInput) {
    TempDir dir;
    write_safetensors(dir.file("a.safetensors"), {f32("model.norm.weight", {2})});
    write_safetensors(dir.file("b.safetensors"), {f32("model.norm.weight", {2})});
    std::string msg = bad_input_message([&] { Checkpoint::open(dir.path()); });
    EXPECT_HAS(msg, "model.norm.weight");
    EXPECT_HAS(msg, "a.safetensors");
    EXPECT_HAS(msg, "b.safetensors");
}

TEST(Checkpoint, ShardedIndexRoundTrip) {
    TempDir dir;
    write_sharded(dir, kIndex);
    // A stray file the index does not list is not read.
    write_safetensors(dir.file("consolidated.safetensors"), {f32("model.norm.weight", {2})});
    for (const std::string& path : {dir.path(), dir.file("model.safetensors.index.json")}) {
        Checkpoint ck = Checkpoint::open(path);
        EXPECT_EQ(ck.files().size(), 2u);
        EXPECT_EQ(ck.names(), (std::vector<std::string>{
                                  "lm_head.weight", "model.embed_tokens.weight",
                                  "model.layers.0.input_layernorm.weight", "model.norm.weight"}));
        EXPECT_EQ(first_f32(ck.expect("lm_head.weight", {4, 2})), 30.0f);
        EXPECT_EQ(first_f32(ck.get("model.layers.0.input_layernorm.weight")), 10.0f);
        TensorView norm = ck.get("model.norm.weight");
        EXPECT_TRUE(norm.file->ends_with("model-00002-of-00002.safetensors")) << *norm.file;
        std::string msg =
            bad_input_message([&] { ck.get("model.layers.1.input_layernorm.weight"); });
        EXPECT_HAS(msg,
                   "model.safetensors.index.json: tensor model.layers.1.input_layernorm.weight "
                   "is missing");
    }
}

TEST(Checkpoint, IndexErrorsNameTheIndexAndTheTensor) {
    struct Case {
        std::string index;
        std::vector<std::string> parts;
    };
    const std::vector<Case> cases = {
        {R"({"weight_map": {"model.norm.weight": "model-00003-of-00002.safetensors"}})",
         {"model.safetensors.index.json", "model.norm.weight", "model-00003-of-00002.safetensors",
          "does not exist"}},
        {R"({"weight_map": {"model.layers.5.x": "model-00001-of-00002.safetensors"}})",
         {"model.safetensors.index.json", "model.layers.5.x", "does not hold it"}},
        {R"({"weight_map": {"lm_head.weight": "model-00001-of-00002.safetensors"}})",
         {"model.safetensors.index.json", "lm_head.weight", "does not hold it"}},
        {R"({"metadata": {}})", {"model.safetensors.index.json", "weight_map is missing"}},
        {R"({"weight_map": []})", {"model.safetensors.index.json", "weight_map has type array"}},
        {R"({"weight_map": {"lm_head.weight": 2}})",
         {"model.safetensors.index.json", "lm_head.weight"}},
        {R"({"weight_map": {"lm_head.weight": "../model.safetensors"}})",
         {"model.safetensors.index.json", "lm_head.weight", "not a file inside the folder"}},
        {R"({"weight_map": {}})", {"model.safetensors.index.json", "lists no tensors"}},
        {R"({"weight_map": )", {"model.safetensors.index.json", "not valid JSON"}},
        {R"([1])", {"model.safetensors.index.json", "expected a JSON object"}},
    };
    for (const auto& c : cases) {
        TempDir dir;
        write_sharded(dir, c.index);
        std::string msg = bad_input_message([&] { Checkpoint::open(dir.path()); });
        for (const auto& part : c.parts) EXPECT_HAS(msg, part);
    }
}

TEST(Checkpoint, ExpectNamesFileTensorFoundAndExpected) {
    TempDir dir;
    std::string file = dir.file("model.safetensors");
    write_safetensors(file,
                      {f32("w", {64, 32}), {"ids", DType::I32, {4}, std::vector<uint8_t>(16)}});
    Checkpoint ck = Checkpoint::open(dir.path());
    EXPECT_EQ(bad_input_message([&] {
                  ck.expect("w", {64, 48});
              }),
              file + ": tensor w has shape [64, 32], expected [64, 48]");
    EXPECT_EQ(bad_input_message([&] {
                  ck.expect("ids", {4}, {DType::BF16, DType::F16, DType::F32});
              }),
              file + ": tensor ids has dtype I32, expected one of BF16, F16, F32");
    EXPECT_EQ(bad_input_message([&] { ck.expect("ids", {4}, {DType::I64}); }),
              file + ": tensor ids has dtype I32, expected I64");
    EXPECT_EQ(bad_input_message([&] { ck.get("nope"); }), file + ": tensor nope is missing");
    EXPECT_EQ(ck.expect("ids", {4}).dtype(), DType::I32);
}

TEST(Checkpoint, FoldersWithoutWeightsAndOtherPathsAreBadInput) {
    TempDir dir;
    dir.write("config.json", "{}");
    std::string msg = bad_input_message([&] { Checkpoint::open(dir.path()); });
    EXPECT_HAS(msg, dir.path());
    EXPECT_HAS(msg, "no safetensors");
    msg = bad_input_message([&] { Checkpoint::open(dir.file("missing")); });
    EXPECT_HAS(msg, "missing: no such file or folder");
    msg = bad_input_message([&] { Checkpoint::open(dir.file("config.json")); });
    EXPECT_HAS(msg, "config.json: not a .safetensors file");
    dir.write("broken.safetensors", std::string("\x04\0\0\0\0\0\0\0{}", 10));
    msg = bad_input_message([&] { Checkpoint::open(dir.path()); });
    EXPECT_HAS(msg, "broken.safetensors");
}

}  // namespace
}  // namespace myriad
