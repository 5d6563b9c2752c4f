#include "api/argument_text.h"

namespace myriad::api {

std::string_view trim_space(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

bool ArgumentText::held_char(char c) const {
    return is_space(c) || (fenced_ && c == '`');
}

void ArgumentText::push(std::string_view text, std::string& out) {
    if (!started_) {
        while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
        if (text.empty()) return;
        started_ = true;
    }
    size_t keep = text.size();
    while (keep > 0 && held_char(text[keep - 1])) --keep;
    if (keep == 0) {
        held_.append(text);
        return;
    }
    out += held_;
    out.append(text.substr(0, keep));
    held_.assign(text.substr(keep));
}

void ArgumentText::close(std::string& out) {
    std::string_view rest = held_;
    while (!rest.empty() && is_space(rest.back())) rest.remove_suffix(1);
    if (fenced_ && rest.ends_with("```")) {
        rest.remove_suffix(3);
        while (!rest.empty() && is_space(rest.back())) rest.remove_suffix(1);
    }
    out.append(rest);
    held_.clear();
}

}  // namespace myriad::api
