#include "mux/blocking.hpp"

#include "commands/command_rules.hpp"
#include "mux/cluster.hpp"
#include "mux/core.hpp"
#include "mux/dedicated_pool.hpp"
#include "resp/encoder.hpp"
#include "topology/cluster_plan.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace redmux::detail {

LeasedCommandState::LeasedCommandState(CommandState* target, std::shared_ptr<DedicatedPool> pool,
                                       std::shared_ptr<Connection> connection,
                                       const CommandInfo& info, int db) noexcept
    : target_(target),
      info_(&info),
      db_(db),
      pool_(std::move(pool)),
      connection_(std::move(connection)) {}

LeasedCommandState::~LeasedCommandState() {
  if (target_) target_->release();
}

void LeasedCommandState::deliver(NodeSpan reply) noexcept {
  if (!claim()) return;
  if (is_error_reply(reply)) {
    if (std::shared_ptr<ClusterRouter> router = router_.lock()) {
      router->learn_redirect(reply, connection_->endpoint().host);
    }
  }
  if (target_) target_->deliver(reply);
  finish(/*reusable=*/true);
}

void LeasedCommandState::fail(Error error) noexcept {
  if (!claim()) return;
  // After a timeout the server may still be blocking on the command (or about to answer
  // it): the connection's next lease would wait behind it, so it is replaced. A broken
  // connection reconnects by itself and is as good as new.
  const bool reusable = error.code() != errc::timeout && error.code() != errc::shut_down;
  if (target_) target_->fail(std::move(error));
  finish(reusable);
}

bool LeasedCommandState::take_back(CommandState*& target) noexcept {
  if (!claim()) return false;
  target = std::exchange(target_, nullptr);
  finish(/*reusable=*/true);  // nothing was sent on it
  return true;
}

void LeasedCommandState::finish(bool reusable) noexcept {
  publish();
  try {
    pool_->give_back(connection_, reusable);
  } catch (...) {  // out of memory while serving a waiter: that waiter's deadline fails it
  }
}

namespace {

/// No connection could be leased for a blocking command: fails its state, and gives back
/// its slot of maxQueuedCommands when it holds one.
void refuse_unleased(MuxCore& core, CommandState* state, bool counted, Error error) {
  if (counted) core.shared().release_slots(1);
  if (state) {
    state->fail(std::move(error));
    state->release();
  }
}

/// Sends `bytes` on `connection`, just leased, as `command` (its deadline set) through a new
/// relay to `state`, which hands over its reference.
void send_leased(MuxCore& core, const std::shared_ptr<DedicatedPool>& pool, const CommandInfo& info,
                 int db, CommandState* state, std::shared_ptr<Connection> connection,
                 const std::string& bytes, PendingCommand command, bool first_send) {
  auto* relay = new LeasedCommandState(state, pool, connection, info, db);  // takes our reference
  relay->command_name = info.name;
  if (ClusterRouter* router = core.cluster()) relay->learn_redirects_with(router->weak_from_this());
  if (Error error = db < 0 ? Error() : core.check_database(db, *connection, info)) {
    if (command.counted) core.shared().release_slots(1);
    relay->fail(std::move(error));  // gives the connection back
    relay->release();
    return;
  }
  command.state = relay;  // the relay's one reference moves to the connection
  command.bytes_begin = 0;
  command.bytes_end = bytes.size();
  if (first_send) core.shared().counters().commands.fetch_add(1, std::memory_order_relaxed);
  connection->submit_batch(db, bytes, std::span<PendingCommand>(&command, 1));
}

/// Fails `state` (handing over its reference) on `connection`'s I/O thread, where its
/// other completions run: a transaction takes its steps' outcomes one at a time, and a
/// step's timeout may be on its way there. Done where it stands should the I/O thread never
/// run the task (its pool stopped).
void fail_on_io_thread(Connection& connection, CommandState* state, Error error) {
  class Failure {
   public:
    Failure(CommandState* state, Error error) noexcept : state_(state), error_(std::move(error)) {}
    Failure(const Failure&) = delete;
    Failure& operator=(const Failure&) = delete;
    ~Failure() { run(); }
    void run() noexcept {
      if (state_ == nullptr) return;
      CommandState* state = std::exchange(state_, nullptr);
      state->fail(std::move(error_));
      state->release();
    }

   private:
    CommandState* state_;
    Error error_;
  };
  auto failure = std::make_shared<Failure>(state, std::move(error));
  connection.post([failure] { failure->run(); });
}

}  // namespace

Error submit_blocking(MuxCore& core, int db, const CallOptions& options, std::span<const Arg> args,
                      const CommandInfo& info, CommandState* state, const Endpoint* endpoint) {
  auto refuse = [&](Error error) {
    if (state) state->fail(error);
    return error;
  };
  SharedContext& shared = core.shared();
  const auto call_timeout =
      options.timeout.count() > 0 ? options.timeout : shared.config().async_timeout;
  const Clock::time_point wait_until = Clock::now() + call_timeout;
  if (!shared.acquire_slot(wait_until)) {
    shared.counters().queue_full.fetch_add(1, std::memory_order_relaxed);
    return refuse(shared.queue_full_error(info.name, wait_until, call_timeout));
  }
  // Where it goes: the endpoint the shared connection would use (the primary, or a replica
  // when the flags allow it and the command only reads), unless a server handle names one.
  std::optional<Endpoint> target;
  if (endpoint) {
    target = *endpoint;
  } else {
    Result<Connection*> routed = core.route(info, args, options.flags);
    if (!routed) {
      shared.release_slots(1);
      return refuse(std::move(routed).error());
    }
    if ((*routed)->fails_fast()) {  // the server is down: failFast refuses at once
      shared.release_slots(1);
      return refuse((*routed)->refusal_of(info.name));
    }
    target = (*routed)->endpoint();
  }
  // The arguments are views that die with the caller's expression, and the lease may come
  // later: the command is encoded now, into bytes the lease handler owns.
  std::string bytes;
  const BlockingTimeArg at = blocking_time_arg(info, args);
  // SCRIPT KILL, FUNCTION KILL: no block time of their own, only the call's timeout.
  std::optional<std::chrono::milliseconds> block =
      at.index ? blocking_time(info, args) : std::optional<std::chrono::milliseconds>();
  auto reply_timeout = call_timeout;  // what is added to the blocking time for the deadline
  const bool per_call = options.timeout.count() > 0;
  const bool own_timeout = !at.index;
  if (!block && per_call && at.index) {
    // Forever, but the call gives up after its timeout: the server is given that timeout as
    // the blocking time, so it answers nil then. Left to block, it could still take an
    // element after the caller was told the call had timed out (and no one would get it).
    std::vector<Arg> sent(args.begin(), args.end());
    if (at.seconds) {
      sent[at.index] = Arg(static_cast<double>(call_timeout.count()) / 1000.0);
    } else {
      sent[at.index] = Arg(static_cast<long long>(call_timeout.count()));
    }
    resp::encode_command(bytes, sent);
    block = call_timeout;
    reply_timeout = shared.config().async_timeout;
  } else {
    resp::encode_command(bytes, args);
  }
  if (state) state->add_ref();  // held by the handler until the relay takes it over
  // SCRIPT KILL and FUNCTION KILL are about the server, not a database: sent with no SELECT,
  // which a server busy with a script would refuse.
  if (ends_busy_script(info)) db = -1;
  std::shared_ptr<DedicatedPool> pool = core.dedicated_pool();
  PendingCommand command;
  command.name = info.name;
  command.kind = PendingKind::Caller;
  // In a cluster, its slot: should the slot move before it is sent, it follows the slot to
  // its new owner (move_unsent_dedicated_commands()).
  if (!endpoint && core.cluster()) {
    const KeyIndexes keys(info, args);
    if (!keys.get().empty()) command.slot = key_slots(args, keys.get()).first;
  }
  pool->acquire(
      *target, wait_until, info.name,
      [&core, &info, pool, db, state, block, call_timeout, reply_timeout, per_call, own_timeout,
       command, bytes = std::move(bytes)](Result<std::shared_ptr<Connection>> leased) mutable {
        if (!leased) {
          refuse_unleased(core, state, command.counted, std::move(leased).error());
          return;
        }
        const Clock::time_point now = Clock::now();
        if (block) {
          command.deadline = now + *block + reply_timeout;
          command.timeout_ms = static_cast<std::uint32_t>(
              std::min<long long>((*block + reply_timeout).count(), UINT32_MAX));
          command.timeout_source = TimeoutSource::Blocking;
        } else if (per_call || own_timeout) {
          command.deadline = now + call_timeout;
          command.timeout_ms = static_cast<std::uint32_t>(call_timeout.count());
          command.timeout_source = per_call ? TimeoutSource::Call : TimeoutSource::AsyncTimeout;
        } else {
          command.deadline = Clock::time_point::max();  // BLPOP … 0: until answered
        }
        send_leased(core, pool, info, db, state, std::move(*leased), bytes, command,
                    /*first_send=*/true);
      });
  return Error();
}

void move_unsent_dedicated_commands(MuxCore& core, ClusterRouter& router) {
  const std::shared_ptr<DedicatedPool>& pool = core.dedicated_pool();
  for (const std::shared_ptr<Connection>& connection : pool->connections()) {
    std::string bytes;
    std::vector<PendingCommand> moved;
    connection->reroute(router.served_elsewhere(connection->endpoint()), bytes, moved);
    for (PendingCommand& command : moved) {
      Result<Connection*> owner = router.for_slot(command.slot, false, false);
      auto* relay = dynamic_cast<LeasedCommandState*>(command.state);
      CommandState* target = nullptr;
      if (relay == nullptr) {
        // A transaction's step: a transaction runs where its WATCH ran, or not at all. It
        // fails now, never sent (safe to retry), rather than at its timeout.
        if (command.counted) core.shared().release_slots(1);
        if (command.state) {
          fail_on_io_thread(
              *connection, command.state,
              Error(errc::not_sent,
                    std::string(command.name) + " not sent: its slot " +
                        std::to_string(command.slot) + " moved from " +
                        connection->endpoint().to_string() +
                        (owner ? " to " + (*owner)->endpoint().to_string() : std::string()) +
                        " before it was written; nothing ran, safe to retry"));
        }
        continue;
      }
      if (!relay->take_back(target)) {  // completed meanwhile (it timed out)
        relay->release();
        continue;
      }
      const CommandInfo& info = relay->info();
      const int db = relay->db();
      relay->release();  // the queue's reference
      if (!owner) {
        refuse_unleased(core, target, command.counted, std::move(owner).error());
        continue;
      }
      // The wait for a connection there is bounded as a new command's would be.
      const Clock::time_point wait_until =
          std::min(command.deadline, Clock::now() + core.shared().config().async_timeout);
      PendingCommand prototype = command;
      prototype.state = nullptr;
      pool->acquire(
          (*owner)->endpoint(), wait_until, info.name,
          [&core, &info, pool, db, target, prototype,
           encoded = bytes.substr(command.bytes_begin, command.bytes_end - command.bytes_begin)](
              Result<std::shared_ptr<Connection>> leased) mutable {
            if (!leased) {
              refuse_unleased(core, target, prototype.counted, std::move(leased).error());
              return;
            }
            send_leased(core, pool, info, db, target, std::move(*leased), encoded, prototype,
                        /*first_send=*/false);
          });
    }
  }
}

}  // namespace redmux::detail
