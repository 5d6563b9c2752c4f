#include "util/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace myriad {

std::string human_size(double b) {
    const char* units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000.0 && u < 4) {
        b /= 1000.0;
        ++u;
    }
    return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

std::string human_duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const auto t = static_cast<int64_t>(s + 0.5);
    if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t % 3600 / 60);
    if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
    return fmt::format("{}s", t);
}

Progress::Progress(std::string label, int64_t total, int64_t done, std::FILE* out,
                   std::function<void(const std::string&)> status)
    : label_(std::move(label)),
      total_(total),
      start_done_(done),
      out_(out),
      status_(std::move(status)),
      done_(done),
      tty_(out != nullptr && ::isatty(::fileno(out)) == 1),
      interval_s_(tty_ ? 0.25 : 10.0),
      start_(std::chrono::steady_clock::now()) {
    if (const char* v = std::getenv("MYRIAD_PROGRESS_INTERVAL"); v && !tty_) {
        const double d = std::atof(v);
        if (d > 0) interval_s_ = d;
    }
    thread_ = std::thread([this] { run(); });
}

Progress::~Progress() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    print(true);
}

std::string Progress::line() const {
    const int64_t done = done_.load();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = secs > 0 ? static_cast<double>(done - start_done_) / secs : 0;
    const double pct =
        total_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0;
    const std::string eta =
        rate > 0 ? human_duration(static_cast<double>(total_ - done) / rate) : "?";
    std::string bar;
    if (tty_) {
        // Appended piece by piece: gcc 12 reports a false -Wrestrict on a chain of string `+`.
        const int width = 30;
        const int filled = std::clamp(static_cast<int>(pct / 100.0 * width), 0, width);
        bar += '[';
        bar.append(static_cast<size_t>(filled), '#');
        bar.append(static_cast<size_t>(width - filled), ' ');
        bar += "] ";
    }
    return fmt::format("{}: {}{} / {} ({:.1f}%), {}/s, ETA {}", label_, bar,
                       human_size(static_cast<double>(done)),
                       human_size(static_cast<double>(total_)), pct, human_size(rate), eta);
}

void Progress::print(bool final) {
    std::lock_guard lock(mu_);
    const std::string l = line();
    if (out_ != nullptr) {  // none: the status hook alone
        if (tty_)
            std::fprintf(out_, "\r\033[K%s%s", l.c_str(), final ? "\n" : "");
        else
            std::fprintf(out_, "%s\n", l.c_str());
        std::fflush(out_);
    }
    if (status_) status_(l);
}

void Progress::note(const std::string& text) {
    std::lock_guard lock(mu_);
    if (out_ == nullptr) return;
    if (tty_)
        std::fprintf(out_, "\r\033[K%s\n%s", text.c_str(), line().c_str());
    else
        std::fprintf(out_, "%s\n", text.c_str());
    std::fflush(out_);
}

void Progress::run() {
    std::unique_lock lock(mu_);
    while (!stop_) {
        cv_.wait_for(lock, std::chrono::duration<double>(interval_s_));
        if (stop_) break;
        lock.unlock();
        print(false);
        lock.lock();
    }
}

}  // namespace myriad
