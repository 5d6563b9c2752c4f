#include "api/prompt_renderer.h"

#include <optional>

#include "api/api_error.h"
#include "api/builtin_templates.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace myriad::api {

struct PromptRenderer::Impl {
    ChatTemplate base;
    std::optional<ChatTemplate> with_tools;  // used instead of `base` when tools are rendered
};

PromptRenderer::PromptRenderer(const std::string& dir, const std::string& model_type,
                               const std::string& override_text) {
    if (!override_text.empty()) {
        impl_.reset(new Impl{ChatTemplate::load_with_source(dir, override_text, "--chat-template"),
                             std::nullopt});
        return;
    }
    impl_.reset(new Impl{ChatTemplate::load(dir), std::nullopt});
    // DeepSeek-V3's own template does not show tools to the model: ours does.
    if (model_type == "deepseek_v3")
        impl_->with_tools = ChatTemplate::load_with_source(
            dir, deepseek_v3_tools_template(), "myriad's deepseek_v3_tools.jinja (built in)");
}

PromptRenderer::~PromptRenderer() = default;

std::string PromptRenderer::template_source() const {
    return impl_->base.source();
}

const nlohmann::ordered_json& PromptRenderer::special_tokens() const {
    return impl_->base.special_tokens();
}

std::string PromptRenderer::render(const ChatRequest& r) const {
    nlohmann::ordered_json request = {{"messages", r.messages},
                                      {"add_generation_prompt", r.add_generation_prompt},
                                      {"chat_template_kwargs", r.chat_template_kwargs}};
    const bool tools = r.tool_choice != ToolChoice::None && !r.tools.is_null();
    if (tools) request["tools"] = r.tools;
    const ChatTemplate& t = tools && impl_->with_tools ? *impl_->with_tools : impl_->base;
    try {
        return t.render(request);
    } catch (const Error& e) {
        fail(400, "messages", "the chat template failed on this request: {}", e.what());
    }
}

}  // namespace myriad::api
