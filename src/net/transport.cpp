#include "net/transport.hpp"

#include <sys/socket.h>
#include <unistd.h>

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
