#include "tokenizer/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/gguf.h"
#include "format/json_file.h"
#include "jinja/lexer.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tool_declarations_prompt.h"
#include "util/error.h"

namespace myriad {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) bad_input("{}: cannot read the file", path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Whether the template reads the variable `name` anywhere in its tags (text and comments do
// not count). Only called on a template that parsed.
bool reads_variable(std::string_view source, std::string_view name) {
    for (const jinja::Token& t : jinja::tokenize(source))
        if (t.type == jinja::Tok::Name && t.value == name) return true;
    return false;
}

const char* const kSpecialTokenNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                          "pad_token", "cls_token", "mask_token"};

}  // namespace

nlohmann::ordered_json special_tokens_of(const nlohmann::ordered_json& config,
                                         const std::string& source) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    if (!config.is_object()) return out;
    for (const char* name : kSpecialTokenNames) {
        auto it = config.find(name);
        if (it == config.end() || it->is_null()) continue;
        if (it->is_string()) {
            out[name] = *it;
        } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
            out[name] = (*it)["content"];  // an AddedToken
        } else {
            bad_input("{}: field {} must be a string or an AddedToken object with \"content\"",
                      source, name);
        }
    }
    return out;
}

void ChatTemplate::add(std::string name, std::string source, std::string origin) {
    Named n;
    n.name = std::move(name);
    n.origin = std::move(origin);
    n.source = source;
    try {
        n.tmpl = std::make_shared<const jinja::Template>(source);
        n.reads_tool_declarations = reads_variable(source, kToolsTsVariable);
    } catch (const jinja::TemplateError& e) {
        n.error = e.what();
    }
    templates_.push_back(std::move(n));
}

ChatTemplate ChatTemplate::from_source(std::string source, std::string origin,
                                       nlohmann::ordered_json special_tokens) {
    ChatTemplate t;
    t.add("default", std::move(source), std::move(origin));
    t.special_tokens_ = std::move(special_tokens);
    return t;
}

ChatTemplate ChatTemplate::load_with_source(const std::string& dir, std::string source,
                                            std::string origin) {
    if (is_gguf_path(dir) && fs::is_regular_file(dir))
        return from_source(std::move(source), std::move(origin),
                           gguf_special_tokens(*GgufModel::open(dir)));
    fs::path config_path = fs::path(dir) / "tokenizer_config.json";
    nlohmann::ordered_json special = nlohmann::ordered_json::object();
    if (fs::exists(config_path))
        special = special_tokens_of(read_json_file(config_path.string()), config_path.string());
    return from_source(std::move(source), std::move(origin), std::move(special));
}

ChatTemplate ChatTemplate::load(const std::string& dir) {
    fs::path root(dir);
    if (is_gguf_path(dir) && fs::is_regular_file(root)) {
        auto model = GgufModel::open(dir);
        ChatTemplate t;
        t.special_tokens_ = gguf_special_tokens(*model);
        for (auto& [name, source] : gguf_chat_templates(*model))
            t.add(name, std::move(source), dir + ": metadata tokenizer.chat_template");
        if (t.templates_.empty())
            bad_input("{}: no chat template (metadata tokenizer.chat_template is missing)", dir);
        return t;
    }
    if (!fs::is_directory(root)) bad_input("{}: not a folder", dir);
    fs::path config_path = root / "tokenizer_config.json";
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    if (fs::exists(config_path)) config = read_json_file(config_path.string());
    ChatTemplate t;
    t.special_tokens_ = special_tokens_of(config, config_path.string());

    // Template files take priority over the config's entries, as in transformers.
    fs::path file = root / "chat_template.jinja";
    if (fs::exists(file)) t.add("default", read_text(file), file.string());
    fs::path extra = root / "additional_chat_templates";
    if (fs::is_directory(extra)) {
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(extra))
            if (entry.path().extension() == ".jinja") files.push_back(entry.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) t.add(f.stem().string(), read_text(f), f.string());
    }
    if (!t.templates_.empty()) return t;

    std::string src = config_path.string();
    if (!fs::exists(config_path))
        bad_input("{}: no chat template (neither chat_template.jinja nor tokenizer_config.json)",
                  dir);
    auto it = config.find("chat_template");
    if (it == config.end() || it->is_null())
        bad_input(
            "{}: no chat_template (and no chat_template.jinja beside it); pass a template "
            "file",
            src);
    if (it->is_string()) {
        t.add("default", it->get<std::string>(), src);
    } else if (it->is_array()) {
        for (const auto& entry : *it) {
            if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
                !entry.contains("template") || !entry["template"].is_string())
                bad_input(
                    "{}: each chat_template entry must be {{\"name\": ..., \"template\": ...}}",
                    src);
            std::string name = entry["name"].get<std::string>();
            t.add(name, entry["template"].get<std::string>(),
                  src + " (chat_template '" + name + "')");
        }
        if (t.templates_.empty()) bad_input("{}: chat_template is an empty list", src);
    } else {
        bad_input("{}: chat_template must be a string or a list of named templates", src);
    }
    return t;
}

std::vector<std::string> ChatTemplate::names() const {
    std::vector<std::string> out;
    for (const auto& n : templates_) out.push_back(n.name);
    return out;
}

std::string ChatTemplate::source() const {
    if (templates_.size() == 1) return templates_[0].source;
    for (const auto& n : templates_)
        if (n.name == "default") return n.source;
    return "";
}

const ChatTemplate::Named& ChatTemplate::select(bool has_tools) const {
    if (templates_.size() == 1) return templates_[0];
    const Named* def = nullptr;
    for (const auto& n : templates_) {
        if (has_tools && n.name == "tool_use") return n;
        if (n.name == "default") def = &n;
    }
    if (def) return *def;
    std::string names;
    for (const auto& n : templates_) names += (names.empty() ? "" : ", ") + n.name;
    bad_input("the model has several chat templates ({}) and none is named 'default'", names);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& request,
                                 const jinja::RenderOptions& options) const {
    if (!request.is_object()) bad_input("request: expected a JSON object");
    auto messages = request.find("messages");
    if (messages == request.end() || messages->is_null())
        bad_input("request: field messages is missing");
    if (!messages->is_array()) bad_input("request: field messages must be an array");
    for (size_t i = 0; i < messages->size(); ++i)
        if (!(*messages)[i].is_object()) bad_input("request: messages[{}] must be an object", i);

    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    vars["messages"] = *messages;
    auto tools = request.find("tools");
    bool has_tools = tools != request.end() && !tools->is_null();
    if (has_tools && !tools->is_array()) bad_input("request: field tools must be an array");
    vars["tools"] = has_tools ? *tools : nlohmann::ordered_json(nullptr);
    bool add_generation_prompt = true;
    auto agp = request.find("add_generation_prompt");
    if (agp != request.end() && !agp->is_null()) {
        if (!agp->is_boolean()) bad_input("request: field add_generation_prompt must be a boolean");
        add_generation_prompt = agp->get<bool>();
    }
    vars["add_generation_prompt"] = add_generation_prompt;
    for (const auto& [k, v] : special_tokens_.items()) vars[k] = v;
    const Named& t = select(has_tools);
    if (t.reads_tool_declarations) add_tool_declaration_variables(vars);
    auto kwargs = request.find("chat_template_kwargs");
    if (kwargs != request.end() && !kwargs->is_null()) {
        if (!kwargs->is_object())
            bad_input("request: field chat_template_kwargs must be an object");
        for (const auto& [k, v] : kwargs->items()) {
            if (k == "messages" || k == "tools" || k == "add_generation_prompt")
                bad_input("request: chat_template_kwargs cannot set '{}'; use the request field",
                          k);
            vars[k] = v;  // overrides a special token of the same name, as in transformers
        }
    }

    if (!t.tmpl) bad_input("chat template {}: {}", t.origin, t.error);
    try {
        return t.tmpl->render(vars, options);
    } catch (const jinja::TemplateError& e) {
        bad_input("chat template {}: {}", t.origin, e.what());
    }
}

}  // namespace myriad
