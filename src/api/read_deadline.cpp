#include "api/read_deadline.h"

#include <sys/socket.h>

#include <set>

#include "api/client_connection.h"
#include "util/log.h"

namespace myriad::api {

ReadDeadline::ReadDeadline(int local_port, std::chrono::milliseconds deadline)
    : port_(local_port), deadline_(deadline), thread_([this] { watch(); }) {}

ReadDeadline::~ReadDeadline() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void ReadDeadline::watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
        const auto now = std::chrono::steady_clock::now();
        std::set<std::pair<int, std::pair<std::string, int>>> seen;
        for (const Connection& c : connections(port_)) {
            auto key = std::make_pair(c.fd, std::make_pair(c.remote_addr, c.remote_port));
            seen.insert(key);
            if (serving(c.remote_addr, c.remote_port)) {
                reading_since_.erase(key);
                continue;
            }
            auto [it, fresh] = reading_since_.try_emplace(key, now);
            if (!fresh && now - it->second > deadline_) {
                log::warn(
                    "client {}:{} did not send a whole request within {} s "
                    "(--request-read-timeout): connection closed",
                    c.remote_addr, c.remote_port,
                    std::chrono::duration_cast<std::chrono::seconds>(deadline_).count());
                shutdown(c.fd, SHUT_RDWR);
                it->second = now;  // once per deadline, if the worker is slow to let it go
            }
        }
        std::erase_if(reading_since_, [&](const auto& kv) { return !seen.count(kv.first); });
    }
}

}  // namespace myriad::api
