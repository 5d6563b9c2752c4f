// myriad's tool-aware DeepSeek-V3 template (src/api/templates/deepseek_v3_tools.jinja, compiled
// into the binary) on the deepseek_v3 fixture tokenizer: tools are declared to the model with the
// call format the deepseek_v3 parser reads, earlier calls and results render in DeepSeek's
// format, and the rendered prompt encodes the markers as single special tokens.
#include <gtest/gtest.h>

#include "api/builtin_templates.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace myriad::testing {
namespace {

std::string fixture() {
    return std::string(MYRIAD_TOKENIZER_DIR) + "/deepseek_v3";  // unpacked from tests/data
}

nlohmann::ordered_json request() {
    return nlohmann::ordered_json::parse(R"({
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [
          {"id": "call_1", "type": "function",
           "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
      ],
      "tools": [{"type": "function", "function": {"name": "get_weather",
                 "parameters": {"type": "object"}}}],
      "add_generation_prompt": true})");
}

TEST(DeepseekToolsTemplate, DeclaresToolsAndRendersHistory) {
    ChatTemplate t = ChatTemplate::load_with_source(fixture(), api::deepseek_v3_tools_template(),
                                                    "deepseek_v3_tools.jinja");
    const std::string p = t.render(request());
    EXPECT_EQ(p.rfind("<｜begin▁of▁sentence｜>Be brief.\n\n## Tools", 0), 0u) << p;
    EXPECT_NE(p.find("{\"name\": \"get_weather\""), std::string::npos) << p;
    EXPECT_NE(p.find("<｜User｜>Weather in Paris?<｜Assistant｜><｜tool▁calls▁begin｜>"
                     "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
                     "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
                     "<｜end▁of▁sentence｜><｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>sunny"
                     "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"),
              std::string::npos)
        << p;
    // After tool results the model continues directly (no new assistant header).
    EXPECT_TRUE(p.ends_with("<｜tool▁outputs▁end｜>")) << p;

    auto tok = Tokenizer::load(fixture());
    auto ids = tok->encode(p, false);
    for (const char* marker :
         {"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"}) {
        auto id = tok->token_to_id(marker);
        ASSERT_TRUE(id.has_value()) << marker;
        EXPECT_NE(std::find(ids.begin(), ids.end(), *id), ids.end()) << marker;
    }
}

TEST(DeepseekToolsTemplate, NoToolsNoDeclaration) {
    ChatTemplate t = ChatTemplate::load_with_source(fixture(), api::deepseek_v3_tools_template(),
                                                    "deepseek_v3_tools.jinja");
    auto r = nlohmann::ordered_json::parse(
        R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true})");
    EXPECT_EQ(t.render(r), "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>");
}

}  // namespace
}  // namespace myriad::testing
