#include "api/client_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace myriad::api {

namespace {

thread_local ClientConnection* t_current = nullptr;

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
      next_check_(start_ + std::chrono::milliseconds(100)) {}

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

ClientConnection* current_client() { return t_current; }

ScopedClient::ScopedClient(ClientConnection& c) : previous_(t_current) { t_current = &c; }

ScopedClient::~ScopedClient() { t_current = previous_; }

bool client_gone() { return t_current && t_current->closed(); }

}  // namespace myriad::api
