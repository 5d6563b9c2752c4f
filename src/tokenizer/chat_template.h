// A model's chat template in Hugging Face's environment (reference.md §4.5): the template
// source from the tokenizer folder, its special tokens as variables, and the rendering of an
// OpenAI chat request (messages, tools, add_generation_prompt, chat_template_kwargs) to the
// exact prompt text. The prompt already holds BOS when the template writes it: encode it
// with add_special_tokens = false.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "jinja/renderer.h"

namespace myriad {

class ChatTemplate {
  public:
    // The template of a model or tokenizer folder, as transformers finds it: the files
    // chat_template.jinja ("default") and additional_chat_templates/NAME.jinja when present,
    // else tokenizer_config.json's chat_template (a string, or a list of {name, template}).
    // Special tokens (bos_token, eos_token, ...) come from tokenizer_config.json, as strings
    // or AddedToken objects. Bad input names the file.
    static ChatTemplate load(const std::string& dir);

    // `source` replaces the folder's templates (`--template`, `serve --chat-template`); special
    // tokens still come from the folder's tokenizer_config.json when it exists.
    static ChatTemplate load_with_source(const std::string& dir, std::string source,
                                         std::string origin);

    // A template with the given special tokens (a JSON object of name -> string).
    static ChatTemplate from_source(std::string source, std::string origin,
                                    nlohmann::ordered_json special_tokens);

    // Renders an OpenAI chat request: `messages` (required), `tools`, `add_generation_prompt`
    // (default true) and `chat_template_kwargs` (extra variables, e.g. thinking). Message
    // fields reach the template as they came (`content: null` stays null). A template that
    // reads `tools_ts_str` (Kimi-K2.5's) gets the tools key-sorted, their TypeScript-style
    // declaration in `tools_ts_str` and `thinking` = true, unless chat_template_kwargs say
    // otherwise (tool_declarations_prompt.h). A malformed request or a template error
    // (raise_exception included) is bad input; template errors name the template and the line
    // and column.
    std::string render(const nlohmann::ordered_json& request,
                       const jinja::RenderOptions& options = {}) const;

    // The special tokens passed to the template (bos_token, eos_token, ...).
    const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }
    // Names of the templates ("default", "tool_use", ...).
    std::vector<std::string> names() const;
    // The source of the template a request without tools renders with; empty when the folder
    // has several and none is named "default".
    std::string source() const;

  private:
    struct Named {
        std::string name;
        std::string origin;  // for messages: the file (and entry) it came from
        std::string source;
        std::shared_ptr<const jinja::Template> tmpl;
        std::string error;  // a syntax error, raised when this template is used
        // Reads `tools_ts_str`: Kimi-K2.5's tokenizer behaviour (tool_declarations_prompt.h).
        bool reads_tool_declarations = false;
    };
    void add(std::string name, std::string source, std::string origin);
    const Named& select(bool has_tools) const;

    std::vector<Named> templates_;
    nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
};

// The special tokens of a tokenizer_config.json object as transformers passes them to chat
// templates: bos/eos/unk/sep/pad/cls/mask_token that are set, as strings.
nlohmann::ordered_json special_tokens_of(const nlohmann::ordered_json& tokenizer_config,
                                         const std::string& source);

}  // namespace myriad
