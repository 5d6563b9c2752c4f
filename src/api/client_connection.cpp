#include "api/client_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>

#include "util/log.h"

namespace myriad::api {

namespace {

thread_local ClientConnection* t_current = nullptr;

// The connections (by peer address and port) that are in a handler or streaming its reply.
std::mutex g_serving_mutex;
std::multiset<std::pair<std::string, int>> g_serving;

// The address and port of a socket endpoint as cpp-httplib writes them.
bool endpoint(const sockaddr_storage& ss, std::string& addr, int& port) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
        if (!inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf)) return false;
        port = ntohs(a.sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
        if (!inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf)) return false;
        port = ntohs(a.sin6_port);
    } else {
        return false;
    }
    addr = buf;
    return true;
}

}  // namespace

ClientConnection::ClientConnection(std::string remote_addr, int remote_port,
                                   std::string local_addr, int local_port)
    : remote_addr_(std::move(remote_addr)),
      local_addr_(std::move(local_addr)),
      remote_port_(remote_port),
      local_port_(local_port),
      start_(std::chrono::steady_clock::now()),
      next_check_(start_ + std::chrono::milliseconds(100)) {
    std::lock_guard<std::mutex> lock(g_serving_mutex);
    g_serving.emplace(remote_addr_, remote_port_);
}

ClientConnection::~ClientConnection() {
    std::lock_guard<std::mutex> lock(g_serving_mutex);
    auto it = g_serving.find({remote_addr_, remote_port_});
    if (it != g_serving.end()) g_serving.erase(it);
}

bool serving(const std::string& remote_addr, int remote_port) {
    std::lock_guard<std::mutex> lock(g_serving_mutex);
    return g_serving.count({remote_addr, remote_port}) > 0;
}

std::vector<Connection> connections(int local_port) {
    std::vector<Connection> out;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return out;
    while (const dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0') continue;
        struct stat st;
        if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage peer{}, self{};
        socklen_t pl = sizeof peer, sl = sizeof self;
        std::string addr;
        int port = 0;
        Connection c;
        c.fd = static_cast<int>(fd);
        if (getsockname(c.fd, reinterpret_cast<sockaddr*>(&self), &sl) == 0 &&
            endpoint(self, addr, port) && port == local_port &&
            getpeername(c.fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
            endpoint(peer, c.remote_addr, c.remote_port))
            out.push_back(std::move(c));
    }
    closedir(dir);
    return out;
}

int ClientConnection::find_socket() const {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return -1;
    int found = -1;
    while (const dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0') continue;
        struct stat st;
        if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage peer{}, self{};
        socklen_t pl = sizeof peer, sl = sizeof self;
        if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0 ||
            getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&self), &sl) != 0)
            continue;
        std::string pa, sa;
        int pp = 0, sp = 0;
        if (endpoint(peer, pa, pp) && endpoint(self, sa, sp) && pp == remote_port_ &&
            sp == local_port_ && pa == remote_addr_ && sa == local_addr_) {
            found = static_cast<int>(fd);
            break;
        }
    }
    closedir(dir);
    return found;
}

bool ClientConnection::closed() {
    if (closed_) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_check_) return false;
    next_check_ = now + std::chrono::milliseconds(50);
    if (fd_ == -2) fd_ = find_socket();
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
    if (fd_ == -2) fd_ = find_socket();
    if (fd_ < 0) return true;  // not found: nothing to measure, the write timeout still holds
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
        log::info("client {}:{} is not reading its stream ({} bytes unsent, --max-unsent-bytes "
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
            log::warn("client {}:{} read nothing of its stream for {} s ({} bytes unsent): its "
                      "request is cancelled and its KV blocks freed",
                      remote_addr_, remote_port_,
                      std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), q);
            return false;
        }
    }
}

void shutdown_connections(int local_port) {
    for (const Connection& c : connections(local_port)) shutdown(c.fd, SHUT_RDWR);
}

ClientConnection* current_client() { return t_current; }

ScopedClient::ScopedClient(ClientConnection& c) : previous_(t_current) { t_current = &c; }

ScopedClient::~ScopedClient() { t_current = previous_; }

bool client_gone() { return t_current && t_current->closed(); }

}  // namespace myriad::api
