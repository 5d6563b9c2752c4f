// systemd's readiness protocol (sd_notify(3)): newline-separated KEY=VALUE assignments sent as
// one datagram to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or '@' for the abstract
// namespace). `myriad serve` sends STATUS= while loading, READY=1 once it serves, STOPPING=1 when
// it drains. Without NOTIFY_SOCKET nothing is sent.
#pragma once

#include <string_view>

namespace myriad {

// Sends `message` (e.g. "READY=1\nSTATUS=serving"); false when NOTIFY_SOCKET is unset or the
// datagram could not be sent (systemd then times out on its own; nothing else to do).
bool sd_notify(std::string_view message);

}  // namespace myriad
