// The lines `myriad chat` reads: on a terminal through libedit (line editing, and a history kept
// across sessions in ~/.myriad_chat_history); from a pipe or file as plain lines.
#pragma once

#include <optional>
#include <string>

namespace myriad::cli {

class LineReader {
  public:
    // `prompt` is shown before each line on a terminal (it may hold colour escapes).
    explicit LineReader(std::string prompt);
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    // The next line without its newline; nullopt at the end of input (Ctrl-D).
    std::optional<std::string> next();

    bool terminal() const { return terminal_; }

  private:
    std::string prompt_;
    std::string history_file_;
    bool terminal_ = false;
};

}  // namespace myriad::cli
