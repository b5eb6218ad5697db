// IoAction: one thing a connection's machine asks its runner to do with the socket, a timer
// or the submission path, in the order the machine emitted them (see ConnectionMachine).
//
// Generations: every action carries the generation (one per socket: each attempt and each
// break starts a new one) it was emitted in. An action for the socket or for a timer of a
// generation that has already passed is stale: the runner drops it, as it drops the
// completion of an operation started for an earlier generation. The deadline timer, a
// socket close, a cancel and a submission belong to no socket and are never dropped.
#pragma once

#include <cstdint>

#include "conn/pending_command.hpp"

namespace redmux::detail {

/// The runner's three timers.
enum class IoTimer : std::uint8_t {
  Deadline,  ///< the earliest deadline of a command queued or in flight (any generation)
  Connect,   ///< bounds an attempt (connectTimeout), or waits out the reconnect backoff
  Health,    ///< the health tick, or the wait before the next loading probe
};

struct IoAction {
  enum class Kind : std::uint8_t {
    CloseSocket,     ///< close the socket (its pending operations complete as stale)
    Connect,         ///< a fresh transport, then resolve and connect to target()
    StartTls,        ///< the TLS client handshake for tls_server_name()
    WriteHandshake,  ///< write take_handshake_bytes(): not part of the callers' stream
    Read,            ///< read into read_space()
    Write,           ///< write write_buffer()
    ArmTimer,        ///< `timer` fires at `at` (instead of what it waited for)
    CancelTimer,     ///< `timer` (Connect: the resolver as well)
    Submit,          ///< queue to_submit(own) like any command (ROLE, INFO, the idle PING)
  };
  Kind kind = Kind::Read;
  IoTimer timer = IoTimer::Deadline;
  std::uint8_t own = 0;
  std::uint64_t generation = 0;
  Clock::time_point at{};

  /// True when the action belongs to the socket (or a timer) of its generation only.
  bool bound_to_generation() const noexcept {
    switch (kind) {
      case Kind::Connect:
      case Kind::StartTls:
      case Kind::WriteHandshake:
      case Kind::Read:
      case Kind::Write:
        return true;
      case Kind::ArmTimer:
        return timer != IoTimer::Deadline;
      case Kind::CloseSocket:
      case Kind::CancelTimer:
      case Kind::Submit:
        return false;
    }
    return false;
  }
};

}  // namespace redmux::detail
