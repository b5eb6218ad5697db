#include "support/ports.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace redmux::test {
namespace {

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A socket bound to 127.0.0.1:0 (without SO_REUSEADDR: no other socket can bind its port while
// it is open), and the port the kernel chose.
int bind_any_loopback_port(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket()");
  sockaddr_in addr = loopback(0);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::system_error(error, std::generic_category(), "bind(127.0.0.1:0)");
  }
  socklen_t length = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::system_error(error, std::generic_category(), "getsockname()");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

std::uint16_t free_loopback_port() {
  std::uint16_t port = 0;
  ::close(bind_any_loopback_port(port));
  return port;
}

ClosedPort::ClosedPort() {
  fd_ = bind_any_loopback_port(port_);
}

ClosedPort::~ClosedPort() {
  ::close(fd_);
}

std::string ClosedPort::address() const {
  return "127.0.0.1:" + std::to_string(port_);
}

bool loopback_port_accepts(std::uint16_t port, std::chrono::milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const sockaddr_in addr = loopback(port);
  bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  if (!connected && errno == EINPROGRESS) {
    pollfd pfd{fd, POLLOUT, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) == 1) {
      int error = 0;
      socklen_t length = sizeof error;
      connected = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
    }
  }
  ::close(fd);
  return connected;
}

}  // namespace redmux::test
