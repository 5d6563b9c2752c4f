// PromptRenderer: a chat request to prompt text through the model's chat template (or
// --chat-template's, or for DeepSeek-V3 with tools our tool-aware one), with the tokenizer's
// special tokens and the request's chat_template_kwargs. Tools are rendered unless
// tool_choice is none.
#pragma once

#include <memory>
#include <string>

#include "api/openai_request.h"

namespace myriad::api {

class PromptRenderer {
  public:
    // `dir`: the model folder (tokenizer_config.json, chat_template.jinja); `override_text`:
    // --chat-template's file contents, or empty; `model_type`: config.json's.
    PromptRenderer(const std::string& dir, const std::string& model_type,
                   const std::string& override_text);
    ~PromptRenderer();
    // Renders; a template error is an ApiError 400 naming 'messages'.
    std::string render(const ChatRequest& request) const;
    // The chat template's source (the one for requests without tools) and its special tokens
    // (bos_token, eos_token, ...: name -> text), for GET /tokenizer_info.
    std::string template_source() const;
    const nlohmann::ordered_json& special_tokens() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace myriad::api
