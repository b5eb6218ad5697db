// Loopback ports for tests. Stateless: safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace redmux::test {

/// A TCP port on 127.0.0.1 that was free a moment ago: binds port 0, reads the port the
/// kernel chose, closes. Another process may take it before the caller binds it, so callers
/// that start servers must retry on "address already in use" (RedisServer does).
/// Throws std::system_error if no socket can be bound.
std::uint16_t free_loopback_port();

/// True when something accepts TCP connections on 127.0.0.1:`port` within `timeout`.
bool loopback_port_accepts(std::uint16_t port,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(200));

}  // namespace redmux::test
