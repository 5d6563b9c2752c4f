#include "cli/line_reader.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace myriad::cli {

namespace {

constexpr int kHistoryLines = 1000;

// One byte from the terminal; an interrupted read (Ctrl-C, whose handler does not restart
// reads) is the end of input, so Ctrl-C at the prompt ends the chat as Ctrl-D does.
int read_byte(FILE*) {
    unsigned char c;
    return ::read(STDIN_FILENO, &c, 1) == 1 ? c : EOF;
}

}  // namespace

LineReader::LineReader(std::string prompt)
    : prompt_(std::move(prompt)), terminal_(isatty(STDIN_FILENO)) {
    if (!terminal_) return;
    // The prompt's escapes take no columns: libedit needs them marked to place the cursor.
    std::string marked;
    bool in_escape = false;
    for (char c : prompt_) {
        if (c == '\x1b' && !in_escape) marked += RL_PROMPT_START_IGNORE, in_escape = true;
        marked += c;
        if (in_escape && c == 'm') marked += RL_PROMPT_END_IGNORE, in_escape = false;
    }
    prompt_ = marked;
    rl_getc_function = read_byte;
    using_history();
    stifle_history(kHistoryLines);
    if (const char* home = std::getenv("HOME"); home && *home) {
        history_file_ = std::string(home) + "/.myriad_chat_history";
        read_history(history_file_.c_str());
    }
}

LineReader::~LineReader() {
    if (terminal_ && !history_file_.empty()) write_history(history_file_.c_str());
}

std::optional<std::string> LineReader::next() {
    if (!terminal_) {
        std::string line;
        if (!std::getline(std::cin, line)) return std::nullopt;
        return line;
    }
    char* raw = readline(prompt_.c_str());
    if (raw == nullptr) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    if (!line.empty()) add_history(line.c_str());
    return line;
}

}  // namespace myriad::cli
