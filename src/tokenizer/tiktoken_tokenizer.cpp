#include "tokenizer/tiktoken_tokenizer.h"

#include <algorithm>
#include <charconv>

#include "format/json_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad {

const std::string_view kKimiPattern =
    R"([\p{Han}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+)"
    R"(|\s+(?!\S))"
    R"(|\s+)";

namespace {

constexpr int kReservedSpecials = 256;  // tokenization_kimi.py's num_reserved_special_tokens

int base64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// Standard base64 with padding; nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view s) {
    if (s.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(s.size() / 4 * 3);
    for (size_t i = 0; i < s.size(); i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            char c = s[i + k];
            if (c == '=' && i + 4 == s.size() && k >= 2) {
                v[k] = 0;
                ++pad;
            } else {
                if (pad > 0) return std::nullopt;
                v[k] = base64_value(c);
                if (v[k] < 0) return std::nullopt;
            }
        }
        uint32_t w = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
        out += static_cast<char>(w >> 16);
        if (pad < 2) out += static_cast<char>((w >> 8) & 0xff);
        if (pad < 1) out += static_cast<char>(w & 0xff);
    }
    return out;
}

BpeOptions tiktoken_options() {
    BpeOptions o;
    o.byte_level = true;
    o.ranks_from_vocab = true;
    o.whole_piece_first = true;
    return o;
}

}  // namespace

TiktokenTokenizer::TiktokenTokenizer(std::string_view model, const TokenizerConfig& config,
                                     const std::string& source, const std::string& config_source)
    : bpe_(tiktoken_options()) {
    // Ids are dense in real files; bounding the holes bounds the memory a bad file can claim.
    const int64_t max_id =
        static_cast<int64_t>(std::count(model.begin(), model.end(), '\n')) + (int64_t{1} << 20);
    size_t line_no = 0;
    size_t n_base = 0;
    for (size_t pos = 0; pos < model.size();) {
        size_t eol = model.find('\n', pos);
        if (eol == std::string_view::npos) eol = model.size();
        std::string_view line = model.substr(pos, eol - pos);
        pos = eol + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        size_t space = line.find(' ');
        if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
            bad_input("{}: line {}: expected \"<base64 token> <rank>\"", source, line_no);
        auto bytes = base64_decode(line.substr(0, space));
        if (!bytes || bytes->empty())
            bad_input("{}: line {}: the token is not valid base64", source, line_no);
        std::string_view rank_text = line.substr(space + 1);
        int64_t rank = -1;
        auto [end, ec] =
            std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
        if (ec != std::errc() || end != rank_text.data() + rank_text.size() || rank < 0 ||
            rank > max_id)
            bad_input("{}: line {}: rank \"{}\" is not an integer in [0, {}]", source, line_no,
                      printable(rank_text), max_id);
        if (static_cast<size_t>(rank) >= tokens_.size())
            tokens_.resize(static_cast<size_t>(rank) + 1);
        Entry& e = tokens_[static_cast<size_t>(rank)];
        if (e.kind != 0) bad_input("{}: line {}: rank {} appears twice", source, line_no, rank);
        if (bpe_.find(*bytes) >= 0)
            bad_input("{}: line {}: token bytes already have rank {}", source, line_no,
                      bpe_.find(*bytes));
        bpe_.add_token(*bytes, static_cast<TokenId>(rank));
        e.bytes = std::move(*bytes);
        e.kind = 1;
        ++n_base;
    }
    if (n_base == 0) bad_input("{}: holds no tokens", source);

    // Specials: the named ones, then Kimi's reserved names for the rest of its range.
    std::vector<AddedToken> specials;
    auto add_special = [&](TokenId id, const std::string& name, const std::string& where) {
        if (static_cast<size_t>(id) < tokens_.size() && tokens_[id].kind == 1)
            bad_input("{}: {}: id {} is already the base token of rank {}", config_source, where,
                      id, id);
        if (name.empty()) bad_input("{}: {}: empty content", config_source, where);
        if (!utf8::is_valid(name))
            bad_input("{}: {}: content is not valid UTF-8", config_source, where);
        if (special_ids_.count(name)) return;  // the first id keeps the name
        if (static_cast<size_t>(id) >= tokens_.size()) tokens_.resize(static_cast<size_t>(id) + 1);
        tokens_[id] = Entry{name, 2};
        special_ids_[name] = id;
        AddedToken a;
        a.id = id;
        a.content = name;
        a.special = true;
        specials.push_back(std::move(a));
    };
    for (const AddedToken& a : config.added_tokens_decoder) {
        if (a.id > max_id)
            bad_input("{}: field added_tokens_decoder.{}: id out of range", config_source, a.id);
        add_special(a.id, a.content, fmt::format("field added_tokens_decoder.{}", a.id));
    }
    for (size_t id = n_base; id < n_base + kReservedSpecials; ++id)
        if (id >= tokens_.size() || tokens_[id].kind == 0) {
            std::string name = fmt::format("<|reserved_token_{}|>", id);
            if (!special_ids_.count(name))
                add_special(static_cast<TokenId>(id), name, "reserved special tokens");
        }
    std::vector<std::string> patterns;
    for (const auto& a : specials) patterns.push_back(a.content);
    specials_ = AddedTokenMatcher(std::move(specials), std::move(patterns));

    regex_ = std::make_unique<Regex>(config.pat_str.value_or(std::string(kKimiPattern)),
                                     config.pat_str ? config_source + ": field pat_str" : source);
    auto special = [&](const std::optional<std::string>& name, const char* field) {
        std::optional<TokenId> id;
        if (!name) return id;
        auto it = special_ids_.find(*name);
        if (it == special_ids_.end())
            bad_input("{}: field {} \"{}\" is not a special token of added_tokens_decoder",
                      config_source, field, printable(*name));
        return std::optional<TokenId>(it->second);
    };
    bos_ = special(config.bos_token, "bos_token");
    eos_ = special(config.eos_token, "eos_token");
    if (config.add_bos_token && bos_) prefix_.push_back(*bos_);
    if (config.add_eos_token && eos_) suffix_.push_back(*eos_);
}

std::vector<TokenId> TiktokenTokenizer::encode(std::string_view input,
                                               bool add_special_tokens) const {
    std::string clean;
    std::string_view text = input;
    if (!utf8::is_valid(input)) {
        clean = utf8::replace_invalid(input);
        text = clean;
    }
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 4);
    if (add_special_tokens) out.insert(out.end(), prefix_.begin(), prefix_.end());
    std::vector<Segment> segs;
    specials_.split(text, 0, segs);
    for (const Segment& s : segs) {
        if (s.id >= 0) {
            out.push_back(s.id);
            continue;
        }
        std::string_view part = text.substr(s.begin, s.end - s.begin);
        regex_->for_each_match(
            part, [&](size_t b, size_t e) { bpe_.encode(part.substr(b, e - b), out); });
    }
    if (add_special_tokens) out.insert(out.end(), suffix_.begin(), suffix_.end());
    return out;
}

std::string TiktokenTokenizer::decode(const std::vector<TokenId>& ids,
                                      bool skip_special_tokens) const {
    std::string out;
    for (TokenId id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) continue;
        const Entry& e = tokens_[id];
        if (e.kind == 0 || (skip_special_tokens && e.kind == 2)) continue;
        out += e.bytes;
    }
    return utf8::is_valid(out) ? out : utf8::replace_invalid(out);
}

std::optional<TokenId> TiktokenTokenizer::token_to_id(std::string_view token) const {
    if (auto it = special_ids_.find(std::string(token)); it != special_ids_.end())
        return it->second;
    if (auto bytes = byte_level::to_bytes(token)) {
        TokenId id = bpe_.find(*bytes);
        if (id >= 0) return id;
    }
    return std::nullopt;
}

std::optional<std::string> TiktokenTokenizer::id_to_token(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || tokens_[id].kind == 0)
        return std::nullopt;
    const Entry& e = tokens_[id];
    return e.kind == 2 ? e.bytes : byte_level::from_bytes(e.bytes);
}

bool TiktokenTokenizer::is_special(TokenId id) const {
    return id >= 0 && static_cast<size_t>(id) < tokens_.size() && tokens_[id].kind == 2;
}

std::string TiktokenTokenizer::token_bytes(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return {};
    return tokens_[id].bytes;
}

}  // namespace myriad
