#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <cctype>

#include "format/json_fields.h"
#include "tokenizer/regex.h"
#include "util/error.h"

namespace myriad {

namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// GPT-2's pre-tokenizer regex (ByteLevel with use_regex).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Cuts every piece at the matches of `re`, keeping matches and gaps as `behavior` says.
void split_pieces(Pieces& p, const Regex& re, Behavior behavior, bool invert) {
    std::vector<Pieces::Span> out;
    out.reserve(p.spans.size() * 2);
    struct Part {
        uint32_t begin, end;
        bool is_match;
    };
    std::vector<Part> parts;
    for (const Pieces::Span& s : p.spans) {
        std::string_view piece = p.view(s);
        parts.clear();
        uint32_t prev = 0;
        re.for_each_match(piece, [&](size_t b, size_t e) {
            if (prev != b) parts.push_back({prev, static_cast<uint32_t>(b), invert});
            parts.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e), !invert});
            prev = static_cast<uint32_t>(e);
        });
        if (prev != piece.size())
            parts.push_back({prev, static_cast<uint32_t>(piece.size()), invert});
        // Merge per behavior (HF's NormalizedString::split), as (begin, end, removed).
        std::vector<Part> kept;  // is_match now means "remove"
        bool previous_match = false;
        switch (behavior) {
            case Behavior::Isolated:
                for (const Part& q : parts) kept.push_back({q.begin, q.end, false});
                break;
            case Behavior::Removed:
                kept = parts;
                break;
            case Behavior::Contiguous:
                for (const Part& q : parts) {
                    if (q.is_match == previous_match && !kept.empty())
                        kept.back().end = q.end;
                    else
                        kept.push_back({q.begin, q.end, false});
                    previous_match = q.is_match;
                }
                break;
            case Behavior::MergedWithPrevious:
                for (const Part& q : parts) {
                    if (q.is_match && !previous_match && !kept.empty())
                        kept.back().end = q.end;
                    else
                        kept.push_back({q.begin, q.end, false});
                    previous_match = q.is_match;
                }
                break;
            case Behavior::MergedWithNext:
                for (size_t k = parts.size(); k-- > 0;) {
                    const Part& q = parts[k];
                    if (q.is_match && !previous_match && !kept.empty())
                        kept.back().begin = q.begin;
                    else
                        kept.push_back({q.begin, q.end, false});
                    previous_match = q.is_match;
                }
                std::reverse(kept.begin(), kept.end());
                break;
        }
        for (const Part& q : kept)
            if (!q.is_match && q.end > q.begin)
                out.push_back({s.begin + q.begin, s.begin + q.end, s.at_origin && q.begin == 0});
    }
    p.spans = std::move(out);
}

// Rebuilds the text with each piece passed through `edit` (which appends the new piece).
template <typename Edit>
void rewrite_pieces(Pieces& p, Edit edit) {
    std::string text;
    text.reserve(p.text.size() + p.spans.size());
    std::vector<Pieces::Span> spans;
    spans.reserve(p.spans.size());
    for (const Pieces::Span& s : p.spans) {
        auto begin = static_cast<uint32_t>(text.size());
        edit(p.view(s), s.at_origin, text);
        spans.push_back({begin, static_cast<uint32_t>(text.size()), s.at_origin});
    }
    p.text = std::move(text);
    p.spans = std::move(spans);
}

class Split : public PreTokenizer {
  public:
    Split(std::unique_ptr<Regex> re, Behavior b, bool invert)
        : re_(std::move(re)), behavior_(b), invert_(invert) {}
    void apply(Pieces& p) const override { split_pieces(p, *re_, behavior_, invert_); }

  private:
    std::unique_ptr<Regex> re_;
    Behavior behavior_;
    bool invert_;
};

class ByteLevel : public PreTokenizer {
  public:
    ByteLevel(bool add_prefix_space, bool use_regex, const std::string& source)
        : add_prefix_space_(add_prefix_space) {
        if (use_regex) re_ = std::make_unique<Regex>(kGpt2Pattern, source);
    }
    void apply(Pieces& p) const override {
        if (add_prefix_space_) {
            bool needed = false;
            for (const auto& s : p.spans) needed |= p.view(s).empty() || p.view(s)[0] != ' ';
            if (needed)
                rewrite_pieces(p, [](std::string_view piece, bool, std::string& out) {
                    if (piece.empty() || piece[0] != ' ') out += ' ';
                    out += piece;
                });
        }
        if (re_) split_pieces(p, *re_, Behavior::Isolated, false);
        // The byte -> character mapping of the alphabet is implicit: BPE runs on raw bytes.
    }

  private:
    bool add_prefix_space_;
    std::unique_ptr<Regex> re_;
};

class Metaspace : public PreTokenizer {
  public:
    enum class Prepend { Always, First, Never };
    Metaspace(std::string replacement, Prepend prepend, bool split, const std::string& source)
        : rep_(std::move(replacement)), prepend_(prepend) {
        if (split) {
            std::string escaped;
            for (char c : rep_) {
                auto u = static_cast<unsigned char>(c);
                if (u < 0x80 && !std::isalnum(u)) escaped += '\\';
                escaped += c;
            }
            re_ = std::make_unique<Regex>(escaped, source, /*translate=*/false);
        }
    }
    void apply(Pieces& p) const override {
        rewrite_pieces(p, [&](std::string_view piece, bool at_origin, std::string& out) {
            bool starts = piece.starts_with(rep_) || piece.starts_with(' ');
            if (!starts &&
                (prepend_ == Prepend::Always || (prepend_ == Prepend::First && at_origin)))
                out += rep_;
            for (char c : piece) {
                if (c == ' ')
                    out += rep_;
                else
                    out += c;
            }
        });
        if (re_) split_pieces(p, *re_, Behavior::MergedWithNext, false);
    }

  private:
    std::string rep_;
    Prepend prepend_;
    std::unique_ptr<Regex> re_;
};

class Sequence : public PreTokenizer {
  public:
    explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts)
        : parts_(std::move(parts)) {}
    void apply(Pieces& p) const override {
        for (const auto& part : parts_) part->apply(p);
    }

  private:
    std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

Behavior parse_behavior(const JsonFields& f) {
    std::string b = f.string("behavior");
    if (b == "Removed") return Behavior::Removed;
    if (b == "Isolated") return Behavior::Isolated;
    if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (b == "MergedWithNext") return Behavior::MergedWithNext;
    if (b == "Contiguous") return Behavior::Contiguous;
    f.fail("behavior", fmt::format("is \"{}\": expected Removed, Isolated, MergedWithPrevious, "
                                   "MergedWithNext or Contiguous",
                                   b));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::ordered_json& j,
                                                 const std::string& source,
                                                 const std::string& field) {
    if (j.is_null()) return nullptr;
    JsonFields f(j, source, field + ".");
    std::string type = f.string("type");
    if (type == "Split") {
        const auto* pattern = f.find("pattern");
        if (pattern == nullptr) f.fail("pattern", "is missing");
        return std::make_unique<Split>(make_pattern(*pattern, source, field + ".pattern"),
                                       parse_behavior(f), f.opt_boolean("invert").value_or(false));
    }
    if (type == "ByteLevel")
        return std::make_unique<ByteLevel>(f.opt_boolean("add_prefix_space").value_or(true),
                                           f.opt_boolean("use_regex").value_or(true), source);
    if (type == "Digits") {
        bool individual = f.opt_boolean("individual_digits").value_or(false);
        return std::make_unique<Split>(
            std::make_unique<Regex>(individual ? "\\p{N}" : "\\p{N}+", source, false),
            Behavior::Isolated, false);
    }
    if (type == "Metaspace") {
        std::string rep = f.opt_string("replacement").value_or("\xE2\x96\x81");  // U+2581
        if (rep.empty()) f.fail("replacement", "is empty");
        Metaspace::Prepend prepend = Metaspace::Prepend::Always;
        if (auto scheme = f.opt_string("prepend_scheme")) {
            if (*scheme == "always")
                prepend = Metaspace::Prepend::Always;
            else if (*scheme == "first")
                prepend = Metaspace::Prepend::First;
            else if (*scheme == "never")
                prepend = Metaspace::Prepend::Never;
            else
                f.fail("prepend_scheme",
                       fmt::format("is \"{}\": expected always, first or never", *scheme));
        } else if (auto add = f.opt_boolean("add_prefix_space")) {
            prepend = *add ? Metaspace::Prepend::Always : Metaspace::Prepend::Never;
        }
        return std::make_unique<Metaspace>(rep, prepend, f.opt_boolean("split").value_or(true),
                                           source);
    }
    if (type == "Sequence") {
        const auto* list = f.find("pretokenizers");
        if (list == nullptr || !list->is_array()) f.fail("pretokenizers", "must be an array");
        std::vector<std::unique_ptr<PreTokenizer>> parts;
        for (size_t k = 0; k < list->size(); ++k) {
            auto p = make_pre_tokenizer((*list)[k], source,
                                        fmt::format("{}.pretokenizers[{}]", field, k));
            if (p) parts.push_back(std::move(p));
        }
        return std::make_unique<Sequence>(std::move(parts));
    }
    f.fail("type", fmt::format("is \"{}\": not supported (supported: Split, ByteLevel, Digits, "
                               "Metaspace, Sequence)",
                               type));
}

bool has_byte_level(const nlohmann::ordered_json& j) {
    if (!j.is_object()) return false;
    auto type = j.find("type");
    if (type != j.end() && *type == "ByteLevel") return true;
    auto list = j.find("pretokenizers");
    if (list != j.end() && list->is_array())
        for (const auto& p : *list)
            if (has_byte_level(p)) return true;
    return false;
}

}  // namespace myriad
