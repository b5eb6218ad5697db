// What becomes of the commands in flight when a connection breaks (sans-IO): each is either
// sent again on the next connection or leaves, told whether it was sent.
//
// A command goes out again only when that cannot apply it twice: under backlogPolicy=queue
// on a connection that carries commands over, when its bytes never reached the socket
// (they are still in the write buffer or in what an inline write left unsent), or when the
// caller said it may run twice (Flags::Retryable, retryReadOnlyCommands) — then once. A
// command whose caller stopped waiting (timed out) is never sent again. Resent commands keep
// their order, and go ahead of everything queued since.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "conn/pending_command.hpp"
#include "conn/submission_queue.hpp"
#include "conn/writer.hpp"

namespace redmux::detail {

/// Where the stream stood when it broke.
struct BrokenStream {
  std::uint64_t written = 0;  ///< stream offset the socket accepted up to
  Writer::Unsent buffer;      ///< the write in progress (or the last one)
  Writer::Unsent inline_unsent;
  bool may_resend = false;  ///< backlogPolicy=queue and the connection carries commands over
};

/// Sorts `in_flight` (in write order) into `resends` (their bytes view `stream`'s storage)
/// and `leaving`. Every leaving command that someone awaits is failed with
/// `fail_error(command)`; redmux's own commands with a handler are failed too. A resent
/// written command has its `resends` count raised.
template <class FailError>
void plan_after_break(std::span<PendingCommand> in_flight, const BrokenStream& stream,
                      std::vector<SubmissionQueue::Resend>& resends,
                      std::vector<PendingCommand>& leaving, FailError&& fail_error) {
  for (PendingCommand& command : in_flight) {
    const bool awaited = command.kind == PendingKind::FireAndForget ||
                         (command.kind == PendingKind::Caller && !command.state->claimed());
    std::string_view bytes;
    if (awaited && stream.may_resend) {
      if (command.bytes_begin >= stream.written) {
        bytes = stream.buffer.of(command);
        if (bytes.empty()) bytes = stream.inline_unsent.of(command);
      } else if (command.retry_written && command.resends == 0 && command.state &&
                 !command.state->retained_command.empty()) {
        bytes = command.state->retained_command;
        ++command.resends;
      }
    }
    if (!bytes.empty()) {
      resends.push_back({command, bytes});
      continue;
    }
    if (command.state && (command.kind == PendingKind::Internal || awaited)) {
      command.state->fail(fail_error(command));
    }
    leaving.push_back(command);
  }
}

}  // namespace redmux::detail
