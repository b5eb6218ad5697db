// PendingCommand: what a connection keeps for one command between submission and its reply.
#pragma once

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>

#include "redmux/flags.hpp"
#include "redmux/future.hpp"
#include "resp/classify.hpp"

namespace redmux::detail {

using Clock = std::chrono::steady_clock;

/// Redis Cluster's hash slots, and "no slot" (not a cluster command, or a keyless one).
inline constexpr std::size_t kClusterSlots = 16384;
inline constexpr std::uint16_t kNoSlot = 0xFFFF;
/// A set of cluster slots (2 KiB): e.g. the slots whose commands belong on another node.
using SlotSet = std::bitset<kClusterSlots>;

/// What to do with a reply nobody waits for.
enum class PendingKind : std::uint8_t {
  Caller,         ///< `state` is the caller's future: deliver or fail it
  FireAndForget,  ///< reply dropped; an error reply is reported to the error callback
  Internal,       ///< redmux's own command (SELECT inserted for a database switch): `state`
                  ///< may be an internal handler, or null when the reply is only checked
  Heartbeat,      ///< redmux's idle PING: the reply (or error) only proves the link is alive
  PubSub,         ///< the SUBSCRIBE family: answered by `confirmations` pushes (one per
                  ///< name), or by one error reply when the server refuses it; `state` may
                  ///< be an internal handler that is given the refusal
};

/// Where the multiplexer may place a caller's command again when the connection it was queued
/// on loses its server (Sentinel; mux/held_commands.hpp). Set by the router.
enum class ReplicaUse : std::uint8_t {
  None,      ///< the primary only: a write, any command not read-only, or a DemandMaster read
  Prefer,    ///< a read under PreferReplica: a replica in sync, else the primary
  Demand,    ///< a read under DemandReplica: a replica in sync only
  Fallback,  ///< a read under PreferMaster: the primary; a replica while none is known
};
/// The command goes to the primary when one is known, and so keeps its place behind the
/// commands waiting for one (a caller's read after its write).
constexpr bool for_primary(ReplicaUse use) noexcept {
  return use == ReplicaUse::None || use == ReplicaUse::Fallback;
}

/// Which setting the deadline came from, so that a timeout names the one to raise.
enum class TimeoutSource : std::uint8_t {
  AsyncTimeout,  ///< the configuration's asyncTimeout
  Call,          ///< the call's own CallOptions::timeout
  Blocking,      ///< a blocking command: its block time plus the call's timeout
};

struct PendingCommand {
  CommandState* state = nullptr;  ///< one reference owned by this entry; may be null
  std::string_view name;          ///< static storage (command table)
  Clock::time_point deadline{};   ///< time_point::max() for fire-and-forget
  std::size_t bytes_end = 0;      ///< end offset of its bytes in the buffer it was queued in
  std::size_t bytes_begin = 0;
  std::uint32_t timeout_ms = 0;  ///< for diagnostics: the timeout the deadline came from
  int select_db = -1;            ///< for an Internal SELECT: the database it selects
  int db = -1;                   ///< the database it runs against (set when queued; for resending)
  /// PubSub: confirmation pushes still expected (one per channel, pattern or shard channel).
  std::uint32_t confirmations = 0;
  /// Redis Cluster: the slot of its keys (kNoSlot: keyless, or not a cluster command). Lets
  /// a command still queued for a node that lost the slot move to the slot's new owner.
  std::uint16_t slot = kNoSlot;
  PendingKind kind = PendingKind::Caller;
  TimeoutSource timeout_source = TimeoutSource::AsyncTimeout;
  bool counted = true;  ///< holds one slot of maxQueuedCommands until it leaves
  ReplicaUse replica_use = ReplicaUse::None;
  /// PubSub: the push that confirms one of its names (Subscribe for SUBSCRIBE …).
  resp::PushKind confirmed_by = resp::PushKind::Other;
  /// Resend after a break even when it was already written (Flags::Retryable, or a read-only
  /// command under retryReadOnlyCommands): its bytes are kept in state->retained_command.
  bool retry_written : 1 = false;
  std::uint8_t resends : 2 = 0;  ///< automatic resends so far (written ones: at most one)
  /// Redis Cluster: sent where the slot map said. A queue whose node no longer serves the
  /// slot hands it on (SubmissionQueue::Pushed::Forward) instead of queuing it.
  bool follow_map : 1 = false;
  /// Stands for one accepted command in status() (queued, in_flight) although `counted` is
  /// false: its state holds the slot of maxQueuedCommands (a cluster redirect follower).
  bool tallied : 1 = false;
  /// A write on a connection that announced CLIENT CAPA redirect: its bytes are kept in
  /// state->retained_command, for a -REDIRECT to send it to the primary.
  bool keep_for_redirect : 1 = false;
  std::uint8_t redirects : 2 = 0;  ///< -REDIRECTs followed so far (at most kMaxRedirects)
};
/// When the command was created: its caller's deadline_for() read the clock once, and the
/// deadline is that reading plus the timeout. Meaningless for a deadline of time_point::max().
inline Clock::time_point created_at(const PendingCommand& command) noexcept {
  return command.deadline - std::chrono::milliseconds(command.timeout_ms);
}

/// A command named `name` (static storage), due at `deadline`, `timeout_ms` after it was
/// accepted — from the call's own timeout when `call_timeout`, else asyncTimeout: the fields
/// every path that queues a caller's command sets first.
[[gnu::always_inline]] inline PendingCommand timed_command(std::string_view name,
                                                           Clock::time_point deadline,
                                                           std::uint32_t timeout_ms,
                                                           bool call_timeout) noexcept {
  PendingCommand command;
  command.name = name;
  command.deadline = deadline;
  command.timeout_ms = timeout_ms;
  if (call_timeout) command.timeout_source = TimeoutSource::Call;
  return command;
}

/// -REDIRECTs one command follows before its caller gets the last one as its error.
inline constexpr std::uint8_t kMaxRedirects = 3;
// The cluster fields fit in what was padding (the rare flags and the resend count share a
// byte): copying an entry costs what it did.
static_assert(sizeof(PendingCommand) <= 72, "PendingCommand grew: it is copied per command");

/// An accepted command whose caller still waits for it (status(): queued, in_flight): it
/// stands for one slot of maxQueuedCommands, and its future has not completed (timed out).
inline bool awaited_by_caller(const PendingCommand& command) noexcept {
  if (!command.counted && !command.tallied) return false;
  return command.kind != PendingKind::Caller || !command.state || !command.state->claimed();
}

/// A command redmux sends by itself (SELECT, ROLE, READONLY, PING, SUBSCRIBE …): no caller
/// deadline and no maxQueuedCommands slot. `state`, when given, hands its one reference over.
inline PendingCommand own_command(std::string_view name, PendingKind kind,
                                  CommandState* state = nullptr) noexcept {
  PendingCommand command;
  command.state = state;
  command.name = name;
  command.kind = kind;
  command.deadline = Clock::time_point::max();
  command.counted = false;
  return command;
}

/// The earliest deadline of the callers' commands among `commands` (time_point::max() when
/// none has one).
inline Clock::time_point earliest_deadline(std::span<const PendingCommand> commands) noexcept {
  Clock::time_point earliest = Clock::time_point::max();
  for (const PendingCommand& command : commands) {
    if (command.kind == PendingKind::Caller) earliest = std::min(earliest, command.deadline);
  }
  return earliest;
}

/// A SUBSCRIBE-family command redmux sends: answered by one `confirmed_by` push per name, or
/// refused as a whole by one error reply (given to `refusal`, when there is one).
inline PendingCommand pubsub_command(std::string_view name, resp::PushKind confirmed_by,
                                     std::uint32_t names,
                                     CommandState* refusal = nullptr) noexcept {
  PendingCommand command = own_command(name, PendingKind::PubSub, refusal);
  command.confirmed_by = confirmed_by;
  command.confirmations = names;
  return command;
}

}  // namespace redmux::detail
