// CloseReport: what Multiplexer::close(deadline) found when it returned — whether every
// accepted command completed and every pub/sub message already received reached its
// handler before the deadline, and if not, how much the deadline cut short. A plain value.
#pragma once

#include <cstddef>

namespace redmux {

struct CloseReport {
  /// Everything finished before the deadline: no command was failed by the close, no
  /// received message was left undelivered, no handler was still running.
  bool drained = false;
  /// Accepted commands not completed by the deadline (queued, held or in flight), which the
  /// close then failed, each error saying the deadline passed: errc::shut_down ("not sent")
  /// for those never written, errc::not_sent or errc::outcome_unknown for those in flight.
  std::size_t commands_failed = 0;
  /// Pub/sub messages received but not yet given to their handlers at the deadline, dropped.
  std::size_t messages_undelivered = 0;
};

}  // namespace redmux
