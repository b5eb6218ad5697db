// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
// XREAD/XREADGROUP … BLOCK, WAIT, WAITAOF) on leased dedicated connections, so they never
// stall the shared connection.
//
// Deadlines: the command's own blocking time (parsed from its timeout argument) plus the
// call's timeout (asyncTimeout unless CallOptions::timeout says otherwise), counted from the
// moment it gets a connection. A blocking time of 0 ("block forever") has no deadline from
// redmux unless the call passes its own timeout, which is then the whole deadline. Waiting
// for a free dedicated connection is bounded separately by the call's timeout.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>

#include "commands/command_rules.hpp"
#include "commands/command_table.hpp"
#include "conn/pending_command.hpp"
#include "net/connection.hpp"
#include "redmux/arg.hpp"
#include "redmux/flags.hpp"

namespace redmux::detail {

class MuxCore;
class DedicatedPool;
class ClusterRouter;

/// A CommandState that stands between a connection and the caller's state for a command
/// on a leased connection: forwards the outcome, then gives the connection back to the pool
/// (on the I/O thread that completed it). A timeout or a shutdown makes the connection
/// unusable (its server side may still be busy with the command): it is then replaced.
class LeasedCommandState final : public CommandState {
 public:
  /// Takes over one reference to `target` (may be null: nobody waits). `info` and `db`: the
  /// command's, for sending it again elsewhere (take_back()).
  LeasedCommandState(CommandState* target, std::shared_ptr<DedicatedPool> pool,
                     std::shared_ptr<Connection> connection, const CommandInfo& info,
                     int db) noexcept;

  void deliver(NodeSpan reply) noexcept override;
  void fail(Error error) noexcept override;

  /// Its command left the leased connection's queue unsent (its slot moved to another
  /// node): gives the connection back for reuse and hands over `target` with its
  /// reference, to be sent elsewhere. False when the relay was completed meanwhile.
  bool take_back(CommandState*& target) noexcept;
  const CommandInfo& info() const noexcept { return *info_; }
  int db() const noexcept { return db_; }

  /// In a Redis Cluster: the router that learns of a MOVED reply (nobody follows it here).
  void learn_redirects_with(std::weak_ptr<ClusterRouter> router) noexcept {
    router_ = std::move(router);
  }

 private:
  ~LeasedCommandState() override;
  void finish(bool reusable) noexcept;

  CommandState* target_;
  const CommandInfo* info_;
  int db_;
  std::shared_ptr<DedicatedPool> pool_;
  std::shared_ptr<Connection> connection_;
  std::weak_ptr<ClusterRouter> router_;
};

/// Sends a blocking command on a dedicated connection. The gates (admin, database) were
/// checked by the caller except the database check, done once a connection is leased.
/// `state` may be null (fire-and-forget). Returns the refusal, also set on `state`.
/// `endpoint`: the server to send it to (a server handle's); null: where the shared
/// connection would send it.
Error submit_blocking(MuxCore& core, int db, const CallOptions& options, std::span<const Arg> args,
                      const CommandInfo& info, CommandState* state,
                      const Endpoint* endpoint = nullptr);

/// Redis Cluster, after a new slot map: the commands still queued, unsent, on a dedicated
/// connection to a node that no longer serves their slot (a dead primary whose replica was
/// promoted, a migrated slot). A blocking command goes to the slot's new primary on a
/// connection leased there, keeping its deadline; a transaction's step fails at once with
/// errc::not_sent (a transaction runs where its WATCH ran, or not at all). Any thread.
void move_unsent_dedicated_commands(MuxCore& core, ClusterRouter& router);

}  // namespace redmux::detail
