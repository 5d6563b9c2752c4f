// The arguments of one tool call while they stream. Leading white space is dropped; trailing
// white space (and, for DeepSeek-V3's fenced arguments, the backticks of the closing ``` fence)
// is held back until more text shows it is not the end, so the streamed fragments add up to the
// trimmed arguments however the text was chunked.
#pragma once

#include <string>
#include <string_view>

namespace myriad::api {

class ArgumentText {
  public:
    explicit ArgumentText(bool fenced = false) : fenced_(fenced) {}

    // More argument text; appends what is decided to `out`.
    void push(std::string_view text, std::string& out);
    // The arguments ended: appends the rest less trailing white space (and a closing fence).
    void close(std::string& out);

  private:
    bool held_char(char c) const;

    bool fenced_;
    bool started_ = false;  // a non-white-space character came
    std::string held_;
};

// ASCII white space, as the parsers trim it.
inline bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
std::string_view trim_space(std::string_view s);

}  // namespace myriad::api
