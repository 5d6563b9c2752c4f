// The myriad executable as a newcomer meets it: a mistyped command or flag names the nearest,
// --version, one message for a model that is not there, `plan` exit statuses, and config
// counts that would exhaust the machine refused naming the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_myriad.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {

const std::string kShipped = std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny";
const std::string kKimiConfig =
    std::string(MYRIAD_SOURCE_DIR) + "/tests/data/configs/kimi-k2.5-nvfp4";

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

int count(const std::string& text, const std::string& part) {
    int n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

TEST(CliFirstRun, UnknownCommandNamesTheNearest) {
    Result r = run_myriad("sevre");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "myriad: unknown command 'sevre'; did you mean 'serve'? (myriad --help "
              "lists the commands)\n");
    r = run_myriad("--quiet tokenise");
    EXPECT_EQ(r.status, 2);
    EXPECT_HAS(r.err, "did you mean 'tokenize'?");
    r = run_myriad("frobnicate");  // nothing near: no guess
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "myriad: unknown command 'frobnicate' (myriad --help lists the commands)\n");
}

TEST(CliFirstRun, MistypedFlagNamesTheNearestAndTheHelp) {
    Result r = run_myriad("serve --prot 8001");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "myriad: serve: unknown flag --prot; did you mean --port? (myriad serve "
              "--help lists its flags)\n");
    r = run_myriad("generate --prompt hi --max-token=3");
    EXPECT_EQ(r.status, 2);
    EXPECT_HAS(r.err, "generate: unknown flag --max-token; did you mean --max-tokens?");
    EXPECT_HAS(r.err, "myriad generate --help");
}

TEST(CliFirstRun, Version) {
    Result r = run_myriad("--version");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, std::string("myriad ") + MYRIAD_VERSION_STRING + "\n");
}

// Every command that reads a model says the same when it is not there.
TEST(CliFirstRun, OneMessageForAMissingModel) {
    TempDir home;
    const std::string env = "env HF_HOME=" + home.path() + " " + std::string(MYRIAD_BINARY);
    for (const char* cmd :
         {"generate /nonexistent/model --prompt hi", "inspect /nonexistent/model",
          "serve /nonexistent/model", "chat /nonexistent/model", "tokenize /nonexistent/model hi",
          "bench-model /nonexistent/model", "service install /nonexistent/model --dry-run"}) {
        Result r = run_myriad(cmd);
        EXPECT_EQ(r.status, 2) << cmd;
        EXPECT_EQ(r.err,
                  "myriad: error: model /nonexistent/model: no such file or folder; a model is a "
                  "folder holding config.json, the safetensors weights and the tokenizer files "
                  "(as on the Hugging Face hub), a .gguf file, or ORG/NAME already downloaded; "
                  "`myriad pull ORG/NAME` downloads one\n")
            << cmd;
    }
    Result r = run_myriad("inspect " + home.path());
    EXPECT_EQ(r.status, 2);
    EXPECT_HAS(r.err, "the folder has no config.json; a model is a folder holding config.json");
    // ORG/NAME that was never pulled says how to pull it.
    r = run_myriad("--version >/dev/null; " + env + " generate nobody/nothing --prompt hi");
    EXPECT_EQ(r.status, 2);
    EXPECT_HAS(r.err,
               "model nobody/nothing: no such folder here, and not in the Hugging Face "
               "cache");
    EXPECT_HAS(r.err, "`myriad pull nobody/nothing` downloads it");
}

TEST(CliFirstRun, PlanExitsNonZeroWhenNothingFitsAndHintsOnce) {
    Result r = run_myriad("plan " + kKimiConfig + " --gpus 1x24GB");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_HAS(r.out, "chosen       none: no layout fits");
    EXPECT_HAS(r.err, "no layout fits 1 x 24GB");
    r = run_myriad("plan " + kKimiConfig + " --gpus 8x141GB");
    EXPECT_EQ(r.status, 0) << r.err;
    // No GPUs given and none found: the hint once, exit 0 (nothing was checked).
    r = run_myriad("--version >/dev/null; MYRIAD_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 " +
                   std::string(MYRIAD_BINARY) + " plan " + kKimiConfig);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(count(r.out + r.err, "--gpus"), 1) << r.out << r.err;
}

// A config claiming a billion layers or experts is refused naming the field, before anything
// is allocated by it (it ended in bad_alloc after taking 5.8 GB).
TEST(CliFirstRun, HugeConfigCountsAreRefusedNamingTheField) {
    for (const char* field : {"num_hidden_layers", "n_routed_experts"}) {
        TempDir dir;
        std::filesystem::copy(kShipped, dir.path(), std::filesystem::copy_options::recursive);
        nlohmann::ordered_json j;
        std::ifstream(dir.file("config.json")) >> j;
        j[field] = 1'000'000'000;
        std::ofstream(dir.file("config.json")) << j.dump(2);
        Result r = run_myriad("inspect " + dir.path());
        EXPECT_EQ(r.status, 2) << field;
        EXPECT_HAS(r.err, std::string("field ") + field + " = 1000000000 is more than");
        // Within the ceilings, but more than the weights could hold.
        const int64_t n = std::string_view(field) == "num_hidden_layers" ? 1000 : 16000;
        j[field] = n;
        std::ofstream(dir.file("config.json")) << j.dump(2);
        r = run_myriad("inspect " + dir.path());
        EXPECT_EQ(r.status, 2) << field;
        EXPECT_HAS(r.err, fmt::format("field {} = {} needs at least", field, n));
    }
}

}  // namespace
}  // namespace myriad::testing
