// FaultProxy: a TCP proxy between the code under test and a real redis-server, on its own
// thread, that misbehaves on demand — the network faults a test cannot get from signals to
// the server alone: cut every connection, freeze a connection without closing it (a
// half-open peer), add latency, drip replies one byte at a time, refuse new connections, cut
// in the middle of a reply.
//
//   redmux::test::RedisServer server;
//   redmux::test::FaultProxy proxy(server.port());
//   auto mux = redmux::Multiplexer::connect(proxy.address());
//   proxy.stall_existing();  // the current connection freezes; new ones pass
//   proxy.cut_all();         // every connection pair is closed
//
// Each client connection gets its own connection to the server (a "pair"). Bytes are
// forwarded in the order read, one chunk at a time per direction; a direction reads its next
// chunk only after the previous one was written, so a frozen or slow proxy pushes back on
// the sender through the kernel's socket buffers, as a real network would.
//
// Threads: the proxy runs on a thread of its own. Every public member may be called from any
// thread except the proxy's own (the control calls wait until the proxy thread has applied
// them: when cut_all() returns, the connections are closed). The destructor closes every
// connection and joins the thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace redmux::test {

/// What the proxy does with a new client connection.
enum class Admission {
  Forward,      ///< connect it to the server and forward (the default)
  CloseAtOnce,  ///< accept it and close it at once (the client sees EOF right after connecting)
  Refuse,       ///< stop listening: connection attempts are refused (ECONNREFUSED)
};

class FaultProxy {
 public:
  /// Listens on a free port of 127.0.0.1 and forwards to 127.0.0.1:`server_port`. Nothing
  /// need listen there yet: a pair whose server side cannot connect is closed.
  /// Throws std::system_error when no port can be bound.
  explicit FaultProxy(std::uint16_t server_port);
  /// Closes every connection and the listener; joins the proxy thread.
  ~FaultProxy();

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  /// The port clients connect to (fixed for the proxy's life, also across Refuse).
  std::uint16_t port() const noexcept { return port_; }
  /// "127.0.0.1:<port>", as used in a redmux configuration string.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // --- faults (each applied on the proxy thread before the call returns) --------------------

  /// Closes every current pair, both sockets, at once. Bytes held by the proxy are dropped.
  void cut_all();
  /// `on`: stops forwarding in both directions on every current pair and on every pair
  /// accepted while the stall lasts, without closing anything; bytes already read stay held,
  /// and the kernel buffers fill. `off`: every pair forwards again, held bytes first.
  void stall(bool on);
  /// Freezes the current pairs only (as stall(true)); pairs accepted later forward normally.
  /// A half-open connection: the old socket stays open and silent. stall(false) thaws it.
  void stall_existing();
  /// Waits `delay` before forwarding each chunk, both directions (zero: no delay).
  void set_delay(std::chrono::milliseconds delay);
  /// `on`: server→client bytes are written one byte per write (each its own segment).
  void set_drip(bool on);
  /// What happens to new client connections (current pairs are not touched).
  void set_admission(Admission admission);
  /// Shorthand: refuse_new(true) is set_admission(CloseAtOnce), false is Forward.
  void refuse_new(bool on) { set_admission(on ? Admission::CloseAtOnce : Admission::Forward); }
  /// Forwards `bytes` more server→client bytes (over all pairs), then closes the pair that
  /// would carry the next one — a cut in the middle of a reply. One-shot: forwarding is
  /// unlimited again after the cut. cut_after_bytes(0) cuts at the next server byte.
  void cut_after_bytes(std::size_t bytes);

  // --- counters (any thread; monotonic except open_pairs) -----------------------------------

  /// Client connections accepted (including those closed at once by CloseAtOnce).
  std::uint64_t connections_accepted() const noexcept { return accepted_.load(); }
  /// Pairs whose server side connected (forwarding started).
  std::uint64_t pairs_started() const noexcept { return pairs_started_.load(); }
  /// Pairs open now.
  std::size_t open_pairs() const noexcept { return open_pairs_.load(); }
  /// Bytes written to the server / to clients.
  std::uint64_t bytes_to_server() const noexcept { return bytes_to_server_.load(); }
  std::uint64_t bytes_to_client() const noexcept { return bytes_to_client_.load(); }
  /// Pairs closed by cut_all() or cut_after_bytes().
  std::uint64_t pairs_cut() const noexcept { return pairs_cut_.load(); }

  class Impl;  // the Asio side (fault_proxy.cpp); public only for the pair type there

 private:
  /// Runs `task` on the proxy thread and waits for it. REQUIRES: not on the proxy thread.
  void run_on_proxy(std::function<void()> task);

  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
  std::thread thread_;

  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> pairs_started_{0};
  std::atomic<std::size_t> open_pairs_{0};
  std::atomic<std::uint64_t> bytes_to_server_{0};
  std::atomic<std::uint64_t> bytes_to_client_{0};
  std::atomic<std::uint64_t> pairs_cut_{0};
};

}  // namespace redmux::test
