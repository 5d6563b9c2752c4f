// Server metrics in Prometheus' text format: requests by endpoint and status, token counters,
// time-to-first-token and inter-token-latency histograms, and the engine's gauges.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace myriad::api {

class Histogram {
  public:
    static constexpr std::array<double, 14> kBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08,
                                                       0.1,   0.25,  0.5,  1.0,  2.5,  5.0,  10.0};
    void observe(double seconds);
    void render(std::string& out, const char* name, const char* help) const;

  private:
    std::array<uint64_t, kBounds.size() + 1> counts_{};  // last: +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

class Metrics {
  public:
    void request_done(const std::string& endpoint, int status);
    void tokens(int64_t prompt, int64_t cached, int64_t generated);
    void time_to_first_token(double seconds);
    void inter_token_latency(double seconds);
    // serve's start-up breakdown, (phase, seconds), set once at READY: myriad_startup_seconds.
    void set_startup(std::vector<std::pair<std::string, double>> phases);
    // The text for GET /metrics, with the engine's current gauges.
    std::string render(const EngineStats& engine, bool ready) const;

  private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    int64_t prompt_ = 0, cached_ = 0, generated_ = 0;
    Histogram ttft_, itl_;
    std::vector<std::pair<std::string, double>> startup_;
};

}  // namespace myriad::api
