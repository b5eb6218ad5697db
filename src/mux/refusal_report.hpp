// A caller's command refused at the call, before any connection queued it, as the command
// hook sees it (docs/observability.md): one event on the caller's thread, with no server.
#pragma once

#include <span>

#include "redmux/arg.hpp"
#include "redmux/error.hpp"

namespace redmux::detail {

class MuxCore;
class CommandState;

/// Passes on `error`, the refusal of the command `args` for database `db` (-1: the
/// default), after reporting it to the command hook when one is installed and the command
/// has a caller waiting (`state`; a fire-and-forget command is not reported).
Error reported_refusal(MuxCore& core, int db, std::span<const Arg> args, const CommandState* state,
                       Error error) noexcept;

}  // namespace redmux::detail
