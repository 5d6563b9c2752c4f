// myriad chat-template MODEL --request FILE [--template FILE]: prints the exact prompt an
// OpenAI chat request renders to through the model's chat template, nothing added.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "format/json_file.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"
#include "util/text_file.h"

namespace myriad::cli {

namespace {

struct ChatTemplateArgs {
    std::string model;
    std::string request;
    std::string template_file;
};

}  // namespace

Run add_chat_template(CLI::App& app) {
    auto args = std::make_shared<ChatTemplateArgs>();
    app.add_option("model", args->model, "model or tokenizer folder (tokenizer_config.json)")
        ->required();
    app.add_option("--request", args->request,
                   "JSON file with an OpenAI chat request: messages, tools, "
                   "add_generation_prompt (default true), chat_template_kwargs")
        ->required();
    app.add_option("--template", args->template_file,
                   "Jinja file that replaces the model's chat template");
    return [args] {
        std::string model = resolve_model_folder(args->model, /*tokenizer_only=*/true);
        nlohmann::ordered_json request = read_json_file(args->request);
        ChatTemplate tmpl = args->template_file.empty()
                                ? ChatTemplate::load(model)
                                : ChatTemplate::load_with_source(
                                      model, read_text_file(args->template_file, "--template"),
                                      args->template_file);
        std::string prompt = tmpl.render(request);
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
        std::fflush(stdout);
        return 0;
    };
}

}  // namespace myriad::cli
