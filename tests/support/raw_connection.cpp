#include "support/raw_connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace redmux::test {

RawConnection::RawConnection(std::uint16_t port, std::chrono::milliseconds timeout) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "socket()");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int error = 0;
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd pfd{fd_, POLLOUT, 0};
      if (::poll(&pfd, 1, static_cast<int>(timeout.count())) == 1) {
        socklen_t length = sizeof error;
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length);
      } else {
        error = ETIMEDOUT;
      }
    }
  }
  if (error != 0) {
    ::close(fd_);
    throw std::system_error(error, std::generic_category(),
                            "connect(127.0.0.1:" + std::to_string(port) + ")");
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

void RawConnection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd pfd{fd_, POLLOUT, 0};
      ::poll(&pfd, 1, 1000);
    } else if (errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "send()");
    }
  }
}

std::string RawConnection::read_some(std::chrono::milliseconds timeout) {
  if (closed_) return {};
  pollfd pfd{fd_, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return {};
  char buffer[16384];
  const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
  if (n > 0) return std::string(buffer, static_cast<std::size_t>(n));
  if (n == 0 || (errno != EAGAIN && errno != EINTR)) closed_ = true;
  return {};
}

std::string RawConnection::read_until(std::string_view needle, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string received;
  while (received.find(needle) == std::string::npos && !closed_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    received += read_some(left);
  }
  return received;
}

}  // namespace redmux::test
