#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace myriad::byte_level {

namespace {

struct Tables {
    std::array<std::string, 256> chars;       // byte -> UTF-8 of its character
    std::array<int16_t, 0x144> byte_of_cp{};  // code point -> byte, -1 outside the alphabet

    Tables() {
        byte_of_cp.fill(-1);
        auto printable = [](int b) {
            return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        };
        int next = 256;
        for (int b = 0; b < 256; ++b) {
            uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(next++);
            utf8::append(chars[b], cp);
            byte_of_cp[cp] = static_cast<int16_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

std::string_view char_of(unsigned char b) {
    return tables().chars[b];
}

std::optional<std::string> to_bytes(std::string_view token) {
    const Tables& t = tables();
    std::string out;
    out.reserve(token.size());
    for (size_t i = 0; i < token.size();) {
        size_t n = utf8::char_length(token, i);
        if (n == 0) return std::nullopt;
        size_t len;
        uint32_t cp = utf8::decode(token, i, &len);
        if (cp >= t.byte_of_cp.size() || t.byte_of_cp[cp] < 0) return std::nullopt;
        out += static_cast<char>(t.byte_of_cp[cp]);
        i += n;
    }
    return out;
}

std::string from_bytes(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) out += char_of(b);
    return out;
}

}  // namespace myriad::byte_level
