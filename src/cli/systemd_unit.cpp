#include "cli/systemd_unit.h"

#include <fmt/format.h>

namespace myriad::cli {

std::string systemd_quote(const std::string& word, bool exec) {
    std::string escaped;
    bool quote = word.empty();
    for (char ch : word) {
        if (ch == '%') {
            escaped += "%%";
        } else if (ch == '$' && exec) {
            escaped += "$$";
        } else if (ch == '"' || ch == '\\') {
            escaped += '\\';
            escaped += ch;
            quote = true;
        } else {
            if (ch == ' ' || ch == '\t' || ch == '\'' || ch == ';') quote = true;
            escaped += ch;
        }
    }
    return quote ? "\"" + escaped + "\"" : escaped;
}

std::string systemd_unit(const UnitOptions& o) {
    std::string u;
    u += "# Written by `myriad service install`. After editing: systemctl daemon-reload\n";
    for (const auto& c : o.comments) u += "# " + c + "\n";
    u += "[Unit]\n";
    u += "Description=" + o.description + "\n";
    u += "Wants=network-online.target\n";
    u += "After=network-online.target\n\n";
    u += "[Service]\n";
    // serve sends READY=1 once the model is loaded and warm; loading hundreds of GB may take
    // long, so no start timeout.
    u += "Type=notify\n";
    u += "NotifyAccess=main\n";
    std::string exec;
    for (const auto& w : o.exec) exec += (exec.empty() ? "" : " ") + systemd_quote(w);
    u += "ExecStart=" + exec + "\n";
    if (!o.user.empty()) u += "User=" + o.user + "\n";
    for (const auto& [k, v] : o.environment)
        u += "Environment=" + systemd_quote(k + "=" + v, false) + "\n";
    u += "Restart=on-failure\n";
    u += "RestartSec=5\n";
    u += "TimeoutStartSec=infinity\n";
    u += fmt::format("TimeoutStopSec={}\n", o.stop_timeout_s);
    u += "KillSignal=SIGTERM\n";
    // Pinned host buffers (cudaHostAlloc, NCCL) count against the locked-memory limit.
    u += "LimitMEMLOCK=infinity\n";
    u += "LimitNOFILE=1048576\n\n";
    u += "[Install]\n";
    u += "WantedBy=multi-user.target\n";
    return u;
}

}  // namespace myriad::cli
