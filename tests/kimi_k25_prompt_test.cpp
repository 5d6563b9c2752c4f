// Whole Kimi-K2.5 prompts through `myriad chat-template`, as a user runs it: the four prompts
// P1-P4 of ../shared/docs/kimi-k25-tools.md §3.4 (rendered there from the model's template with
// its tokenizer's Python; extracted into tests/data/kimi_k25_tools/examples.json) byte for byte,
// with the K2.5 template given by --template and as the folder's own chat_template.jinja; the
// JSON fallback with one warning line; and a template that does not read tools_ts_str keeping
// plain JSON tools.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "run_myriad.h"
#include "temp_dir.h"

namespace myriad::testing {
namespace {

using J = nlohmann::ordered_json;

std::string data_path(const std::string& rel) {
    return std::string(MYRIAD_SOURCE_DIR) + "/tests/data/" + rel;
}

J prompts() {
    std::ifstream in(data_path("kimi_k25_tools/examples.json"));
    return J::parse(in)["prompts"];
}

// A tokenizer-only model folder: tokenizer_config.json, and the template when given.
void make_folder(const TempDir& dir, const std::string& chat_template = "") {
    dir.write("tokenizer_config.json", R"({"bos_token": "[BOS]", "eos_token": "[EOS]"})");
    if (!chat_template.empty()) dir.write("chat_template.jinja", chat_template);
}

std::string request_file(const TempDir& dir, const J& p) {
    J request = {{"messages", J::parse(p["messages"].get<std::string>())},
                 {"tools", J::parse(p["tools"].get<std::string>())}};
    if (!p["thinking"].is_null()) request["chat_template_kwargs"] = {{"thinking", p["thinking"]}};
    return dir.write("request.json", request.dump());
}

TEST(KimiK25Prompt, WholePromptsWithTheTemplateFlag) {
    const J ps = prompts();
    ASSERT_EQ(ps.size(), 4u);
    TempDir dir;
    make_folder(dir);
    for (const J& p : ps) {
        Result r = run_myriad("chat-template " + dir.path() + " --request " + request_file(dir, p) +
                              " --template " + data_path("chat_templates/kimi-k2.5.jinja"));
        ASSERT_EQ(r.status, 0) << p["id"] << ": " << r.err;
        EXPECT_EQ(r.out, p["expected"].get<std::string>()) << p["id"] << " (" << p["title"] << ")";
        EXPECT_EQ(r.err, "") << p["id"];
    }
}

TEST(KimiK25Prompt, WholePromptsWithTheFoldersTemplate) {
    TempDir dir;
    make_folder(dir, slurp(data_path("chat_templates/kimi-k2.5.jinja")));
    for (const J& p : prompts()) {
        Result r = run_myriad("chat-template " + dir.path() + " --request " + request_file(dir, p));
        ASSERT_EQ(r.status, 0) << p["id"] << ": " << r.err;
        EXPECT_EQ(r.out, p["expected"].get<std::string>()) << p["id"];
    }
}

TEST(KimiK25Prompt, UnsupportedSchemaFallsBackToSortedCompactJson) {
    TempDir dir;
    make_folder(dir);
    const std::string tools = R"([{"type": "function", "function": {"name": "pick",
        "description": "Pick one", "parameters": {"type": "object", "required": ["v"],
        "properties": {"v": {"oneOf": [{"const": "a"}, {"const": "b"}]}}}}}])";
    J request = {{"messages", J::array({{{"role", "user"}, {"content", "hi"}}})},
                 {"tools", J::parse(tools)}};
    Result r = run_myriad("chat-template " + dir.path() + " --request " +
                          dir.write("request.json", request.dump()) + " --template " +
                          data_path("chat_templates/kimi-k2.5.jinja"));
    ASSERT_EQ(r.status, 0) << r.err;
    // The fallback is json.dumps(sorted tools, separators=(",", ":"), ensure_ascii=False):
    // nlohmann::json keeps object keys sorted and dumps compactly, without escaping non-ASCII.
    const std::string json = nlohmann::json::parse(tools).dump();
    EXPECT_EQ(r.out, "<|im_system|>tool_declare<|im_middle|>" + json +
                         "<|im_end|><|im_user|>user<|im_middle|>hi<|im_end|>"
                         "<|im_assistant|>assistant<|im_middle|><think>");
    // One warning line, naming the construct.
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("warning: Failed to convert tools to TypeScript style: Invalid JSON "
                         "Schema object: {'oneOf': [{'const': 'a'}, {'const': 'b'}]}"),
              std::string::npos)
        << r.err;
}

TEST(KimiK25Prompt, OtherTemplatesKeepPlainJsonTools) {
    // Kimi-K2-Thinking's template does not read tools_ts_str: its tools stay as the request
    // wrote them (key order kept, `tojson` separators), and no `thinking` is added.
    TempDir dir;
    make_folder(dir);
    const J p = prompts()[0];
    Result r = run_myriad("chat-template " + dir.path() + " --request " + request_file(dir, p) +
                          " --template " + data_path("chat_templates/kimi-k2-thinking.jinja"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(
        r.out.starts_with("<|im_system|>tool_declare<|im_middle|>[{\"type\": \"function\", "
                          "\"function\": {\"name\": \"get_weather\""))
        << r.out;
    EXPECT_EQ(r.out.find("# Tools"), std::string::npos) << r.out;
}

TEST(KimiK25Prompt, ChatTemplateKwargsWin) {
    // An explicit tools_ts_str (or thinking) in chat_template_kwargs replaces the computed one.
    TempDir dir;
    make_folder(dir);
    J p = prompts()[0];
    J request = {{"messages", J::parse(p["messages"].get<std::string>())},
                 {"tools", J::parse(p["tools"].get<std::string>())},
                 {"chat_template_kwargs", {{"tools_ts_str", "MINE"}, {"thinking", false}}}};
    Result r = run_myriad("chat-template " + dir.path() + " --request " +
                          dir.write("request.json", request.dump()) + " --template " +
                          data_path("chat_templates/kimi-k2.5.jinja"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with("<|im_system|>tool_declare<|im_middle|>MINE<|im_end|>")) << r.out;
    EXPECT_TRUE(r.out.ends_with("<think></think>")) << r.out;
}

}  // namespace
}  // namespace myriad::testing
