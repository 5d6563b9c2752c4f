// Pre-tokenizer regexes through PCRE2 (UTF, Unicode properties, JIT). Patterns are written for
// Rust's regex/fancy-regex (tiktoken) and Oniguruma (HF tokenizers); translate_pattern() turns
// them into PCRE2 patterns that match the same characters:
//   - `\s`/`\S` mean Unicode White_Space there; PCRE2's UCP `\s` also takes U+180E: spelled out.
//   - `\p{Han}` (a script name) means the Script property there, Script_Extensions in PCRE2
//     (which would pull in "。"): written `\p{sc:Han}`.
//   - class intersection `[A&&B]` (Kimi's `[\p{Lu}...&&[^\p{Han}]]`), which PCRE2 lacks, becomes
//     `(?:(?=B)A)`: one character that B accepts and A matches.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace myriad {

// The PCRE2 form of a Rust/Oniguruma pattern (see above). Throws bad input on an unbalanced
// class, naming `source`.
std::string translate_pattern(std::string_view pattern, std::string_view source);

class Regex {
  public:
    // Compiles translate_pattern(pattern) (or `pattern` as is when `translate` is false).
    // Errors are bad input: "<source>: regex <pattern>: <PCRE2's reason> at offset N".
    Regex(std::string_view pattern, std::string_view source, bool translate = true);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Calls on_match(begin, end) for each match in `text` (valid UTF-8), left to right, without
    // overlap; an empty match advances by one character. Look-arounds see only `text`. A match
    // that hits PCRE2's resource limits is bad input.
    template <typename F>
    void for_each_match(std::string_view text, F&& on_match) const {
        size_t pos = 0;
        size_t begin, end;
        while (pos <= text.size() && next_match(text, pos, &begin, &end)) {
            on_match(begin, end);
            pos = end > begin ? end : advance(text, end);
        }
    }

    const std::string& pattern() const { return pattern_; }

  private:
    bool next_match(std::string_view text, size_t from, size_t* begin, size_t* end) const;
    static size_t advance(std::string_view text, size_t pos);

    std::string pattern_;  // as compiled
    std::string source_;
    void* code_ = nullptr;  // pcre2_code_8
    bool jit_ = false;
};

// A tokenizer.json pattern object: {"String": "literal"} or {"Regex": "..."}; `field` names it in
// messages.
std::unique_ptr<Regex> make_pattern(const nlohmann::ordered_json& j, const std::string& source,
                                    const std::string& field);

}  // namespace myriad
