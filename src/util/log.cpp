#include "util/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace myriad::log {

namespace {
std::atomic<Level> g_level{Level::Info};
std::mutex g_mutex;
}  // namespace

void set_level(Level level) {
    g_level = level;
}
Level level() {
    return g_level;
}

void write(Level level, std::string_view message) {
    static const char* const kNames[] = {"debug", "info", "warning", "error"};
    std::lock_guard<std::mutex> lock(g_mutex);
    std::fprintf(stderr, "myriad: %s: %.*s\n", kNames[static_cast<int>(level)],
                 static_cast<int>(message.size()), message.data());
}

}  // namespace myriad::log
