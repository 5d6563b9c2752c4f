#include "api/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace myriad::api {

std::string StopMatcher::feed(std::string_view text) {
    if (stopped_) return {};
    held_.append(text);
    if (stops_.empty()) return std::exchange(held_, {});
    // The earliest complete stop string wins.
    size_t best = std::string::npos;
    for (const std::string& s : stops_) {
        const size_t at = held_.find(s);
        if (at != std::string::npos && (at < best || (at == best && s.size() > matched_.size()))) {
            best = at;
            matched_ = s;
        }
    }
    if (best != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, best + (include_stop_ ? matched_.size() : 0));
        held_.clear();
        return out;
    }
    // Hold back the longest tail of the text that is a proper prefix of some stop string.
    size_t hold = 0;
    for (const std::string& s : stops_) {
        const size_t most = std::min(s.size() - 1, held_.size());
        for (size_t n = most; n > hold; --n)
            if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
                hold = n;
                break;
            }
    }
    std::string out = held_.substr(0, held_.size() - hold);
    held_.erase(0, held_.size() - hold);
    return out;
}

std::string StopMatcher::flush() {
    if (stopped_) return {};
    return std::exchange(held_, {});
}

}  // namespace myriad::api
