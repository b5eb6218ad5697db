#include "delay_relay.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <stdexcept>

namespace redmux_bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Chunk {
  Clock::time_point due;
  std::vector<char> bytes;
};

void no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Copies from → to, each chunk `delay` after it arrived, until either side closes; then
// shuts down both directions so the other pump ends too.
void pump(int from, int to, std::chrono::nanoseconds delay) {
  // The timers are 0.1 ms: without this, Linux may let each one run up to 50 µs late.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  std::deque<Chunk> queue;
  bool open = true;
  while (open || !queue.empty()) {
    const auto now = Clock::now();
    while (!queue.empty() && queue.front().due <= now) {
      if (!write_all(to, queue.front().bytes.data(), queue.front().bytes.size())) {
        open = false;
        queue.clear();
        break;
      }
      queue.pop_front();
    }
    if (!open && queue.empty()) break;
    pollfd fd{from, POLLIN, 0};
    timespec timeout{};
    timespec* wait = nullptr;  // nothing due: wait for bytes
    if (!queue.empty()) {
      const auto left = std::max(Clock::duration::zero(), queue.front().due - Clock::now());
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      timeout.tv_sec = static_cast<time_t>(ns / 1000000000);
      timeout.tv_nsec = static_cast<long>(ns % 1000000000);
      wait = &timeout;
    }
    const int ready = ppoll(&fd, open ? 1 : 0, wait, nullptr);
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0 && open) {
      Chunk chunk;
      chunk.bytes.resize(256 * 1024);
      const ssize_t n = recv(from, chunk.bytes.data(), chunk.bytes.size(), 0);
      if (n <= 0) {
        open = false;
        continue;
      }
      chunk.bytes.resize(static_cast<std::size_t>(n));
      chunk.due = Clock::now() + delay;
      queue.push_back(std::move(chunk));
    }
  }
  shutdown(from, SHUT_RDWR);
  shutdown(to, SHUT_RDWR);
}

int connect_to(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd >= 0) no_delay(fd);
  return fd;
}

}  // namespace

DelayRelay::DelayRelay(std::string host, std::uint16_t port, std::chrono::nanoseconds delay)
    : host_(std::move(host)), upstream_port_(port), delay_(delay) {
  listener_ = socket(AF_INET, SOCK_STREAM, 0);
  if (listener_ < 0)
    throw std::runtime_error("delay relay: socket: " + std::string(strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener_, 64) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string why = strerror(errno);
    close(listener_);
    throw std::runtime_error("delay relay: cannot listen on 127.0.0.1: " + why);
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

void DelayRelay::accept_loop() {
  for (;;) {
    const int client = accept(listener_, nullptr, nullptr);
    if (stopping_.load()) {
      if (client >= 0) close(client);
      return;
    }
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    no_delay(client);
    const int server = connect_to(host_, upstream_port_);
    if (server < 0) {
      close(client);  // the client sees the connection closed
      continue;
    }
    ++accepted_;
    std::lock_guard lock(mutex_);
    sockets_.push_back(client);
    sockets_.push_back(server);
    pumps_.emplace_back([client, server, d = delay_] { pump(client, server, d); });
    pumps_.emplace_back([client, server, d = delay_] { pump(server, client, d); });
  }
}

DelayRelay::~DelayRelay() {
  stopping_.store(true);
  shutdown(listener_, SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  close(listener_);
  std::lock_guard lock(mutex_);
  for (int fd : sockets_) shutdown(fd, SHUT_RDWR);
  for (std::thread& t : pumps_) t.join();
  for (int fd : sockets_) close(fd);
}

}  // namespace redmux_bench
