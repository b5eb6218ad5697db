// The inside of Transaction (include/redmux/transaction.hpp): what a transaction collects
// before execute(), and how conditions are read and judged. The run itself (lease, WATCH and
// reads, MULTI … EXEC) lives in transaction.cpp.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mux/cache_route.hpp"
#include "redmux/transaction.hpp"

namespace redmux::detail {

/// One queued command: its bytes in TransactionBuffer::bytes and the caller's state (one
/// reference; null for fire-and-forget).
struct QueuedCommand {
  CommandState* state = nullptr;
  std::string_view name;  ///< static storage (command table)
  std::size_t bytes_begin = 0;
  std::size_t bytes_end = 0;
};

struct TransactionBuffer {
  std::shared_ptr<MuxCore> core;
  int db = 0;
  std::vector<Condition> conditions;
  std::vector<std::string> watched;
  std::string bytes;
  std::vector<QueuedCommand> commands;
  /// Redis Cluster only: the keys of the queued commands (with the watched and condition
  /// keys they must all share one slot).
  std::vector<std::string> keys;
  /// The first command refused before sending (connection-state command, admin gate …):
  /// the transaction then runs nothing.
  std::optional<Error> refused;
  /// clientCache=true: what the queued commands write, taken out of every cache as EXEC is
  /// sent and again at its reply, before any command's future completes.
  WrittenKeys written;

  bool empty() const noexcept { return commands.empty() && conditions.empty() && !refused; }
  /// Fails every queued command with `error` (those already complete keep their outcome)
  /// and empties the buffer.
  void fail_all(const Error& error);
};

/// How each condition kind is read and judged.
struct ConditionCheck {
  /// Appends the read command for `condition`; returns its name (static storage).
  static std::string_view encode_read(std::string& out, const Condition& condition);
  /// True when `reply` (to the read) satisfies `condition`. An error reply never does.
  static bool holds(const Condition& condition, NodeSpan reply);
};

/// Tests only: runs on the I/O thread after the conditions were judged to hold and before
/// MULTI … EXEC is written — the window in which another client can invalidate a WATCH.
/// Pass nullptr to remove it.
void set_transaction_test_hook(std::function<void()> hook);

}  // namespace redmux::detail
