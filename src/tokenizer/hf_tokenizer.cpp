#include "tokenizer/hf_tokenizer.h"

#include <functional>

#include "format/json_fields.h"
#include "format/json_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad {

namespace {

using Json = nlohmann::ordered_json;

const Json kNull = nullptr;

const Json& member(const Json& j, const char* name) {
    auto it = j.find(name);
    return it == j.end() ? kNull : *it;
}

}  // namespace

HfTokenizer::HfTokenizer(std::string_view json, const TokenizerConfig& config,
                         const std::string& source)
    : HfTokenizer(parse_tokenizer_json(json, source), config, source) {}

HfTokenizer::HfTokenizer(TokenizerJson tj, const TokenizerConfig& config, const std::string& source,
                         int64_t min_size)
    : source_(source) {
    JsonFields root(tj.root, source);
    const Json& model = member(tj.root, "model");
    if (!model.is_object()) root.fail("model", "is missing or not an object");
    JsonFields m(model, source, "model.");
    if (auto type = m.opt_string("type"); type && *type != "BPE")
        m.fail("type", fmt::format("is \"{}\": only BPE models are supported", *type));
    if (tj.vocab.empty()) m.fail("vocab", "is missing or empty");
    for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (auto v = m.opt_string(affix); v && !v->empty())
            m.fail(affix, fmt::format("is \"{}\": not supported", printable(*v)));
    if (auto d = m.opt_number("dropout"); d && *d > 0.0) m.fail("dropout", "is not supported");

    const Json& pre = member(tj.root, "pre_tokenizer");
    byte_level_ = has_byte_level(pre);
    BpeOptions opt;
    opt.byte_level = byte_level_;
    opt.whole_piece_first = m.opt_boolean("ignore_merges").value_or(false);
    opt.fuse_unk = m.opt_boolean("fuse_unk").value_or(false);
    opt.byte_fallback = m.opt_boolean("byte_fallback").value_or(false);

    // The vocabulary: ids by spelling, and spellings by id.
    int64_t max_id = -1;
    for (const auto& [text, id] : tj.vocab) {
        vocab_.insert(text, static_cast<TokenId>(id));
        max_id = std::max(max_id, id);
    }
    const Json& added = member(tj.root, "added_tokens");
    if (!added.is_null() && !added.is_array()) root.fail("added_tokens", "must be an array");
    for (size_t k = 0; added.is_array() && k < added.size(); ++k)
        if (added[k].is_object() && added[k].contains("id") && added[k]["id"].is_number_unsigned())
            max_id = std::max<int64_t>(max_id, static_cast<int64_t>(std::min<uint64_t>(
                                                   added[k]["id"].get<uint64_t>(), INT32_MAX)));
    // Ids are dense in real files; bounding the holes bounds the memory a bad file can claim.
    const int64_t id_limit =
        static_cast<int64_t>(tj.vocab.size() + (added.is_array() ? added.size() : 0)) +
        (int64_t{1} << 20);
    if (max_id > id_limit)
        m.fail("vocab", fmt::format("has id {}: more than a million unused ids", max_id));
    if (auto unk = m.opt_string("unk_token")) {
        TokenId id = vocab_.find(*unk);
        if (id < 0)
            m.fail("unk_token", fmt::format("\"{}\" is not in model.vocab", printable(*unk)));
        opt.unk = id;
    }
    tokens_.resize(static_cast<size_t>(std::max(max_id + 1, min_size)));
    bpe_ = std::make_unique<Bpe>(opt);
    for (auto& [text, id] : tj.vocab) {
        Entry& e = tokens_[static_cast<size_t>(id)];
        if (!byte_level_) {
            bpe_->add_token(text, static_cast<TokenId>(id));
        } else if (auto bytes = byte_level::to_bytes(text)) {
            bpe_->add_token(*bytes, static_cast<TokenId>(id));
        }
        e.text = std::move(text);
        e.present = true;
    }
    for (size_t k = 0; k < tj.merges.size(); ++k) {
        const auto& [a, b] = tj.merges[k];
        TokenId ia = vocab_.find(a), ib = vocab_.find(b), im = vocab_.find(a + b);
        for (auto [id, what] : {std::pair{ia, &a}, std::pair{ib, &b}})
            if (id < 0)
                bad_input("{}: field model.merges[{}]: token \"{}\" is not in model.vocab", source,
                          k, printable(*what));
        if (im < 0)
            bad_input("{}: field model.merges[{}]: the merged token \"{}\" is not in model.vocab",
                      source, k, printable(a + b));
        bpe_->add_merge(ia, ib, static_cast<int32_t>(k), im);
    }

    normalizer_ = make_normalizer(member(tj.root, "normalizer"), source, "normalizer");
    pre_tokenizer_ = make_pre_tokenizer(pre, source, "pre_tokenizer");
    decoder_ = make_decoder(member(tj.root, "decoder"), source, "decoder");

    // Added tokens: matched in the raw text, or in the normalized text when `normalized`.
    std::vector<AddedToken> raw, norm;
    std::vector<std::string> raw_patterns, norm_patterns;
    for (size_t k = 0; added.is_array() && k < added.size(); ++k) {
        JsonFields t(added[k], source, fmt::format("added_tokens[{}].", k));
        AddedToken a;
        int64_t id = t.integer("id");
        if (id < 0 || id > max_id) t.fail("id", fmt::format("is {}: out of range", id));
        a.id = static_cast<TokenId>(id);
        a.content = t.string("content");
        a.special = t.opt_boolean("special").value_or(false);
        a.lstrip = t.opt_boolean("lstrip").value_or(false);
        a.rstrip = t.opt_boolean("rstrip").value_or(false);
        a.single_word = t.opt_boolean("single_word").value_or(false);
        a.normalized = t.opt_boolean("normalized").value_or(!a.special);
        if (a.content.empty()) continue;
        if (!utf8::is_valid(a.content)) t.fail("content", "is not valid UTF-8");
        std::string pattern = a.content;
        if (a.normalized && normalizer_) normalizer_->normalize(pattern);
        // HF spells a normalized added token by its normalized content when decoding.
        Entry& e = tokens_[static_cast<size_t>(id)];
        e.text = pattern;
        e.present = true;
        e.added = a.special ? 2 : 1;
        by_text_[a.content] = a.id;
        (a.normalized ? norm_patterns : raw_patterns).push_back(pattern);
        (a.normalized ? norm : raw).push_back(std::move(a));
    }
    raw_added_ = AddedTokenMatcher(std::move(raw), std::move(raw_patterns));
    normalized_added_ = AddedTokenMatcher(std::move(norm), std::move(norm_patterns));

    auto id_of = [&](const std::string& name, const std::string& field) {
        auto id = token_to_id(name);
        if (!id)
            bad_input("{}: {} \"{}\" is not a token of the vocabulary", source, field,
                      printable(name));
        return *id;
    };
    if (config.bos_token) bos_ = token_to_id(*config.bos_token);
    if (config.eos_token) eos_ = token_to_id(*config.eos_token);

    // add_special_tokens: the post-processor's template, else tokenizer_config's flags (what
    // transformers does for Llama-style tokenizers whose tokenizer.json has no template).
    const Json& post = member(tj.root, "post_processor");
    bool templated = false;
    std::function<void(const Json&, const std::string&)> read_post = [&](const Json& p,
                                                                         const std::string& field) {
        if (!p.is_object()) return;
        JsonFields f(p, source, field + ".");
        std::string type = f.opt_string("type").value_or("");
        if (type == "TemplateProcessing") {
            templated = true;
            const Json& single = member(p, "single");
            const Json& specials = member(p, "special_tokens");
            if (!single.is_array()) f.fail("single", "must be an array");
            bool after = false;
            for (size_t k = 0; k < single.size(); ++k) {
                const Json& item = single[k];
                std::string item_field = fmt::format("{}.single[{}]", field, k);
                if (item.is_object() && item.contains("Sequence")) {
                    after = true;
                    continue;
                }
                if (!item.is_object() || !item.contains("SpecialToken"))
                    bad_input("{}: field {} must be a SpecialToken or a Sequence", source,
                              item_field);
                JsonFields st(item["SpecialToken"], source, item_field + ".SpecialToken.");
                std::string name = st.string("id");
                std::vector<TokenId> ids;
                if (specials.is_object() && specials.contains(name)) {
                    const Json& ids_json = member(specials[name], "ids");
                    if (!ids_json.is_array())
                        bad_input("{}: field {}.special_tokens.{}.ids must be an array", source,
                                  field, name);
                    for (const auto& v : ids_json) {
                        if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
                            v.get<int64_t>() > max_id)
                            bad_input("{}: field {}.special_tokens.{}.ids has a bad id", source,
                                      field, name);
                        ids.push_back(v.get<TokenId>());
                    }
                } else {
                    ids.push_back(id_of(name, item_field));
                }
                auto& dst = after ? suffix_ : prefix_;
                dst.insert(dst.end(), ids.begin(), ids.end());
            }
        } else if (type == "BertProcessing" || type == "RobertaProcessing") {
            templated = true;
            for (auto [name, dst] : {std::pair{"cls", &prefix_}, std::pair{"sep", &suffix_}}) {
                const Json& pair = member(p, name);
                if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer())
                    f.fail(name, "must be [token, id]");
                dst->push_back(pair[1].get<TokenId>());
            }
        } else if (type == "Sequence") {
            const Json& list = member(p, "processors");
            for (size_t k = 0; list.is_array() && k < list.size(); ++k)
                read_post(list[k], fmt::format("{}.processors[{}]", field, k));
        }
    };
    read_post(post, "post_processor");
    if (!templated) {
        if (config.add_bos_token && bos_) prefix_.push_back(*bos_);
        if (config.add_eos_token && eos_) suffix_.push_back(*eos_);
    }
}

void HfTokenizer::encode_text(std::string_view text, bool at_origin,
                              std::vector<TokenId>& out) const {
    if (text.empty()) return;
    Pieces p;
    p.text.assign(text);
    p.spans.push_back({0, static_cast<uint32_t>(text.size()), at_origin});
    if (pre_tokenizer_) pre_tokenizer_->apply(p);
    for (const auto& s : p.spans) bpe_->encode(p.view(s), out);
}

std::vector<TokenId> HfTokenizer::encode(std::string_view input, bool add_special_tokens) const {
    std::string clean;
    std::string_view text = input;
    if (!utf8::is_valid(input)) {
        clean = utf8::replace_invalid(input);
        text = clean;
    }
    if (text.size() > UINT32_MAX / 2)
        bad_input("text of {} bytes is too long to encode", text.size());
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 4);
    if (add_special_tokens) out.insert(out.end(), prefix_.begin(), prefix_.end());
    std::vector<Segment> raw, norm;
    if (raw_added_.empty())
        raw.push_back({0, text.size(), -1});
    else
        raw_added_.split(text, 0, raw);
    for (const Segment& s : raw) {
        if (s.id >= 0) {
            out.push_back(s.id);
            continue;
        }
        std::string_view part = text.substr(s.begin, s.end - s.begin);
        std::string normalized;
        if (normalizer_) {
            normalized.assign(part);
            normalizer_->normalize(normalized);
            part = normalized;
        }
        norm.clear();
        if (normalized_added_.empty())
            norm.push_back({0, part.size(), -1});
        else
            normalized_added_.split(part, 0, norm);
        for (const Segment& n : norm) {
            if (n.id >= 0)
                out.push_back(n.id);
            else
                encode_text(part.substr(n.begin, n.end - n.begin), s.begin == 0 && n.begin == 0,
                            out);
        }
    }
    if (add_special_tokens) out.insert(out.end(), suffix_.begin(), suffix_.end());
    return out;
}

std::string HfTokenizer::decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const {
    std::vector<std::string> parts;
    parts.reserve(ids.size());
    for (TokenId id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) continue;
        const Entry& e = tokens_[id];
        if (!e.present || (skip_special_tokens && e.added == 2)) continue;
        parts.push_back(e.text);
    }
    std::string out;
    if (decoder_) {
        decoder_->decode_chain(parts, /*raw=*/false);
        for (const auto& p : parts) out += p;
    } else {
        for (size_t k = 0; k < parts.size(); ++k) out += (k ? " " : "") + parts[k];
    }
    return utf8::is_valid(out) ? out : utf8::replace_invalid(out);
}

std::optional<TokenId> HfTokenizer::token_to_id(std::string_view token) const {
    if (auto it = by_text_.find(std::string(token)); it != by_text_.end()) return it->second;
    TokenId id = vocab_.find(token);
    if (id < 0) return std::nullopt;
    return id;
}

std::optional<std::string> HfTokenizer::id_to_token(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !tokens_[id].present)
        return std::nullopt;
    return tokens_[id].text;
}

bool HfTokenizer::is_special(TokenId id) const {
    return id >= 0 && static_cast<size_t>(id) < tokens_.size() && tokens_[id].added == 2;
}

std::string HfTokenizer::token_bytes(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !tokens_[id].present) return {};
    std::vector<std::string> one{tokens_[id].text};
    if (decoder_) decoder_->decode_chain(one, /*raw=*/true);
    std::string out;
    for (const auto& p : one) out += p;
    return out;
}

}  // namespace myriad
