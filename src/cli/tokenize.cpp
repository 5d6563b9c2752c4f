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
#include "format/json_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad::cli {

namespace {

int hex4(std::string_view s, size_t i) {
    if (i + 4 > s.size()) return -1;
    int v = 0;
    for (size_t k = i; k < i + 4; ++k) {
        char c = s[k];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

// The value of a line holding one JSON string; a lone surrogate escape becomes U+FFFD. Returns
// false when the line is not a JSON string.
bool parse_json_string(std::string_view line, std::string& out) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
        line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.size() < 2 || line.front() != '"' || line.back() != '"') return false;
    out.clear();
    for (size_t i = 1; i + 1 < line.size(); ++i) {
        char c = line[i];
        if (c == '"') return false;
        if (c != '\\') {
            out += c;
            continue;
        }
        if (i + 2 >= line.size()) return false;
        char e = line[++i];
        switch (e) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '/':
                out += '/';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                int cp = hex4(line, i + 1);
                if (cp < 0) return false;
                i += 4;
                if (cp >= 0xd800 && cp <= 0xdbff && i + 6 < line.size() && line[i + 1] == '\\' &&
                    line[i + 2] == 'u') {
                    int lo = hex4(line, i + 3);
                    if (lo >= 0xdc00 && lo <= 0xdfff) {
                        utf8::append(out, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
                        i += 6;
                        break;
                    }
                }
                if (cp >= 0xd800 && cp <= 0xdfff)
                    out += utf8::kReplacement;
                else
                    utf8::append(out, static_cast<uint32_t>(cp));
                break;
            }
            default:
                return false;
        }
    }
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
        auto tok = Tokenizer::load(resolve_model(a->model));
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
        auto tok = Tokenizer::load(resolve_model(a->model));
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
