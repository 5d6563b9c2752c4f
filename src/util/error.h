// Errors that carry the exit status the CLI returns: 2 for bad input (a file, a flag, a field),
// 1 for everything else. Messages name the thing and, where possible, the fix.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace myriad {

enum class ErrorKind { BadInput, Internal };

class Error : public std::runtime_error {
  public:
    Error(ErrorKind kind, std::string message)
        : std::runtime_error(std::move(message)), kind_(kind) {}
    ErrorKind kind() const { return kind_; }
    int exit_status() const { return kind_ == ErrorKind::BadInput ? 2 : 1; }

  private:
    ErrorKind kind_;
};

// Bad input: a file, field, flag or request the user can fix. Exit status 2.
template <typename... Args>
[[noreturn]] void bad_input(fmt::format_string<Args...> f, Args&&... args) {
    throw Error(ErrorKind::BadInput, fmt::format(f, std::forward<Args>(args)...));
}

// A failure that is not the input's fault (out of memory, a broken invariant). Exit status 1.
template <typename... Args>
[[noreturn]] void internal_error(fmt::format_string<Args...> f, Args&&... args) {
    throw Error(ErrorKind::Internal, fmt::format(f, std::forward<Args>(args)...));
}

#define MYRIAD_CHECK(cond, ...)                             \
    do {                                                    \
        if (!(cond)) ::myriad::internal_error(__VA_ARGS__); \
    } while (0)

}  // namespace myriad
