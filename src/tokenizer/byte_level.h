// GPT-2's byte-level alphabet: each of the 256 bytes is written as one printable character
// (printable Latin-1 bytes as themselves, the rest as U+0100 upwards), so that byte-level BPE
// vocabularies in tokenizer.json are valid UTF-8 strings ("Ġ" is the space byte).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace myriad::byte_level {

// The character (UTF-8) that stands for byte b.
std::string_view char_of(unsigned char b);

// The bytes a byte-level token string stands for; nullopt when it has a character outside the
// alphabet.
std::optional<std::string> to_bytes(std::string_view token);

// The byte-level string of raw bytes.
std::string from_bytes(std::string_view bytes);

}  // namespace myriad::byte_level
