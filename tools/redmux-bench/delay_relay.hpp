// DelayRelay: a loopback TCP relay that holds every byte for a fixed delay in each direction,
// so that a round trip costs what it would on a network (this kernel has no netem). Each
// accepted connection gets its own connection to the upstream server and one thread per
// direction; a thread reads what arrives, stamps it with arrival + delay, and writes it on
// when that time comes (ppoll with a nanosecond timeout and a timer slack of 1 ns; it sleeps
// while nothing is due).
// The order of bytes is kept; bandwidth is not limited.
//
// Threads: start and stop from one thread; the relay's own threads touch only their
// connection's sockets.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace redmux_bench {

class DelayRelay {
 public:
  /// Listens on 127.0.0.1 (a free port) and relays to host:port with `delay` each way.
  DelayRelay(std::string host, std::uint16_t port, std::chrono::nanoseconds delay);
  ~DelayRelay();  ///< stops: closes the listener and every relayed connection
  DelayRelay(const DelayRelay&) = delete;
  DelayRelay& operator=(const DelayRelay&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  /// Connections accepted so far.
  int connections() const noexcept { return accepted_.load(); }

 private:
  void accept_loop();

  std::string host_;
  std::uint16_t upstream_port_;
  std::chrono::nanoseconds delay_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;          // guards sockets_ and pumps_
  std::vector<int> sockets_;  // every relayed socket, shut down on stop
  std::vector<std::thread> pumps_;
};

}  // namespace redmux_bench
