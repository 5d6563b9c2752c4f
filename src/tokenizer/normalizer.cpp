#include "tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include <vector>

#include "format/json_fields.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad {

namespace {

bool all_ascii(const std::string& s) {
    for (char c : s)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

// The message names the tokenizer.json field, not the file: it may reach an API client.
[[noreturn]] void too_long(const std::string& field, size_t max_bytes) {
    bad_input(
        "tokenizer.json field {}: normalizing grows the text past {} bytes (32 times its "
        "length); the tokenizer's normalizers multiply the text",
        field, max_bytes);
}

class UnicodeForm : public Normalizer {
  public:
    explicit UnicodeForm(std::string_view form) {
        UErrorCode st = U_ZERO_ERROR;
        if (form == "NFC") n_ = icu::Normalizer2::getNFCInstance(st);
        if (form == "NFD") n_ = icu::Normalizer2::getNFDInstance(st);
        if (form == "NFKC") n_ = icu::Normalizer2::getNFKCInstance(st);
        if (form == "NFKD") n_ = icu::Normalizer2::getNFKDInstance(st);
        if (U_FAILURE(st) || n_ == nullptr)
            internal_error("ICU has no {} normalizer: {}", form, u_errorName(st));
    }
    void apply(std::string& text, size_t) const override {
        if (all_ascii(text)) return;  // ASCII is in every normalization form
        UErrorCode st = U_ZERO_ERROR;
        if (n_->isNormalizedUTF8(text, st) && U_SUCCESS(st)) return;
        st = U_ZERO_ERROR;
        std::string out;
        icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(text.size()));
        n_->normalizeUTF8(0, text, sink, nullptr, st);
        if (U_FAILURE(st)) internal_error("Unicode normalization failed: {}", u_errorName(st));
        text = std::move(out);
    }

  private:
    const icu::Normalizer2* n_ = nullptr;
};

// Each character on its own, as Rust's char::to_lowercase: full mappings (İ -> i̇) but no
// context (a final Σ stays σ, not ς).
class Lowercase : public Normalizer {
  public:
    void apply(std::string& text, size_t) const override {
        if (all_ascii(text)) {
            for (char& c : text)
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            return;
        }
        std::string out;
        out.reserve(text.size());
        for (size_t i = 0; i < text.size();) {
            size_t n;
            uint32_t cp = utf8::decode(text, i, &n);
            i += n;
            if (cp == 0x130) {  // the one unconditional multi-character lowercase mapping
                out += "i\xCC\x87";
                continue;
            }
            utf8::append(out, static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp))));
        }
        text = std::move(out);
    }
};

class Strip : public Normalizer {
  public:
    Strip(bool left, bool right) : left_(left), right_(right) {}
    void apply(std::string& text, size_t) const override {
        size_t b = 0, e = text.size();
        while (left_ && b < e) {
            size_t n;
            if (!is_white_space(utf8::decode(text, b, &n))) break;
            b += n;
        }
        while (right_ && e > b) {
            size_t s = e - 1;
            while (s > b && (static_cast<unsigned char>(text[s]) & 0xc0) == 0x80) --s;
            size_t n;
            if (!is_white_space(utf8::decode(text, s, &n))) break;
            e = s;
        }
        text = text.substr(b, e - b);
    }

  private:
    bool left_, right_;
};

class Prepend : public Normalizer {
  public:
    explicit Prepend(std::string p) : p_(std::move(p)) {}
    void apply(std::string& text, size_t) const override {
        if (!text.empty()) text.insert(0, p_);
    }

  private:
    std::string p_;
};

class Replace : public Normalizer {
  public:
    Replace(std::unique_ptr<Regex> re, std::string content, std::string field)
        : re_(std::move(re)), content_(std::move(content)), field_(std::move(field)) {}
    void apply(std::string& text, size_t max_bytes) const override {
        std::string out;
        size_t done = 0;
        re_->for_each_match(text, [&](size_t b, size_t e) {
            out.append(text, done, b - done);
            out += content_;
            done = e;
            if (out.size() > max_bytes) too_long(field_, max_bytes);
        });
        if (done == 0 && out.empty()) return;
        out.append(text, done, std::string::npos);
        text = std::move(out);
    }

  private:
    std::unique_ptr<Regex> re_;
    std::string content_;
    std::string field_;
};

class Sequence : public Normalizer {
  public:
    Sequence(std::vector<std::unique_ptr<Normalizer>> parts, std::vector<std::string> fields)
        : parts_(std::move(parts)), fields_(std::move(fields)) {}
    void apply(std::string& text, size_t max_bytes) const override {
        for (size_t k = 0; k < parts_.size(); ++k) {
            parts_[k]->apply(text, max_bytes);
            if (text.size() > max_bytes) too_long(fields_[k], max_bytes);
        }
    }

  private:
    std::vector<std::unique_ptr<Normalizer>> parts_;
    std::vector<std::string> fields_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::ordered_json& j,
                                            const std::string& source, const std::string& field) {
    if (j.is_null()) return nullptr;
    JsonFields f(j, source, field + ".");
    std::string type = f.string("type");
    if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD")
        return std::make_unique<UnicodeForm>(type);
    if (type == "Lowercase") return std::make_unique<Lowercase>();
    if (type == "Strip")
        return std::make_unique<Strip>(f.opt_boolean("strip_left").value_or(true),
                                       f.opt_boolean("strip_right").value_or(true));
    if (type == "Prepend") return std::make_unique<Prepend>(f.string("prepend"));
    if (type == "Replace") {
        const auto* p = f.find("pattern");
        if (p == nullptr) f.fail("pattern", "is missing");
        return std::make_unique<Replace>(make_pattern(*p, source, field + ".pattern"),
                                         f.string("content"), field);
    }
    if (type == "Sequence") {
        const auto* list = f.find("normalizers");
        if (list == nullptr || !list->is_array()) f.fail("normalizers", "must be an array");
        std::vector<std::unique_ptr<Normalizer>> parts;
        std::vector<std::string> fields;
        for (size_t k = 0; k < list->size(); ++k) {
            std::string name = fmt::format("{}.normalizers[{}]", field, k);
            auto n = make_normalizer((*list)[k], source, name);
            if (!n) continue;
            parts.push_back(std::move(n));
            fields.push_back(std::move(name));
        }
        return std::make_unique<Sequence>(std::move(parts), std::move(fields));
    }
    f.fail("type", fmt::format("is \"{}\": not supported (supported: NFC, NFD, NFKC, NFKD, "
                               "Lowercase, Strip, Replace, Prepend, Sequence)",
                               type));
}

}  // namespace myriad
