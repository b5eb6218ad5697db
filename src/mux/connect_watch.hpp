// ConnectWatch: what Multiplexer::connect() keeps of a connect it may give up on at
// syncTimeout. The connect runs on the I/O threads and holds its multiplexer until it has
// decided; given up on, it would run on (a TLS handshake, a Sentinel round) until its own
// timeouts, past connect()'s throw and maybe past the process's exit. abandon() stops it and
// waits, on connect()'s thread, so the I/O threads end there (or, when a handler lets go
// of the pool last, just after, joined as orphans: net/orphans.hpp).
//
// Threads: filled by start_connect() on the caller's thread, used by connect() on it.
#pragma once

#include <functional>
#include <string>

namespace redmux::detail {

struct ConnectWatch {
  /// How far the attempts have got, for the syncTimeout error; empty when unknown.
  std::function<std::string()> progress;
  /// Closes what the connect started and waits (bounded by syncTimeout) until its
  /// connections have shut down. Must not run on an I/O thread.
  std::function<void()> abandon;
};

}  // namespace redmux::detail
