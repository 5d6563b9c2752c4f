#include "api/client_connection.h"

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>

#include "util/log.h"

namespace myriad::api {

namespace {
thread_local ClientConnection* t_current = nullptr;
}

ClientConnection::ClientConnection(int fd, std::string remote_addr, int remote_port)
    : fd_(fd),
      remote_addr_(std::move(remote_addr)),
      remote_port_(remote_port),
      start_(std::chrono::steady_clock::now()),
      next_check_(start_ + std::chrono::milliseconds(100)) {}

bool ClientConnection::closed() {
    if (closed_) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_check_) return false;
    next_check_ = now + std::chrono::milliseconds(50);
    if (fd_ < 0) return false;
    char c;
    const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    // 0: orderly close; an error other than "nothing to read": reset. Data (a pipelined next
    // request) means the client is still there.
    closed_ = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    return closed_;
}

void ClientConnection::pause(bool on) {
    for (auto& h : handles_) h->pause(on);
}

bool ClientConnection::wait_for_reader(size_t next, size_t max_unsent,
                                       std::chrono::milliseconds timeout) {
    if (fd_ < 0) return true;  // no socket: nothing to measure, the write timeout still holds
    // Bytes in the send queue: written by us, not yet acknowledged by the client's TCP (whose
    // window closes when the client reads nothing).
    auto unsent = [this] {
        int n = 0;
        return ioctl(fd_, SIOCOUTQ, &n) == 0 && n > 0 ? static_cast<size_t>(n) : size_t{0};
    };
    auto writable = [this] {
        pollfd p{fd_, POLLOUT, 0};
        return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT);
    };
    size_t q = unsent();
    auto fits = [&] { return (q == 0 || q + next <= max_unsent) && writable(); };
    if (fits()) return true;
    pause(true);
    if (!told_paused_) {
        log::info(
            "client {}:{} is not reading its stream ({} bytes unsent, --max-unsent-bytes "
            "{}): its sequences are paused",
            remote_addr_, remote_port_, q, max_unsent);
        told_paused_ = true;
    }
    auto last_progress = std::chrono::steady_clock::now();
    for (;;) {
        pollfd p{fd_, 0, 0};  // no events: a 20 ms sleep that a hang-up or error cuts short
        poll(&p, 1, 20);
        next_check_ = {};  // look now, not 50 ms after the last look
        if (closed()) {
            pause(false);
            return false;
        }
        const size_t now_q = unsent();
        const auto now = std::chrono::steady_clock::now();
        if (now_q < q) last_progress = now;
        q = now_q;
        if (fits()) {
            pause(false);
            return true;
        }
        if (now - last_progress >= timeout) {
            log::warn(
                "client {}:{} read nothing of its stream for {} s ({} bytes unsent): its "
                "request is cancelled and its KV blocks freed",
                remote_addr_, remote_port_,
                std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), q);
            return false;
        }
    }
}

ClientConnection* current_client() {
    return t_current;
}

ScopedClient::ScopedClient(ClientConnection& c) : previous_(t_current) {
    t_current = &c;
}

ScopedClient::~ScopedClient() {
    t_current = previous_;
}

bool client_gone() {
    return t_current && t_current->closed();
}

}  // namespace myriad::api
