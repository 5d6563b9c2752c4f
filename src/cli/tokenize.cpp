// myriad tokenize / detokenize: the tokenizer as a tool.
//   tokenize MODEL TEXT        prints one JSON array of ids
//   tokenize MODEL --jsonl     reads one JSON string per line on stdin, writes one array per line
//   detokenize MODEL 1,2,3     prints the text exactly: no newline is added
//   detokenize MODEL --jsonl   reads one JSON array of ids per line, writes one JSON string each
// Special-token text encodes as the special token; --add-special-tokens adds the tokenizer's BOS
// (or its post-processor's template). Invalid UTF-8 (raw bytes in TEXT, lone surrogate escapes
// in a JSON line) becomes U+FFFD before tokenizing, as Python's errors="replace" does.
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "format/json_file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace myriad::cli {

namespace {

// `json` with every escaped UTF-16 surrogate that is not half of a pair (\uD800 alone) written as
// \uFFFD, so that nlohmann reads it as U+FFFD (Python's errors="replace") instead of failing.
std::string replace_lone_surrogates(std::string_view json) {
    auto hex4 = [&](size_t at) -> int {
        if (at + 4 > json.size()) return -1;
        int v = 0;
        for (size_t k = at; k < at + 4; ++k) {
            const char c = json[k];
            const int d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
            if (d < 0) return -1;
            v = v * 16 + d;
        }
        return v;
    };
    auto escape_at = [&](size_t at) {  // the \uXXXX at `at`, or -1
        return at + 1 < json.size() && json[at] == '\\' && json[at + 1] == 'u' ? hex4(at + 2) : -1;
    };
    std::string out;
    out.reserve(json.size());
    for (size_t i = 0; i < json.size();) {
        if (json[i] != '\\' || i + 1 >= json.size()) {
            out += json[i++];
            continue;
        }
        const int cp = escape_at(i);
        if (cp < 0xd800 || cp > 0xdfff) {  // another escape (or \u of no surrogate): as is
            out.append(json, i, 2);
            i += 2;
            continue;
        }
        const int low = cp <= 0xdbff ? escape_at(i + 6) : -1;
        if (low >= 0xdc00 && low <= 0xdfff) {
            out.append(json, i, 12);
            i += 12;
        } else {
            out += "\\uFFFD";
            i += 6;
        }
    }
    return out;
}

// The value of a line holding one JSON string (a lone surrogate escape becomes U+FFFD); false
// when the line is not one JSON string.
bool parse_json_string(const std::string& line, std::string& out) {
    const auto j = nlohmann::json::parse(replace_lone_surrogates(line), nullptr, false);
    if (!j.is_string()) return false;
    out = j.get<std::string>();
    return true;
}

void print_ids(const std::vector<TokenId>& ids) {
    std::string line = "[";
    for (size_t k = 0; k < ids.size(); ++k) {
        if (k) line += ',';
        line += std::to_string(ids[k]);
    }
    line += "]\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
}

std::vector<TokenId> parse_id_list(std::string text) {
    // "1,2,3", "1, 2, 3" or "[1, 2, 3]".
    if (!text.empty() && text.front() == '[' && text.back() == ']')
        text = text.substr(1, text.size() - 2);
    std::vector<TokenId> ids;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t comma = text.find(',', pos);
        if (comma == std::string::npos) comma = text.size();
        std::string item = text.substr(pos, comma - pos);
        item.erase(0, item.find_first_not_of(" \t\n"));
        item.erase(item.find_last_not_of(" \t\n") + 1);
        TokenId v = 0;
        auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0)
            bad_input("IDS: '{}' is not a token id (expected comma-separated integers ≥ 0)",
                      printable(item));
        ids.push_back(v);
        pos = comma + 1;
    }
    return ids;
}

}  // namespace

Run add_tokenize(CLI::App& app) {
    struct Args {
        std::string model, text;
        bool jsonl = false, add_special = false;
    };
    auto a = std::make_shared<Args>();
    app.add_option("MODEL", a->model, "model folder (a folder with only tokenizer files will do)")
        ->required();
    app.add_option("TEXT", a->text, "text to encode (or --jsonl)");
    app.add_flag("--jsonl", a->jsonl, "read one JSON string per line on stdin");
    app.add_flag("--add-special-tokens", a->add_special,
                 "add BOS (or the post-processor's template)");
    return [a, &app]() -> int {
        bool has_text = app.count("TEXT") > 0;
        if (a->jsonl == has_text) bad_input("tokenize: give TEXT or --jsonl (one of them)");
        auto tok = Tokenizer::load(resolve_model_folder(a->model, /*tokenizer_only=*/true));
        if (has_text) {
            print_ids(tok->encode(a->text, a->add_special));
            return 0;
        }
        std::string line, value;
        for (size_t n = 1; std::getline(std::cin, line); ++n) {
            if (!parse_json_string(line, value))
                bad_input("stdin line {}: expected one JSON string per line", n);
            print_ids(tok->encode(value, a->add_special));
            std::fflush(stdout);
        }
        return 0;
    };
}

Run add_detokenize(CLI::App& app) {
    struct Args {
        std::string model, ids;
        bool jsonl = false, skip_special = false;
    };
    auto a = std::make_shared<Args>();
    app.add_option("MODEL", a->model, "model folder (a folder with only tokenizer files will do)")
        ->required();
    app.add_option("IDS", a->ids, "comma-separated token ids (or --jsonl)");
    app.add_flag("--jsonl", a->jsonl, "read one JSON array of ids per line on stdin");
    app.add_flag("--skip-special-tokens", a->skip_special, "leave special tokens out");
    return [a, &app]() -> int {
        bool has_ids = app.count("IDS") > 0;
        if (a->jsonl == has_ids) bad_input("detokenize: give IDS or --jsonl (one of them)");
        auto tok = Tokenizer::load(resolve_model_folder(a->model, /*tokenizer_only=*/true));
        auto check = [&](const std::vector<TokenId>& ids, const std::string& where) {
            for (TokenId id : ids)
                if (id >= tok->vocab_size() || !tok->id_to_token(id))
                    bad_input("{}: {} is not a token id of {} (vocabulary of {})", where, id,
                              a->model, tok->vocab_size());
        };
        if (has_ids) {
            std::vector<TokenId> ids = parse_id_list(a->ids);
            check(ids, "IDS");
            std::string text = tok->decode(ids, a->skip_special);
            std::fwrite(text.data(), 1, text.size(), stdout);
            return 0;
        }
        std::string line;
        for (size_t n = 1; std::getline(std::cin, line); ++n) {
            std::string where = fmt::format("stdin line {}", n);
            std::vector<TokenId> ids;
            try {
                auto j = nlohmann::json::parse(line);
                if (!j.is_array()) throw std::invalid_argument("not an array");
                for (const auto& v : j) {
                    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
                        v.get<int64_t>() > INT32_MAX)
                        throw std::invalid_argument("not an id");
                    ids.push_back(v.get<TokenId>());
                }
            } catch (const std::exception&) {
                bad_input("{}: expected one JSON array of token ids per line", where);
            }
            check(ids, where);
            std::string out = nlohmann::json(tok->decode(ids, a->skip_special)).dump() + "\n";
            std::fwrite(out.data(), 1, out.size(), stdout);
            std::fflush(stdout);
        }
        return 0;
    };
}

}  // namespace myriad::cli
