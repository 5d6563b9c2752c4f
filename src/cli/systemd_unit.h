// The systemd unit `myriad service install` writes: a Type=notify service (serve reports
// readiness with sd_notify), restarted on failure, ordered after the network is up, with the
// limits a large-model server needs (locked memory for pinned buffers, many sockets).
#pragma once

#include <string>
#include <vector>

namespace myriad::cli {

struct UnitOptions {
    std::string description;
    std::vector<std::string> exec;  // ExecStart argv: the executable, "serve", MODEL, flags
    std::string user;               // empty: no User= (root)
    std::vector<std::pair<std::string, std::string>> environment;
    std::vector<std::string> comments;  // lines at the top saying what was chosen and why
    int stop_timeout_s = 60;            // serve drains for up to --drain-timeout (30 s) first
};

std::string systemd_unit(const UnitOptions& options);

// One ExecStart word (exec) or Environment= assignment as systemd reads it: quoted when it holds
// spaces or quotes, '%' written "%%" (specifiers), and in ExecStart '$' written "$$".
std::string systemd_quote(const std::string& word, bool exec = true);

}  // namespace myriad::cli
