// How a command or a transaction that ended without a reply is reported to the hooks
// (CommandEvent, BatchEvent): its outcome and its OpenTelemetry error.type.
#pragma once

#include <string_view>

#include "redmux/error.hpp"
#include "redmux/hooks.hpp"

namespace redmux::detail {

struct Unanswered {
  CommandOutcome outcome = CommandOutcome::ConnectionError;
  /// "timeout", "queue_full", "connection_error", or "refused": stopped before it was sent
  /// (CROSSSLOT, a database the server lacks, an admin command without allowAdmin …).
  std::string_view error_type;
};

/// The outcome and error.type of `error`, which ended a command or transaction unanswered.
Unanswered unanswered(const Error& error) noexcept;

}  // namespace redmux::detail
