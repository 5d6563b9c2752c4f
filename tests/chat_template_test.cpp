// ChatTemplate (Hugging Face's environment) and `myriad chat-template`: where the template comes
// from, special tokens, named templates, the request fields, and errors naming the template,
// line and column with exit status 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "run_myriad.h"
#include "temp_dir.h"
#include "tokenizer/chat_template.h"

namespace myriad::testing {
namespace {

using json = nlohmann::ordered_json;

const std::string kData = std::string(MYRIAD_SOURCE_DIR) + "/tests/data";

json request(const char* text) {
    return json::parse(text);
}

std::string error_of(const ChatTemplate& t, const json& req) {
    try {
        t.render(req);
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), 2);
        return e.what();
    }
    return "";
}

TEST(ChatTemplate, RendersTheRequestFields) {
    ChatTemplate t = ChatTemplate::from_source(
        "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
        "{% if tools %}T{{ tools|tojson }}{% endif %}{% if add_generation_prompt %}<gen>{% endif %}"
        "{{ thinking }}",
        "t.jinja", json{{"bos_token", "<s>"}});
    EXPECT_EQ(t.render(request(R"({"messages": [{"role": "user", "content": "hi"}]})")),
              "<s><user>hi<gen>");
    EXPECT_EQ(t.render(request(R"({"messages": [{"role": "user", "content": null}],
        "add_generation_prompt": false, "tools": [{"z": 1, "a": 2.0}],
        "chat_template_kwargs": {"thinking": true}})")),
              "<s><user>NoneT[{\"z\": 1, \"a\": 2.0}]True");
}

TEST(ChatTemplate, NullContentStaysNullAndToolsIsNoneWhenAbsent) {
    ChatTemplate t = ChatTemplate::from_source(
        "{{ messages[0].content is none }}{{ messages[0].tool_calls is defined }}"
        "{{ tools is none }}",
        "t.jinja", json::object());
    EXPECT_EQ(t.render(request(R"({"messages": [{"role": "assistant", "content": null}]})")),
              "TrueFalseTrue");
}

TEST(ChatTemplate, LoadsFromTokenizerConfigAndPicksNamedTemplates) {
    TempDir dir;
    dir.write("tokenizer_config.json", R"({
        "bos_token": {"__type": "AddedToken", "content": "<B>", "lstrip": false},
        "eos_token": "<E>", "unk_token": null,
        "chat_template": [{"name": "default", "template": "D{{ bos_token }}{{ eos_token }}"},
                          {"name": "tool_use", "template": "T{{ tools|length }}"}]})");
    ChatTemplate t = ChatTemplate::load(dir.path());
    EXPECT_EQ(t.special_tokens(), (json{{"bos_token", "<B>"}, {"eos_token", "<E>"}}));
    EXPECT_EQ(t.render(request(R"({"messages": []})")), "D<B><E>");
    EXPECT_EQ(t.render(request(R"({"messages": [], "tools": [1, 2]})")), "T2");
    EXPECT_EQ(t.render(request(R"({"messages": [], "tools": null})")), "D<B><E>");
    // chat_template_kwargs override special tokens, as in transformers.
    EXPECT_EQ(t.render(request(R"({"messages": [], "chat_template_kwargs": {"bos_token": "x"}})")),
              "Dx<E>");
}

TEST(ChatTemplate, TemplateFileTakesPriorityOverTheConfig) {
    TempDir dir;
    dir.write("tokenizer_config.json", R"({"eos_token": "</s>", "chat_template": "config"})");
    dir.write("chat_template.jinja", "file {{ eos_token }}\n");
    EXPECT_EQ(ChatTemplate::load(dir.path()).render(request(R"({"messages": []})")), "file </s>");
    ChatTemplate over = ChatTemplate::load_with_source(dir.path(), "over {{ eos_token }}", "x");
    EXPECT_EQ(over.render(request(R"({"messages": []})")), "over </s>");
}

TEST(ChatTemplate, ShippedModelRendersKimiPrompt) {
    ChatTemplate t = ChatTemplate::load(std::string(MYRIAD_SOURCE_DIR) + "/models/myriad-tiny");
    EXPECT_EQ(t.render(request(R"({"messages": [{"role": "user", "content": "Hi"}]})")),
              "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot "
              "AI.<|im_end|><|im_user|>user<|im_middle|>Hi<|im_end|><|im_assistant|>assistant"
              "<|im_middle|>");
}

TEST(ChatTemplate, BadRequestsAndTemplateErrorsAreBadInput) {
    ChatTemplate t = ChatTemplate::from_source(
        "{% for m in messages %}\n  {{ raise_exception('bad role ' + m.role) if m.role == 'x' }}"
        "{% endfor %}",
        "my.jinja", json::object());
    EXPECT_EQ(error_of(t, request(R"({"messages": [{"role": "x", "content": ""}]})")),
              "chat template my.jinja: line 2, column 6: bad role x");
    EXPECT_EQ(error_of(t, request(R"({"nomessages": []})")), "request: field messages is missing");
    EXPECT_EQ(error_of(t, request(R"({"messages": [1]})")),
              "request: messages[0] must be an object");
    EXPECT_EQ(error_of(t, request(R"({"messages": [], "add_generation_prompt": "yes"})")),
              "request: field add_generation_prompt must be a boolean");
    EXPECT_EQ(error_of(t, request(R"({"messages": [], "chat_template_kwargs": {"messages": 1}})")),
              "request: chat_template_kwargs cannot set 'messages'; use the request field");
    ChatTemplate broken = ChatTemplate::from_source("{% if %}", "b.jinja", json::object());
    EXPECT_EQ(error_of(broken, request(R"({"messages": []})")),
              "chat template b.jinja: line 1, column 7: expected an expression, got end of "
              "statement block");
}

// ---- the command ----

TEST(ChatTemplateCommand, PrintsThePromptExactly) {
    Result r = run_myriad("chat-template " + kData + "/chat_templates/llama3 --request " + kData +
                          "/chat_requests/02_system_user.json");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out,
              "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a concise "
              "assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
              "2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(r.err, "");
}

TEST(ChatTemplateCommand, TemplateFlagAndThinkingKwarg) {
    Result r = run_myriad("chat-template " + kData + "/chat_templates/deepseek_v3 --request " +
                          kData + "/chat_requests/18_thinking_off.json --template " + kData +
                          "/chat_templates/deepseek-v3.1.jinja");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(
        r.out,
        "<｜begin▁of▁sentence｜>Be short.<｜User｜>Capital of France?<｜Assistant｜></think>");
}

TEST(ChatTemplateCommand, TemplateErrorExitsTwoNamingLineAndColumn) {
    TempDir tmp;
    std::string tpl = tmp.write("t.jinja", "ok\n{{ messages[0].content.nosuch() }}");
    std::string req = tmp.write("r.json", R"({"messages": [{"role": "user", "content": "x"}]})");
    Result r = run_myriad("chat-template " + kData + "/chat_templates/qwen3 --request " + req +
                          " --template " + tpl);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "myriad: error: chat template " + tpl +
                         ": line 2, column 23: 'str object' has no attribute 'nosuch'\n");
    Result bad = run_myriad("chat-template " + kData + "/chat_templates/qwen3 --request " +
                            tmp.write("bad.json", "{not json"));
    EXPECT_EQ(bad.status, 2);
}

}  // namespace
}  // namespace myriad::testing
