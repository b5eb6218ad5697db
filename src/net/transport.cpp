#include "net/transport.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#if REDMUX_WITH_TLS
#include <asio/ssl/error.hpp>
#endif

namespace redmux::detail {

Transport::Transport(asio::io_context& io, std::shared_ptr<TlsContext> tls)
    : socket_(io), tls_context_(std::move(tls)) {
  renew();
}

void Transport::close() noexcept {
  ++epoch_;
  asio::error_code ignored;
  lowest().close(ignored);
}

asio::error_code Transport::open(const Socket::protocol_type& protocol) {
  Socket& socket = lowest();
  asio::error_code ec;
  socket.close(ec);
  ++epoch_;
  // SOCK_CLOEXEC at creation: no window in which a fork on another thread inherits it.
  const int fd = ::socket(protocol.family(), protocol.type() | SOCK_CLOEXEC, protocol.protocol());
  if (fd < 0) return asio::error_code(errno, asio::error::get_system_category());
  socket.assign(protocol, fd, ec);
  if (ec) ::close(fd);
  return ec;
}

void Transport::set_tcp_options(std::chrono::seconds keep_alive,
                                std::chrono::milliseconds user_timeout) noexcept {
  const int fd = native_handle();
  int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (keep_alive.count() > 0) {
    // keepAlive seconds idle, then 3 probes spread over another keepAlive/2: a peer that
    // vanished without a FIN is noticed even when no command is in flight.
    ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    int idle = static_cast<int>(keep_alive.count());
    int interval = std::max(1, idle / 6);
    int probes = 3;
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  }
  unsigned timeout = static_cast<unsigned>(user_timeout.count());
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof timeout);
}

std::size_t Transport::send_now(std::string_view bytes, int& error) noexcept {
  const ssize_t n =
      ::send(native_handle(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) return static_cast<std::size_t>(n);
  if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) error = errno;
  return 0;
}

std::size_t Transport::unread_bytes() const noexcept {
  int available = 0;
  if (!is_open() || ::ioctl(native_handle(), FIONREAD, &available) != 0) return 0;
  return static_cast<std::size_t>(available);
}

void Transport::renew() {
  ++epoch_;
#if REDMUX_WITH_TLS
  // The previous session (if any) lives on in the handlers of its pending operations.
  if (tls_context_) {
    tls_ = std::make_shared<TlsStream>(socket_.get_executor(), tls_context_->native());
  }
#endif
}

std::string Transport::handshake_error(const asio::error_code& ec, const std::string& endpoint_text,
                                       const std::string& server_name) const {
#if REDMUX_WITH_TLS
  if (tls_context_) {
    return tls_context_->handshake_error(tls_ ? tls_->native_handle() : nullptr, ec, endpoint_text,
                                         server_name);
  }
#endif
  (void)server_name;
  return "TLS handshake with " + endpoint_text + " failed: " + ec.message();
}

std::string Transport::error_hint(const asio::error_code& ec, bool during_handshake) const {
#if REDMUX_WITH_TLS
  if (tls_context_) return tls_context_->io_error_hint(ec, during_handshake);
#endif
  (void)ec;
  (void)during_handshake;
  return {};
}

bool Transport::closed_by_peer(const asio::error_code& ec) noexcept {
#if REDMUX_WITH_TLS
  if (ec == asio::ssl::error::stream_truncated) return true;
#endif
  return ec == asio::error::eof || ec == asio::error::connection_reset;
}

}  // namespace redmux::detail
