#include "format/generation_config.h"

#include <gtest/gtest.h>

#include <string>

#include "temp_dir.h"
#include "util/error.h"

namespace myriad {
namespace {

using testing::TempDir;

std::string load_error(const TempDir& dir) {
    try {
        load_generation_config(dir.path());
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(GenerationConfig, MissingFileGivesEmptyConfig) {
    TempDir dir;
    GenerationConfig g = load_generation_config(dir.path());
    EXPECT_TRUE(g.eos_token_ids.empty());
    EXPECT_FALSE(g.bos_token_id.has_value());
    EXPECT_FALSE(g.temperature.has_value());
}

TEST(GenerationConfig, ReadsEveryField) {
    TempDir dir;
    dir.write("generation_config.json", R"({
      "_from_model_config": true, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": null,
      "do_sample": true, "temperature": 0.6, "top_p": 0.95, "min_p": 0.01, "top_k": 40,
      "repetition_penalty": 1.05, "max_new_tokens": 2048, "transformers_version": "4.46.3"})");
    GenerationConfig g = load_generation_config(dir.path());
    EXPECT_EQ(g.eos_token_ids, std::vector<int64_t>{1});
    EXPECT_EQ(g.bos_token_id, 0);
    EXPECT_FALSE(g.pad_token_id.has_value());
    EXPECT_EQ(g.do_sample, true);
    EXPECT_DOUBLE_EQ(*g.temperature, 0.6);
    EXPECT_DOUBLE_EQ(*g.top_p, 0.95);
    EXPECT_DOUBLE_EQ(*g.min_p, 0.01);
    EXPECT_EQ(g.top_k, 40);
    EXPECT_DOUBLE_EQ(*g.repetition_penalty, 1.05);
    EXPECT_EQ(g.max_new_tokens, 2048);
}

TEST(GenerationConfig, EosMayBeAList) {
    TempDir dir;
    dir.write("generation_config.json", R"({"eos_token_id": [163585, 163586], "temperature": 1})");
    GenerationConfig g = load_generation_config(dir.path());
    EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{163585, 163586}));
    EXPECT_DOUBLE_EQ(*g.temperature, 1.0);
}

TEST(GenerationConfig, WrongTypesNameTheFileAndField) {
    struct Case {
        std::string json, expected;
    };
    const std::vector<Case> cases = {
        {R"({"eos_token_id": "1"})", "field eos_token_id has type string, expected integer"},
        {R"({"eos_token_id": [1, true]})",
         "field eos_token_id[1] has type boolean, expected integer"},
        {R"({"eos_token_id": {"a": 1}})", "field eos_token_id has type object, expected integer"},
        {R"({"eos_token_id": [-1]})", "field eos_token_id holds a negative id -1"},
        {R"({"temperature": "hot"})", "field temperature has type string, expected number"},
        {R"({"do_sample": "yes"})", "field do_sample has type string, expected boolean"},
        {R"({"top_k": 2.5})", "field top_k is 2.5, expected an integer"},
        {R"({"top_p": 1.5})", "field top_p is 1.5, expected a value in [0, 1]"},
        {R"({"max_new_tokens": 0})", "field max_new_tokens is 0"},
        {R"([1])", "expected a JSON object"},
        {R"({"top_k": )", "not valid JSON"},
    };
    for (const auto& c : cases) {
        TempDir dir;
        std::string path = dir.write("generation_config.json", c.json);
        std::string msg = load_error(dir);
        EXPECT_TRUE(msg.starts_with(path + ": ")) << msg;
        EXPECT_HAS(msg, c.expected);
    }
}

}  // namespace
}  // namespace myriad
