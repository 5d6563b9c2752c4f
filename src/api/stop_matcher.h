// Stop strings, checked on the decoded text. While streaming, text that could be the start of a
// stop string is held back until the next text shows whether it is one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace myriad::api {

class StopMatcher {
  public:
    explicit StopMatcher(std::vector<std::string> stops, bool include_stop = false)
        : stops_(std::move(stops)), include_stop_(include_stop) {}

    // Adds `text`; returns what can be emitted now. Once a stop string completes, returns the
    // text before it (and the stop string itself with include_stop) and stopped() is true; later
    // text is dropped.
    std::string feed(std::string_view text);
    // The text still held back (none is a stop string): the end of the output.
    std::string flush();
    bool stopped() const { return stopped_; }
    const std::string& matched() const { return matched_; }

  private:
    std::vector<std::string> stops_;
    bool include_stop_;
    std::string held_;
    bool stopped_ = false;
    std::string matched_;
};

}  // namespace myriad::api
