// tokenizer.json normalizers: NFC, NFD, NFKC, NFKD (ICU), Lowercase, Strip, Replace, Prepend,
// Sequence. They run on each stretch of text between added tokens, before pre-tokenization.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace myriad {

class Normalizer {
  public:
    virtual ~Normalizer() = default;
    // Rewrites `text` (valid UTF-8) in place. A text the normalizers would grow past
    // max_normalized_bytes(its size) (a chain of Replace normalizers) is bad input.
    void normalize(std::string& text) const { apply(text, max_normalized_bytes(text.size())); }

    // How long the normalized form of `input_bytes` of text may be: NFKD, the widest of the
    // Unicode forms, grows a character at most 11 times (U+FDFA); the rest is for Prepend.
    static size_t max_normalized_bytes(size_t input_bytes) { return 32 * input_bytes + 65536; }

    // Rewrites `text`; a part that would make it longer than `max_bytes` throws bad input.
    virtual void apply(std::string& text, size_t max_bytes) const = 0;
};

// The normalizer a tokenizer.json "normalizer" object describes; nullptr for null. `field` is
// the object's name in messages ("normalizer", "normalizer.normalizers[1]").
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::ordered_json& j,
                                            const std::string& source, const std::string& field);

}  // namespace myriad
