// The myriad executable as users run it: generate and inspect on the shipped model, and bad
// checkpoints that must end with one line naming the file and the tensor or field, exit status 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

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
        Result r = run_myriad(
            "--quiet generate " + kShipped +
            " --prompt-ids 3840,3843,17,5,9 --max-tokens 12 --temperature 0 --ids --tp " +
            std::to_string(tp));
        ASSERT_EQ(r.status, 0) << r.err;
        if (tp == 1) first = r.out;
        EXPECT_EQ(r.out, first) << "tp " << tp;
    }
    EXPECT_EQ(std::count(first.begin(), first.end(), ','), 11) << first;
}

// --naive-context-tokens reaches the model: prefill attention over contexts longer than it goes in
// pieces (here 5 tokens a piece over chunks of 8 prompt tokens) and gives the same tokens; 0 is
// refused naming the flag.
TEST(Cli, NaiveContextTokensSplitsPrefillAttentionWithTheSameTokens) {
    std::string ids = "3840,3843,17";
    for (int i = 0; i < 37; ++i) ids += "," + std::to_string(100 + 7 * i);
    const std::string cmd = "--quiet generate " + kShipped + " --prompt-ids " + ids +
                            " --max-tokens 8 --temperature 0 --ids --max-num-batched-tokens 8";
    Result whole = run_myriad(cmd);
    ASSERT_EQ(whole.status, 0) << whole.err;
    Result pieces = run_myriad(cmd + " --naive-context-tokens 5");
    ASSERT_EQ(pieces.status, 0) << pieces.err;
    EXPECT_EQ(pieces.out, whole.out);
    EXPECT_EQ(std::count(whole.out.begin(), whole.out.end(), ','), 7) << whole.out;
    Result bad = run_myriad(cmd + " --naive-context-tokens 0");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--naive-context-tokens"), std::string::npos) << bad.err;
}

TEST(Cli, GenerateStopsAtTheStopTokenAndPrintsIt) {
    Result r = run_myriad("--quiet generate " + kShipped +
                          " --prompt-ids 3840,3843,17 "
                          "--max-tokens 4 --temperature 0 --ids");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string first_id = r.out.substr(0, r.out.find_first_of(",\n"));
    // The same weights, with the first generated token declared a stop token.
    TempDir dir;
    for (const char* f : {"config.json", "model.safetensors"})
        std::filesystem::create_symlink(kShipped + "/" + f, dir.file(f));
    dir.write("generation_config.json", "{\"eos_token_id\": [" + first_id + "]}");
    Result s = run_myriad("--quiet generate " + dir.path() +
                          " --prompt-ids 3840,3843,17 "
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
    Result chat =
        run_myriad("-q generate " + kShipped + " --chat hi --max-tokens 3 --temperature 0");
    EXPECT_EQ(chat.status, 0) << chat.err;
}

TEST(Cli, InspectReportsBytesPerRank) {
    Result r = run_myriad("inspect " + kShipped + " --tp 4");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("kimi_k2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tp 4"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("BF16"), std::string::npos) << r.out;
}

std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The tensor names of a safetensors file, read from its JSON header (not with myriad's reader).
std::vector<std::string> safetensors_names(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    in.read(header.data(), static_cast<std::streamsize>(n));
    const nlohmann::json j = nlohmann::json::parse(header);
    std::vector<std::string> names;
    for (auto it = j.begin(); it != j.end(); ++it)
        if (it.key() != "__metadata__") names.push_back(it.key());
    return names;
}

TEST(Cli, MultimodalCheckpointSaysOnceWhatItSkips) {
    const std::string dir = std::string(MYRIAD_GOLDENS_ROOT) + "/goldens/kimi_k25";
    int64_t vision = 0, projector = 0;
    for (const auto& n : safetensors_names(dir + "/model.safetensors")) {
        vision += n.starts_with("vision_tower.");
        projector += n.starts_with("mm_projector.");
    }
    ASSERT_GT(vision, 0);
    ASSERT_GT(projector, 0);
    for (const std::string cmd : {"generate --prompt-ids 1,2,3 --max-tokens 2 --tp 1",
                                  "generate --prompt-ids 1,2,3 --max-tokens 2 --tp 2",
                                  "inspect --tp 1", "inspect --tp 2"}) {
        Result r = run_myriad(cmd.substr(0, cmd.find(' ')) + " " + dir + cmd.substr(cmd.find(' ')));
        ASSERT_EQ(r.status, 0) << cmd << ": " << r.err;
        std::vector<std::string> said;
        for (const auto& line : split_lines(r.err))
            if (line.find("skipping") != std::string::npos) said.push_back(line);
        ASSERT_EQ(said.size(), 1u) << cmd << ": " << r.err;
        for (const std::string& part :
             {"skipping " + std::to_string(vision + projector) + " tensors",
              std::to_string(vision) + " vision_tower.",
              std::to_string(projector) + " mm_projector."})
            EXPECT_NE(said[0].find(part), std::string::npos)
                << cmd << ": '" << part << "' not in " << said[0];
        EXPECT_EQ(said[0].find("multi-token"), std::string::npos)
            << "nothing of the kind was skipped";
    }
}

const std::string kPrompt = " --prompt-ids 3840,3843,17,5,9 ";

TEST(Cli, GenerateNSeedsAndTruncationFlags) {
    const std::string base =
        "--quiet generate " + kShipped + kPrompt + "--max-tokens 10 --ignore-eos --ids ";
    Result a = run_myriad(base + "--temperature 1 -n 3 --seed 5");
    ASSERT_EQ(a.status, 0) << a.err;
    auto lines = split_lines(a.out);
    ASSERT_EQ(lines.size(), 3u) << a.out;
    for (const auto& l : lines) EXPECT_EQ(std::count(l.begin(), l.end(), ','), 9) << l;
    EXPECT_EQ(run_myriad(base + "--temperature 1 -n 3 --seed 5").out, a.out) << "same seed";
    // Sequence i of -n uses seed + i, whatever shares its batch.
    EXPECT_EQ(run_myriad(base + "--temperature 1 --seed 7").out, lines[2] + "\n");
    EXPECT_EQ(run_myriad(base + "--temperature 1 --seed 6").out, lines[1] + "\n");
    EXPECT_FALSE(lines[0] == lines[1] && lines[1] == lines[2])
        << "three seeds, one output: " << a.out;
    // Top-k 1 and a tiny top-p leave only the best token: sampling at temperature 1 is greedy.
    Result greedy = run_myriad(base + "--temperature 0");
    ASSERT_EQ(greedy.status, 0) << greedy.err;
    std::string three_greedy = greedy.out + greedy.out + greedy.out;
    EXPECT_EQ(run_myriad(base + "--temperature 1 -n 3 --seed 5 --top-k 1").out, three_greedy);
    EXPECT_EQ(run_myriad(base + "--temperature 1 -n 3 --seed 5 --top-p 0.000001").out,
              three_greedy);
    EXPECT_NE(a.out, three_greedy) << "temperature 1 should differ from greedy somewhere";
}

TEST(Cli, GenerateConcurrencyCompletesEveryRequest) {
    // 5 requests of 40 random tokens whose first 32 (two blocks of 16) are shared, 2 at a time, 4
    // tokens each.
    Result r = run_myriad("--quiet generate " + kShipped +
                          " --concurrency 2 --requests 5 --input-len 40 --shared-prefix 32 "
                          "--max-tokens 4 --temperature 0");
    ASSERT_EQ(r.status, 0) << r.err;
    std::smatch m;
    const std::regex line(R"(requests (\d+), concurrency (\d+): ([0-9.]+) s; prompt ([0-9.]+) )"
                          R"(tok/s \((\d+) cached of (\d+)\); generated ([0-9.]+) tok/s)");
    ASSERT_TRUE(std::regex_search(r.out, m, line)) << r.out;
    EXPECT_EQ(m[1], "5");
    EXPECT_EQ(m[2], "2");
    EXPECT_EQ(std::stoll(m[6]), 5 * 40);
    // Requests 3 to 5 start after one has finished, so the two shared blocks are cached for them;
    // the second may or may not have started before the first's blocks were registered.
    const int64_t cached = std::stoll(m[5]);
    EXPECT_TRUE(cached == 3 * 32 || cached == 4 * 32) << cached;
    // generated tok/s × seconds = 5 × 4 tokens, within the printed precision.
    const double s = std::stod(m[3]), rate = std::stod(m[7]);
    EXPECT_NEAR(rate * s, 20.0, 0.0005 * rate + 0.05 * s + 1e-6) << r.out;
}

TEST(Cli, BenchModelPrintsOneRowPerBatchSize) {
    const std::string args = "--quiet bench-model " + kShipped +
                             " --batch 1,3 --prompt-len 8 --decode-steps 2 --threads 2";
    Result table = run_myriad(args);
    ASSERT_EQ(table.status, 0) << table.err;
    std::vector<std::string> rows;
    bool header = false;
    for (const auto& l : split_lines(table.out)) {
        if (l.starts_with("batch "))
            header = true;
        else if (header && !l.empty() && std::isdigit(static_cast<unsigned char>(l[0])))
            rows.push_back(l);
    }
    ASSERT_TRUE(header) << table.out;
    ASSERT_EQ(rows.size(), 2u) << table.out;
    EXPECT_TRUE(rows[0].starts_with("1 ")) << rows[0];
    EXPECT_TRUE(rows[1].starts_with("3 ")) << rows[1];

    Result js = run_myriad(args + " --json");
    ASSERT_EQ(js.status, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    ASSERT_EQ(j["results"].size(), 2u);
    EXPECT_EQ(j["tokens_chosen_on"], "host");  // the CPU backend does not sample itself
    for (size_t i = 0; i < 2; ++i) {
        const auto& row = j["results"][i];
        const double batch = i == 0 ? 1 : 3;
        EXPECT_EQ(row["batch"].get<double>(), batch);
        EXPECT_EQ(row["prompt_len"].get<int>(), 8);
        // One decode step makes one token per sequence.
        EXPECT_NEAR(row["decode_tok_s"].get<double>() * row["decode_step_ms"].get<double>() / 1000,
                    batch, 1e-3 * batch);
        EXPECT_NEAR(row["read_bytes_per_token"].get<double>() * batch,
                    row["read_bytes_per_step"].get<double>(),
                    1e-6 * row["read_bytes_per_step"].get<double>());
    }
}

// --json-schema: each batch decoded again with every row masked by its matcher (a token the
// mask forbids stops the run), the cost beside the plain step; the flag's misuses are refused.
TEST(Cli, BenchModelTimesJsonSchemaConstrainedSteps) {
    const std::string schema = std::string(MYRIAD_SOURCE_DIR) + "/bench/data/edit_tool_schema.json";
    const std::string args = "--quiet bench-model " + kShipped +
                             " --batch 1,2 --prompt-len 8 --decode-steps 24 --threads 2";
    Result js = run_myriad(args + " --json-schema " + schema + " --json");
    ASSERT_EQ(js.status, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    EXPECT_GT(j["json_schema"]["compile_ms"].get<double>(), 0.0);
    ASSERT_EQ(j["results"].size(), 2u);
    for (const auto& row : j["results"]) {
        const auto& c = row["json_schema"];
        ASSERT_TRUE(c.is_object()) << row.dump();
        EXPECT_NEAR(c["decode_tok_s"].get<double>() * c["decode_step_ms"].get<double>() / 1000,
                    row["batch"].get<double>(), 1e-3 * row["batch"].get<double>());
        EXPECT_GT(c["host_ms_per_step"].get<double>(), 0.0);
        EXPECT_GT(c["grammar_states"].get<int64_t>(), 1);  // the walk went past the start
    }
    Result plain = run_myriad(args + " --json");
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_FALSE(nlohmann::json::parse(plain.out)["results"][0].contains("json_schema"));

    const Result lone = run_myriad(args + " --tokenizer " + kShipped);
    EXPECT_NE(lone.status, 0);
    EXPECT_NE(lone.err.find("--tokenizer applies to --json-schema"), std::string::npos) << lone.err;
    const Result random =
        run_myriad("--quiet bench-model --random moonlight --json-schema " + schema);
    EXPECT_NE(random.status, 0);
    EXPECT_NE(random.err.find("needs --tokenizer"), std::string::npos) << random.err;
    TempDir d;
    d.write("bad.json", R"({"type": "object", "properties": {"a": {"type": "frobnicate"}}})");
    const Result bad = run_myriad(args + " --json-schema " + d.file("bad.json"));
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.err.find(d.file("bad.json")), std::string::npos) << bad.err;
}

// A folder with the shipped weights (linked) and the given generation_config.json.
struct ModelCopy {
    explicit ModelCopy(const std::string& generation_config) {
        for (const char* f : {"config.json", "model.safetensors"})
            std::filesystem::create_symlink(kShipped + "/" + f, dir.file(f));
        dir.write("generation_config.json", generation_config);
    }
    TempDir dir;
};

TEST(Cli, GenerationConfigGivesTheDefaultSampling) {
    const std::string flags = kPrompt + "--max-tokens 12 --ignore-eos --ids --seed ";
    Result greedy = run_myriad("--quiet generate " + kShipped + flags + "1 --temperature 0");
    ASSERT_EQ(greedy.status, 0) << greedy.err;
    ModelCopy cold("{\"eos_token_id\": [3841], \"temperature\": 0}");
    ModelCopy narrow("{\"eos_token_id\": [3841], \"temperature\": 1.0, \"top_p\": 0.000001}");
    ModelCopy hot("{\"eos_token_id\": [3841], \"temperature\": 1.0}");
    int hot_differs = 0, flag_differs = 0;
    for (int seed = 1; seed <= 3; ++seed) {
        const std::string f = flags + std::to_string(seed);
        EXPECT_EQ(run_myriad("--quiet generate " + cold.dir.path() + f).out, greedy.out) << seed;
        EXPECT_EQ(run_myriad("--quiet generate " + narrow.dir.path() + f).out, greedy.out) << seed;
        hot_differs += run_myriad("--quiet generate " + hot.dir.path() + f).out != greedy.out;
        // A flag beats the file.
        flag_differs +=
            run_myriad("--quiet generate " + cold.dir.path() + f + " --temperature 1").out !=
            greedy.out;
    }
    EXPECT_GT(hot_differs, 0) << "temperature 1 from the file never sampled away from greedy";
    EXPECT_GT(flag_differs, 0) << "--temperature 1 did not override the file's 0";
}

TEST(Cli, TokenizerConfigEosIsAStopTokenAndIgnoreEosGoesPastIt) {
    const std::string flags = kPrompt + "--max-tokens 4 --temperature 0 --ids";
    Result full = run_myriad("--quiet generate " + kShipped + flags + " --ignore-eos");
    ASSERT_EQ(full.status, 0) << full.err;
    ASSERT_EQ(std::count(full.out.begin(), full.out.end(), ','), 3) << full.out;
    const std::string first = full.out.substr(0, full.out.find(','));
    ASSERT_NE(first, "3841");
    // generation_config.json does not list the first greedy token; tokenizer_config.json's
    // eos_token names it (as a string, then as an AddedToken object).
    for (const std::string eos :
         {"\"<|stop_here|>\"", "{\"content\": \"<|stop_here|>\", \"special\": true}"}) {
        ModelCopy m("{\"eos_token_id\": [3841]}");
        Result before = run_myriad("--quiet generate " + m.dir.path() + flags);
        EXPECT_EQ(before.out, full.out) << "without tokenizer_config.json";
        m.dir.write("tokenizer_config.json",
                    "{\"eos_token\": " + eos +
                        ", \"added_tokens_decoder\": {\"3841\": {\"content\": "
                        "\"[EOS]\"}, \"" +
                        first + "\": {\"content\": \"<|stop_here|>\", \"special\": true}}}");
        Result stopped = run_myriad("--quiet generate " + m.dir.path() + flags);
        ASSERT_EQ(stopped.status, 0) << stopped.err;
        EXPECT_EQ(stopped.out, first + "\n") << eos;
        Result past = run_myriad("--quiet generate " + m.dir.path() + flags + " --ignore-eos");
        EXPECT_EQ(past.out, full.out) << eos;
    }
}

TEST(Cli, BadFlagsExitTwo) {
    for (const char* args :
         {"generate --prompt-ids 1,x,3", "generate --prompt-ids 1 --tp 3",
          "generate --prompt-ids 999999", "generate --prompt-ids 1 --temperature -1",
          "inspect --tp 0", "frobnicate"}) {
        Result r = run_myriad(std::string(args) + " " +
                              (std::string(args) == "frobnicate" ? "" : kShipped));
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
                EXPECT_NE(r.err.find(m), std::string::npos)
                    << cmd << ": '" << m << "' not in " << r.err;
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
    edit_header([](std::string& h) {
        h[0] = '[';
        h[1] = '{';
    });
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
