#include "format/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace myriad {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    size_t n;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2, cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, cp = c & 0x07u;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xc0u) != 0x80u) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3fu);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not valid UTF-8.
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

}  // namespace

std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
            ++i;
        } else if (size_t n = c >= 0x80 ? utf8_sequence_length(s, i) : 0; n > 0) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out += fmt::format("\\x{:02x}", c);
            ++i;
        }
    }
    return out;
}

std::string json_error_text(const nlohmann::json::exception& e) {
    std::string_view what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> "line 1, ..."
    if (auto tag = what.find("] "); what.starts_with("[json.exception.") && tag != what.npos)
        what.remove_prefix(tag + 2);
    if (what.starts_with("parse error at ")) what.remove_prefix(15);
    constexpr size_t kMaxLength = 200;
    std::string text = printable(what.substr(0, kMaxLength));
    if (what.size() > kMaxLength) text += "...";
    return text;
}

namespace {

template <typename Json>
Json parse_json_as(std::string_view text, const std::string& source) {
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        bad_input("{}: not valid JSON: {}", source, json_error_text(e));
    }
}

}  // namespace

nlohmann::ordered_json parse_json(std::string_view text, const std::string& source) {
    return parse_json_as<nlohmann::ordered_json>(text, source);
}

std::string read_text_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) bad_input("{}: is a folder, not a file", path);
    std::ifstream in(path, std::ios::binary);
    if (!in) bad_input("{}: cannot open: {}", path, std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) bad_input("{}: cannot read: {}", path, std::strerror(errno));
    return std::move(text).str();
}

nlohmann::ordered_json read_json_file(const std::string& path) {
    return parse_json_as<nlohmann::ordered_json>(read_text_file(path), path);
}

nlohmann::json read_json_file_unordered(const std::string& path) {
    return parse_json_as<nlohmann::json>(read_text_file(path), path);
}

}  // namespace myriad
