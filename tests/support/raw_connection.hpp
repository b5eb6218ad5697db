// RawConnection: a plain blocking TCP client to 127.0.0.1 for tests that need to see bytes
// on the wire or observe a stalled server without the library under test in the way
// ("send PING, nothing arrives within 300 ms while the server is paused"). One thread at a
// time; owns its socket.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace redmux::test {

class RawConnection {
 public:
  /// Connects to 127.0.0.1:`port`. Throws std::system_error on failure or after `timeout`.
  explicit RawConnection(std::uint16_t port,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5));
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  /// Writes all of `bytes`. Throws std::system_error on failure.
  void send(std::string_view bytes);
  /// Bytes that arrive within `timeout`: empty when nothing did (or the peer closed — see
  /// closed()). Returns as soon as some bytes are there; does not wait for more.
  std::string read_some(std::chrono::milliseconds timeout);
  /// Reads until the bytes received contain `needle` or `timeout` passes; returns everything
  /// read (check whether it contains the needle).
  std::string read_until(std::string_view needle, std::chrono::milliseconds timeout);
  /// True once the peer has closed the connection (read returned 0) or reset it.
  bool closed() const noexcept { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

}  // namespace redmux::test
