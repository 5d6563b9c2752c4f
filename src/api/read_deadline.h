// A deadline for reading each request, its headers and its body, however its bytes trickle:
// cpp-httplib's read timeout restarts with every byte, so a client sending one byte a second
// would hold a worker thread (and a SIGTERM'd server) for ever. A watchdog thread looks at the
// server's connections every second; one that has spent longer than the deadline outside a
// handler (reading a request, or idle past keep-alive) is shut down and logged.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace myriad::api {

class ReadDeadline {
  public:
    ReadDeadline(int local_port, std::chrono::milliseconds deadline);
    ~ReadDeadline();  // stops the watchdog
    ReadDeadline(const ReadDeadline&) = delete;
    ReadDeadline& operator=(const ReadDeadline&) = delete;

  private:
    void watch();

    int port_;
    std::chrono::milliseconds deadline_;
    std::map<std::pair<int, std::pair<std::string, int>>, std::chrono::steady_clock::time_point>
        reading_since_;  // (fd, peer) -> when it was first seen outside a handler
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace myriad::api
