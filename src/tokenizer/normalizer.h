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
    // Rewrites `text` (valid UTF-8) in place.
    virtual void normalize(std::string& text) const = 0;
};

// The normalizer a tokenizer.json "normalizer" object describes; nullptr for null. `field` is
// the object's name in messages ("normalizer", "normalizer.normalizers[1]").
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::ordered_json& j,
                                            const std::string& source, const std::string& field);

}  // namespace myriad
