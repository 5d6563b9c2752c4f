#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <regex>
#include <set>

#include "output_parser_cases.h"
#include "output_parser_harness.h"
#include "util/error.h"

namespace myriad::api::testing {
namespace {

bool is_generated_id(const std::string& id) {
    static const std::regex re("chatcmpl-tool-[0-9a-f]{32}");
    return std::regex_match(id, re);
}

class OutputParserCase : public ::testing::TestWithParam<ParserCase> {};

TEST_P(OutputParserCase, WholeTextGivesTheExpectedResult) {
    const ParserCase& c = GetParam();
    StreamRun run = run_chunks(c.options, c.text, {});
    const ParsedOutput& r = run.result;
    EXPECT_EQ(show(r.reasoning), show(c.reasoning));
    EXPECT_EQ(show(r.content), show(c.content));
    ASSERT_EQ(r.tool_calls.size(), c.calls.size());
    std::set<std::string> ids;
    for (size_t i = 0; i < c.calls.size(); ++i) {
        const ToolCall& got = r.tool_calls[i];
        const ExpectedCall& want = c.calls[i];
        if (want.id.empty())
            EXPECT_TRUE(is_generated_id(got.id)) << got.id;
        else
            EXPECT_EQ(got.id, want.id);
        EXPECT_EQ(got.name, want.name) << "call " << i;
        EXPECT_EQ(got.arguments, want.arguments) << "call " << i;
        EXPECT_EQ(got.complete, want.complete) << "call " << i;
        ids.insert(got.id);
    }
    EXPECT_EQ(ids.size(), r.tool_calls.size()) << "tool-call ids repeat";
    EXPECT_EQ(check_deltas(run), "");

    // The non-streaming entry point is the same code path.
    ParserOptions o = c.options;
    o.tool_call_ids = seeded_tool_call_ids(7);
    EXPECT_EQ(compare(r, parse_output(o, c.text)), "");
}

// Every cut of the text: each single byte position, one byte at a time, every pair of positions
// (outputs up to 450 bytes; a fixed sample of pairs otherwise), and random chunkings from a fixed
// seed.
TEST_P(OutputParserCase, EverySplitGivesTheSameResult) {
    const ParserCase& c = GetParam();
    const std::string& text = c.text;
    const size_t n = text.size();
    const ParsedOutput whole = run_chunks(c.options, text, {}).result;
    size_t checked = 0;
    auto check = [&](const std::vector<size_t>& cuts) {
        ++checked;
        std::string e = check_split(c.options, text, cuts, whole);
        if (!e.empty()) ADD_FAILURE() << e;
        return e.empty();
    };
    for (size_t cut = 1; cut < n; ++cut)
        if (!check({cut})) return;
    std::vector<size_t> bytes;
    for (size_t cut = 1; cut < n; ++cut) bytes.push_back(cut);
    if (!check(bytes)) return;
    SplitRng rng{0x5eed};
    if (n <= 450) {
        for (size_t a = 1; a < n; ++a)
            for (size_t b = a + 1; b < n; ++b)
                if (!check({a, b})) return;
    } else {
        for (int i = 0; i < 3000; ++i) {
            size_t a = 1 + rng.next() % (n - 1), b = 1 + rng.next() % (n - 1);
            if (!check({std::min(a, b), std::max(a, b)})) return;
        }
    }
    for (size_t max_chunk : {2, 3, 5, 8, 13, 32})
        for (int i = 0; i < 50; ++i)
            if (!check(random_cuts(rng, n, max_chunk))) return;
    std::cout << "[ splits   ] " << c.name << ": " << checked << " chunkings of " << n
              << " bytes\n";
}

INSTANTIATE_TEST_SUITE_P(Outputs, OutputParserCase, ::testing::ValuesIn(parser_cases()),
                         [](const ::testing::TestParamInfo<ParserCase>& info) {
                             return info.param.name;
                         });

std::unique_ptr<OutputParser> seeded_parser(ParserOptions o) {
    o.tool_call_ids = seeded_tool_call_ids(1);
    return make_output_parser(o);
}

TEST(OutputParser, StreamsTheCallHeaderThenArgumentFragments) {
    auto p = seeded_parser(kimi());
    EXPECT_EQ(p->feed("Sure.").content, "Sure.");
    EXPECT_TRUE(p->feed("<|tool_calls_section_begin|>").empty());
    EXPECT_TRUE(p->feed("<|tool_call_begin|>").empty());
    EXPECT_TRUE(p->feed("functions.mcp.fs.read:0").empty());
    OutputDelta header = p->feed("<|tool_call_argument_begin|>");
    ASSERT_EQ(header.tool_calls.size(), 1u);
    EXPECT_EQ(header.tool_calls[0].index, 0);
    EXPECT_EQ(header.tool_calls[0].id, "functions.mcp.fs.read:0");
    EXPECT_EQ(header.tool_calls[0].type, "function");
    EXPECT_EQ(header.tool_calls[0].name, "mcp.fs.read");
    EXPECT_EQ(header.tool_calls[0].arguments, "");
    for (std::string piece : {"{\"path\":", " \"a", ".txt\"", "}"}) {
        OutputDelta d = p->feed(piece);
        ASSERT_EQ(d.tool_calls.size(), 1u) << piece;
        EXPECT_FALSE(d.tool_calls[0].id || d.tool_calls[0].name || d.tool_calls[0].type);
        EXPECT_EQ(d.tool_calls[0].arguments, piece);
    }
    EXPECT_FALSE(p->result().tool_calls[0].complete);
    EXPECT_TRUE(p->feed("<|tool_call_end|>").empty());
    EXPECT_TRUE(p->result().tool_calls[0].complete);
    EXPECT_TRUE(p->feed("<|tool_calls_section_end|>").empty());
    EXPECT_TRUE(p->finish().empty());
    EXPECT_EQ(p->result().tool_calls[0].arguments, "{\"path\": \"a.txt\"}");
}

TEST(OutputParser, HoldsBackOnlyAPossibleMarkerOrCharacter) {
    auto p = seeded_parser(kimi());
    EXPECT_EQ(p->feed("Hello").content, "Hello");
    EXPECT_EQ(p->feed(" <|tool").content, " ");
    EXPECT_EQ(p->feed("box|>").content, "<|toolbox|>");
    EXPECT_EQ(p->feed("caf\xc3").content, "caf");
    EXPECT_EQ(p->feed("\xa9 <").content, "\xc3\xa9 ");
    EXPECT_EQ(p->finish().content, "<");
    EXPECT_EQ(p->result().content, "Hello <|toolbox|>café <");
}

TEST(OutputParser, ReasoningDeltasStreamAndTheTagIsSwallowed) {
    auto p = seeded_parser(reasoning_only("deepseek_r1", false));
    EXPECT_FALSE(p->in_reasoning());
    EXPECT_TRUE(p->feed("<think>").empty());
    EXPECT_TRUE(p->in_reasoning());
    EXPECT_EQ(p->result().reasoning, "");
    EXPECT_EQ(p->feed("Let me").reasoning, "Let me");
    OutputDelta d = p->feed(" see.</think>It is 4.");
    EXPECT_EQ(d.reasoning, " see.");
    EXPECT_EQ(d.content, "It is 4.");
    EXPECT_FALSE(p->in_reasoning());
    p->finish();
    EXPECT_EQ(p->result().reasoning, "Let me see.");
    EXPECT_EQ(p->result().content, "It is 4.");
}

TEST(OutputParser, GeneratedIdsAreUniqueAndSeedable) {
    const std::string text =
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>a<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
        "<｜tool▁call▁begin｜>b<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    ParserOptions o = deepseek("deepseek_v31");
    ParsedOutput random1 = parse_output(o, text), random2 = parse_output(o, text);
    ASSERT_EQ(random1.tool_calls.size(), 2u);
    std::set<std::string> ids;
    for (const ParsedOutput* r : {&random1, &random2})
        for (const ToolCall& c : r->tool_calls) {
            EXPECT_TRUE(is_generated_id(c.id)) << c.id;
            ids.insert(c.id);
        }
    EXPECT_EQ(ids.size(), 4u) << "random ids repeat across calls or requests";
    o.tool_call_ids = seeded_tool_call_ids(42);
    ParsedOutput s1 = parse_output(o, text);
    o.tool_call_ids = seeded_tool_call_ids(42);
    ParsedOutput s2 = parse_output(o, text);
    EXPECT_EQ(s1.tool_calls[0].id, s2.tool_calls[0].id);
    EXPECT_EQ(s1.tool_calls[1].id, s2.tool_calls[1].id);
    EXPECT_NE(s1.tool_calls[0].id, s1.tool_calls[1].id);
    int n = 0;
    o.tool_call_ids = [&n] { return "call-" + std::to_string(n++); };
    EXPECT_EQ(parse_output(o, text).tool_calls[1].id, "call-1");
}

TEST(OutputParser, UnknownParserNamesAreBadInput) {
    ParserOptions o;
    o.tool_parser = "hermes";
    try {
        make_output_parser(o);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(std::string(e.what()).find("'hermes'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("deepseek_v31"), std::string::npos) << e.what();
    }
    EXPECT_THROW(check_reasoning_parser_name("qwen3", "--reasoning-parser"), Error);
    EXPECT_NO_THROW(check_reasoning_parser_name("", "--reasoning-parser"));
}

TEST(OutputParser, FinishEndsTheOutput) {
    auto p = seeded_parser(kimi());
    p->feed("a");
    p->finish();
    EXPECT_TRUE(p->finish().empty());
    EXPECT_THROW(p->feed("b"), Error);
}

TEST(OutputParser, DefaultsFollowTheModelFamily) {
    ParserOptions k = default_parser_options("kimi_k25", true, true);
    EXPECT_EQ(k.tool_parser, "kimi_k2");
    EXPECT_EQ(k.reasoning_parser, "kimi_k2");
    EXPECT_TRUE(k.prompt_ends_in_think);
    EXPECT_TRUE(k.tools_enabled);
    EXPECT_EQ(default_parser_options("kimi_k2", false, false).reasoning_parser, "kimi_k2");
    ParserOptions v3 = default_parser_options("deepseek_v3", false, true);
    EXPECT_EQ(v3.tool_parser, "deepseek_v3");
    EXPECT_EQ(v3.reasoning_parser, "");
    EXPECT_EQ(default_parser_options("deepseek_v3", true, true).reasoning_parser, "deepseek_r1");
    EXPECT_EQ(default_parser_options("llama", true, true).tool_parser, "");
    // DeepSeek-V3 without thinking: a literal <think> in the answer stays text.
    EXPECT_EQ(parse_output(v3, "Use <think> tags.").content, "Use <think> tags.");
}

TEST(OutputParser, PromptEndsInThink) {
    EXPECT_TRUE(prompt_ends_in_think("<｜User｜>hi<｜Assistant｜><think>\n"));
    EXPECT_TRUE(prompt_ends_in_think("<|im_assistant|>assistant<|im_middle|><think>"));
    EXPECT_FALSE(prompt_ends_in_think("<|im_assistant|>assistant<|im_middle|><think></think>"));
    EXPECT_FALSE(prompt_ends_in_think("<｜User｜>hi<｜Assistant｜></think>"));
    EXPECT_FALSE(prompt_ends_in_think("<|im_assistant|>assistant<|im_middle|>"));
}

TEST(OutputParser, MarkersTheServerMustKeep) {
    std::vector<std::string> m = parser_markers(kimi());
    for (const char* want : {"<think>", "</think>", "<|tool_calls_section_begin|>",
                             "<|tool_call_section_begin|>", "<|tool_call_argument_begin|>"})
        EXPECT_NE(std::find(m.begin(), m.end(), want), m.end()) << want;
    EXPECT_TRUE(parser_markers(kimi(false, false)).size() == 2);
    EXPECT_TRUE(parser_markers(ParserOptions{}).empty());
}

// The prefix the server forces for tool_choice required/named, continued by the model, parses
// to a call of that function.
TEST(OutputParser, ForcedPrefixesParseAsCalls) {
    struct Forced {
        const char* parser;
        std::string continuation, id;
    };
    for (const Forced& f : std::vector<Forced>{
             {"kimi_k2", "{\"q\": 1}<|tool_call_end|><|tool_calls_section_end|>",
              "functions.web.search:3"},
             {"deepseek_v3", "{\"q\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", ""},
             {"deepseek_v31", "{\"q\": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", ""}}) {
        ParserOptions o = deepseek(f.parser);
        std::string text = forced_tool_call_prefix(f.parser, "web.search", 3) + f.continuation;
        ParsedOutput r = parse_output(o, text);
        ASSERT_EQ(r.tool_calls.size(), 1u) << f.parser;
        EXPECT_EQ(r.tool_calls[0].name, "web.search") << f.parser;
        EXPECT_EQ(r.tool_calls[0].arguments, "{\"q\": 1}") << f.parser;
        if (!f.id.empty()) {
            EXPECT_EQ(r.tool_calls[0].id, f.id);
        }
        EXPECT_FALSE(r.content) << f.parser;
        // tool_choice required forces only the section opening; the named prefix extends it.
        std::string section = forced_tool_call_prefix(f.parser, "", 0);
        EXPECT_TRUE(text.starts_with(section)) << f.parser;
        EXPECT_EQ(parse_output(o, section).tool_calls.size(), 0u);
        EXPECT_FALSE(parse_output(o, section).content) << f.parser;
    }
}

// Inside open reasoning the server forces </think> before the tool-call prefix.
TEST(OutputParser, ForcedCallAfterClosingReasoning) {
    auto p = seeded_parser(kimi(/*think=*/true));
    EXPECT_TRUE(p->in_reasoning());
    p->feed("</think>" + forced_tool_call_prefix("kimi_k2", "get_weather", 0));
    EXPECT_FALSE(p->in_reasoning());
    p->feed("{\"city\": \"Oslo\"}<|tool_call_end|><|tool_calls_section_end|>");
    p->finish();
    EXPECT_EQ(p->result().reasoning, "");
    EXPECT_FALSE(p->result().content);
    ASSERT_EQ(p->result().tool_calls.size(), 1u);
    EXPECT_EQ(p->result().tool_calls[0].id, "functions.get_weather:0");
    EXPECT_EQ(p->result().tool_calls[0].arguments, "{\"city\": \"Oslo\"}");
}

}  // namespace
}  // namespace myriad::api::testing
