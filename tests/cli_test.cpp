// The myriad executable as users run it: generate and inspect on the shipped model, and bad
// checkpoints that must end with one line naming the file and the tensor or field, exit status 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/safetensors_writer.h"
#include "random_model.h"
#include "run_myriad.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {


int count_lines(const std::string& s) {
    int n = 0;
    for (char ch : s) n += ch == '\n';
    return n;
}

const std::string kShipped = std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny";

TEST(Cli, GenerateIsTheSameAtEveryTensorParallelSize) {
    std::string first;
    for (int tp : {1, 2, 4}) {
        Result r = run_myriad("--quiet generate " + kShipped +
                              " --prompt-ids 3840,3843,17,5,9 --max-tokens 12 --temperature 0 --ids --tp " +
                              std::to_string(tp));
        ASSERT_EQ(r.status, 0) << r.err;
        if (tp == 1) first = r.out;
        EXPECT_EQ(r.out, first) << "tp " << tp;
    }
    EXPECT_EQ(std::count(first.begin(), first.end(), ','), 11) << first;
}

TEST(Cli, GenerateStopsAtTheStopTokenAndPrintsIt) {
    Result r = run_myriad("--quiet generate " + kShipped + " --prompt-ids 3840,3843,17 "
                          "--max-tokens 4 --temperature 0 --ids");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string first_id = r.out.substr(0, r.out.find_first_of(",\n"));
    // The same weights, with the first generated token declared a stop token.
    TempDir dir;
    for (const char* f : {"config.json", "model.safetensors"})
        std::filesystem::create_symlink(kShipped + "/" + f, dir.file(f));
    dir.write("generation_config.json", "{\"eos_token_id\": [" + first_id + "]}");
    Result s = run_myriad("--quiet generate " + dir.path() + " --prompt-ids 3840,3843,17 "
                          "--max-tokens 4 --temperature 0 --ids");
    ASSERT_EQ(s.status, 0) << s.err;
    EXPECT_EQ(s.out, first_id + "\n");
}

TEST(Cli, GenerateFromTextEqualsGenerateFromItsTokens) {
    Result tok = run_myriad("tokenize " + kShipped + " \"Hello, world: 12 + 7\"");
    ASSERT_EQ(tok.status, 0) << tok.err;
    std::string ids = tok.out.substr(tok.out.find('[') + 1);
    ids = ids.substr(0, ids.find(']'));
    ASSERT_FALSE(ids.empty());
    const std::string flags = " --max-tokens 6 --temperature 0 --ids";
    Result a = run_myriad("-q generate " + kShipped + " --prompt \"Hello, world: 12 + 7\"" + flags);
    Result b = run_myriad("-q generate " + kShipped + " --prompt-ids " + ids + flags);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    Result chat = run_myriad("-q generate " + kShipped + " --chat hi --max-tokens 3 --temperature 0");
    EXPECT_EQ(chat.status, 0) << chat.err;
}

TEST(Cli, InspectReportsBytesPerRank) {
    Result r = run_myriad("inspect " + kShipped + " --tp 4");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("kimi_k2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tp 4"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("BF16"), std::string::npos) << r.out;
}

TEST(Cli, BadFlagsExitTwo) {
    for (const char* args : {"generate --prompt-ids 1,x,3", "generate --prompt-ids 1 --tp 3",
                             "generate --prompt-ids 999999", "generate --prompt-ids 1 --temperature -1",
                             "inspect --tp 0", "frobnicate"}) {
        Result r = run_myriad(std::string(args) + " " + (std::string(args) == "frobnicate" ? "" : kShipped));
        EXPECT_EQ(r.status, 2) << args << ": " << r.err;
        EXPECT_EQ(count_lines(r.err), 1) << args << ": " << r.err;
    }
}

// A broken copy of a valid random checkpoint: `mutate` edits the file bytes or folder.
class BadCheckpoint : public ::testing::Test {
protected:
    void SetUp() override { write_random_model(dir_.path(), small_config(), 3); }
    std::string weights() const { return dir_.file("model.safetensors"); }
    std::string bytes() const { return slurp(weights()); }
    void replace_weights(const std::string& content) { dir_.write("model.safetensors", content); }
    // Rewrites the JSON header (same length, padded with spaces).
    void edit_header(const std::function<void(std::string&)>& edit) {
        std::string b = bytes();
        uint64_t n = 0;
        std::memcpy(&n, b.data(), 8);
        std::string header = b.substr(8, n);
        edit(header);
        ASSERT_LE(header.size(), n) << "edited header grew";
        header.resize(n, ' ');
        replace_weights(b.substr(0, 8) + header + b.substr(8 + n));
    }
    void expect_bad(const std::vector<std::string>& must_mention) {
        for (const char* cmd : {"inspect ", "generate --prompt-ids 1,2 "}) {
            Result r = run_myriad(std::string(cmd) + dir_.path());
            EXPECT_EQ(r.status, 2) << cmd << r.err;
            EXPECT_EQ(count_lines(r.err), 1) << cmd << r.err;
            for (const auto& m : must_mention)
                EXPECT_NE(r.err.find(m), std::string::npos) << cmd << ": '" << m << "' not in " << r.err;
        }
    }
    TempDir dir_;
};

TEST_F(BadCheckpoint, EmptyFile) {
    replace_weights("");
    expect_bad({"model.safetensors"});
}

TEST_F(BadCheckpoint, Truncated) {
    replace_weights(bytes().substr(0, bytes().size() - 100));
    expect_bad({"model.safetensors"});
}

TEST_F(BadCheckpoint, HeaderLengthBeyondTheFile) {
    std::string b = bytes();
    uint64_t n = b.size() + 1000;
    std::memcpy(b.data(), &n, 8);
    replace_weights(b);
    expect_bad({"model.safetensors"});
}

TEST_F(BadCheckpoint, HeaderNotJson) {
    edit_header([](std::string& h) { h[0] = '['; h[1] = '{'; });
    expect_bad({"model.safetensors"});
}

TEST_F(BadCheckpoint, OffsetsOutOfRange) {
    edit_header([](std::string& h) {
        // The last tensor's end offset grows past the buffer.
        size_t p = h.rfind("\"data_offsets\":[");
        size_t comma = h.find(',', p);
        size_t close = h.find(']', comma);
        h.replace(comma + 1, close - comma - 1, std::string(close - comma - 1, '9'));
    });
    expect_bad({"model.safetensors", "lm_head.weight"});
}

TEST_F(BadCheckpoint, OverlappingOffsets) {
    edit_header([](std::string& h) {
        // lm_head's data starts where model.norm.weight's does.
        auto offsets = [&](const std::string& name) {
            size_t p = h.find("\"data_offsets\":[", h.find("\"" + name + "\""));
            return p + 16;
        };
        size_t a = offsets("model.norm.weight");
        std::string begin = h.substr(a, h.find(',', a) - a);
        size_t b = offsets("lm_head.weight");
        size_t comma = h.find(',', b);
        std::string old = h.substr(b, comma - b);
        std::string pad(old.size() > begin.size() ? old.size() - begin.size() : 0, ' ');
        h.replace(b, comma - b, begin + pad);
    });
    expect_bad({"model.safetensors"});
}

TEST_F(BadCheckpoint, MissingTensor) {
    edit_header([](std::string& h) {
        size_t p = h.find("\"model.norm.weight\"");
        h.replace(p, 19, "\"model.norm.wxyzt\"");
    });
    expect_bad({"model.norm.weight"});
}

TEST_F(BadCheckpoint, WrongShape) {
    auto cfg = small_config();
    cfg["hidden_size"] = 48;  // the tensors stay 64 wide
    dir_.write("config.json", cfg.dump());
    expect_bad({"model.safetensors", "model.embed_tokens.weight", "[128, 48]"});
}

TEST_F(BadCheckpoint, WrongDtype) {
    edit_header([](std::string& h) {
        size_t p = h.find("\"dtype\":\"BF16\"", h.find("\"model.norm.weight\""));
        h.replace(p, 14, "\"dtype\":\"I16\" ");
    });
    expect_bad({"model.safetensors", "model.norm.weight", "I16"});
}

TEST_F(BadCheckpoint, ConfigMissingAField) {
    auto cfg = small_config();
    cfg.erase("kv_lora_rank");
    dir_.write("config.json", cfg.dump());
    expect_bad({"config.json", "kv_lora_rank"});
}

}  // namespace
}  // namespace myriad::testing
