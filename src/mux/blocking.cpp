#include "mux/blocking.hpp"

#include "commands/command_rules.hpp"
#include "mux/cluster.hpp"
#include "mux/core.hpp"
#include "mux/dedicated_pool.hpp"
#include "resp/encoder.hpp"

#include <vector>

namespace redmux::detail {

LeasedCommandState::LeasedCommandState(CommandState* target, std::shared_ptr<DedicatedPool> pool,
                                       std::shared_ptr<Connection> connection) noexcept
    : target_(target), pool_(std::move(pool)), connection_(std::move(connection)) {}

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

void LeasedCommandState::finish(bool reusable) noexcept {
  publish();
  try {
    pool_->give_back(connection_, reusable);
  } catch (...) {  // out of memory while serving a waiter: that waiter's deadline fails it
  }
}

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
  pool->acquire(
      *target, wait_until, info.name,
      [&core, &info, pool, db, state, block, call_timeout, reply_timeout, per_call, own_timeout,
       bytes = std::move(bytes)](Result<std::shared_ptr<Connection>> leased) mutable {
        if (!leased) {
          core.shared().release_slots(1);
          if (state) {
            state->fail(std::move(leased).error());
            state->release();
          }
          return;
        }
        std::shared_ptr<Connection> connection = std::move(*leased);
        auto* relay = new LeasedCommandState(state, pool, connection);  // takes our reference
        relay->command_name = info.name;
        if (ClusterRouter* router = core.cluster()) {
          relay->learn_redirects_with(router->weak_from_this());
        }
        if (Error error = db < 0 ? Error() : core.check_database(db, *connection, info)) {
          core.shared().release_slots(1);
          relay->fail(std::move(error));  // gives the connection back
          relay->release();
          return;
        }
        PendingCommand command;
        command.name = info.name;
        command.state = relay;  // the relay's one reference moves to the connection
        command.kind = PendingKind::Caller;
        command.bytes_begin = 0;
        command.bytes_end = bytes.size();
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
          command.deadline = Clock::time_point::max();  // BLPOP … 0: blocks until answered
        }
        core.shared().counters().commands.fetch_add(1, std::memory_order_relaxed);
        connection->submit_batch(db, bytes, std::span<PendingCommand>(&command, 1));
      });
  return Error();
}

}  // namespace redmux::detail
