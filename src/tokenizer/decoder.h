// tokenizer.json decoders: turn the token strings of ids back into text. ByteLevel, Replace,
// Strip, ByteFallback, Fuse, Metaspace, Sequence, with HF's chain semantics (each decoder maps
// the list of token strings to a new list; the results are joined). Strings stay raw bytes until
// the caller replaces invalid UTF-8 at the very end.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace myriad {

class Decoder {
  public:
    virtual ~Decoder() = default;
    // `raw`: decoding one token on its own for streaming, so keep its bytes as they are (a byte
    // fallback token stays its byte; no first-token space strip).
    virtual void decode_chain(std::vector<std::string>& tokens, bool raw) const = 0;
};

// The decoder a tokenizer.json "decoder" object describes; nullptr for null.
std::unique_ptr<Decoder> make_decoder(const nlohmann::ordered_json& j, const std::string& source,
                                      const std::string& field);

}  // namespace myriad
