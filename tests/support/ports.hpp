// Loopback ports for tests. Stateless: safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace redmux::test {

/// A TCP port on 127.0.0.1 that was free a moment ago: binds port 0, reads the port the
/// kernel chose, closes. Another process may take it before the caller binds it, so callers
/// that start servers must retry on "address already in use" (RedisServer does).
/// Throws std::system_error if no socket can be bound.
std::uint16_t free_loopback_port();

/// A loopback port held bound and not listening for the object's lifetime: a connection to
/// it is refused, and no other test's server can take it meanwhile (as it could a port from
/// free_loopback_port() that a test means to leave dead). Throws std::system_error if no
/// socket can be bound.
class ClosedPort {
 public:
  ClosedPort();
  ~ClosedPort();
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;

  std::uint16_t port() const { return port_; }
  /// "127.0.0.1:<port>"
  std::string address() const;

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

/// True when something accepts TCP connections on 127.0.0.1:`port` within `timeout`.
bool loopback_port_accepts(std::uint16_t port,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(200));

}  // namespace redmux::test
