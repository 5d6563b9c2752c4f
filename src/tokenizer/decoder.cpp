#include "tokenizer/decoder.h"

#include "format/json_fields.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace myriad {

namespace {

class ByteLevelDecoder : public Decoder {
  public:
    void decode_chain(std::vector<std::string>& tokens, bool) const override {
        std::string bytes;
        for (const std::string& t : tokens) {
            // A token outside the alphabet (an added token such as "<｜User｜>") is its own text.
            if (auto b = byte_level::to_bytes(t))
                bytes += *b;
            else
                bytes += t;
        }
        tokens.assign(1, std::move(bytes));
    }
};

class ReplaceDecoder : public Decoder {
  public:
    ReplaceDecoder(std::unique_ptr<Regex> re, std::string content)
        : re_(std::move(re)), content_(std::move(content)) {}
    void decode_chain(std::vector<std::string>& tokens, bool) const override {
        for (std::string& t : tokens) {
            if (!utf8::is_valid(t)) continue;  // raw bytes of a partial character
            std::string out;
            size_t done = 0;
            re_->for_each_match(t, [&](size_t b, size_t e) {
                out.append(t, done, b - done);
                out += content_;
                done = e;
            });
            out.append(t, done, std::string::npos);
            t = std::move(out);
        }
    }

  private:
    std::unique_ptr<Regex> re_;
    std::string content_;
};

class StripDecoder : public Decoder {
  public:
    StripDecoder(std::string content, size_t start, size_t stop)
        : content_(std::move(content)), start_(start), stop_(stop) {}
    void decode_chain(std::vector<std::string>& tokens, bool) const override {
        for (std::string& t : tokens) {
            size_t b = 0;
            for (size_t k = 0; k < start_ && t.compare(b, content_.size(), content_) == 0; ++k)
                b += content_.size();
            size_t e = t.size();
            for (size_t k = 0; k < stop_ && e >= b + content_.size() &&
                               t.compare(e - content_.size(), content_.size(), content_) == 0;
                 ++k)
                e -= content_.size();
            t = t.substr(b, e - b);
        }
    }

  private:
    std::string content_;
    size_t start_, stop_;
};

// "<0xNN>" -> the byte; runs of them must form valid UTF-8, else each becomes U+FFFD (HF).
class ByteFallbackDecoder : public Decoder {
  public:
    static int byte_of(const std::string& t) {
        if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
        int v = 0;
        for (int i = 3; i < 5; ++i) {
            char c = t[i];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                           : -1;
            if (d < 0) return -1;
            v = v * 16 + d;
        }
        return v;
    }
    void decode_chain(std::vector<std::string>& tokens, bool raw) const override {
        std::vector<std::string> out;
        std::string run;
        size_t run_tokens = 0;
        auto flush = [&] {
            if (run_tokens == 0) return;
            if (utf8::is_valid(run)) {
                out.push_back(run);
            } else {
                std::string rep;
                for (size_t k = 0; k < run_tokens; ++k) rep += utf8::kReplacement;
                out.push_back(rep);
            }
            run.clear();
            run_tokens = 0;
        };
        for (std::string& t : tokens) {
            int b = byte_of(t);
            if (b >= 0 && raw) {
                out.push_back(std::string(1, static_cast<char>(b)));
            } else if (b >= 0) {
                run += static_cast<char>(b);
                ++run_tokens;
            } else {
                flush();
                out.push_back(std::move(t));
            }
        }
        flush();
        tokens = std::move(out);
    }
};

class FuseDecoder : public Decoder {
  public:
    void decode_chain(std::vector<std::string>& tokens, bool) const override {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
    }
};

class MetaspaceDecoder : public Decoder {
  public:
    MetaspaceDecoder(std::string rep, bool strip_first)
        : rep_(std::move(rep)), strip_(strip_first) {}
    void decode_chain(std::vector<std::string>& tokens, bool raw) const override {
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::string out;
            const std::string& t = tokens[i];
            for (size_t k = 0; k < t.size();) {
                if (t.compare(k, rep_.size(), rep_) == 0) {
                    out += ' ';
                    k += rep_.size();
                } else {
                    out += t[k++];
                }
            }
            if (i == 0 && strip_ && !raw && out.starts_with(' ')) out.erase(0, 1);
            tokens[i] = std::move(out);
        }
    }

  private:
    std::string rep_;
    bool strip_;
};

class SequenceDecoder : public Decoder {
  public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
        : parts_(std::move(parts)) {}
    void decode_chain(std::vector<std::string>& tokens, bool raw) const override {
        for (const auto& p : parts_) p->decode_chain(tokens, raw);
    }

  private:
    std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::ordered_json& j, const std::string& source,
                                      const std::string& field) {
    if (j.is_null()) return nullptr;
    JsonFields f(j, source, field + ".");
    std::string type = f.string("type");
    if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
    if (type == "Replace") {
        const auto* p = f.find("pattern");
        if (p == nullptr) f.fail("pattern", "is missing");
        return std::make_unique<ReplaceDecoder>(make_pattern(*p, source, field + ".pattern"),
                                                f.string("content"));
    }
    if (type == "Strip") {
        int64_t start = f.opt_integer("start").value_or(0);
        int64_t stop = f.opt_integer("stop").value_or(0);
        if (start < 0 || stop < 0) f.fail("start", "and stop must be ≥ 0");
        std::string content = f.string("content");
        if (content.empty()) f.fail("content", "is empty");
        return std::make_unique<StripDecoder>(content, static_cast<size_t>(start),
                                              static_cast<size_t>(stop));
    }
    if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
    if (type == "Fuse") return std::make_unique<FuseDecoder>();
    if (type == "Metaspace") {
        std::string rep = f.opt_string("replacement").value_or("\xE2\x96\x81");
        if (rep.empty()) f.fail("replacement", "is empty");
        bool strip = true;
        if (auto scheme = f.opt_string("prepend_scheme"))
            strip = *scheme != "never";
        else if (auto add = f.opt_boolean("add_prefix_space"))
            strip = *add;
        return std::make_unique<MetaspaceDecoder>(rep, strip);
    }
    if (type == "Sequence") {
        const auto* list = f.find("decoders");
        if (list == nullptr || !list->is_array()) f.fail("decoders", "must be an array");
        std::vector<std::unique_ptr<Decoder>> parts;
        for (size_t k = 0; k < list->size(); ++k) {
            auto d = make_decoder((*list)[k], source, fmt::format("{}.decoders[{}]", field, k));
            if (d) parts.push_back(std::move(d));
        }
        return std::make_unique<SequenceDecoder>(std::move(parts));
    }
    f.fail("type", fmt::format("is \"{}\": not supported (supported: ByteLevel, Replace, Strip, "
                               "ByteFallback, Fuse, Metaspace, Sequence)",
                               type));
}

}  // namespace myriad
