#include "redmux/batch.hpp"

#include <algorithm>

#include "redmux/database.hpp"

#include "conn/messages.hpp"
#include "mux/cluster.hpp"
#include "mux/core.hpp"
#include "resp/encoder.hpp"

namespace redmux {
namespace detail {

// A batch's commands, encoded into one buffer on the calling thread; handed to the
// connection in one push so they are written contiguously.
struct BatchBuffer {
  std::shared_ptr<MuxCore> core;
  int db = 0;
  std::string bytes;
  std::vector<PendingCommand> commands;
  Connection* connection = nullptr;  ///< chosen by the first keyed command
  bool keyed = false;
  /// `connection` was chosen by a read-only command, which may have picked a replica: the
  /// first command that needs the primary routes the batch again (one batch, one connection).
  bool chosen_by_read = false;
  /// A command added demands a replica (DemandReplica): the batch never moves to the
  /// primary, and a command that needs the primary is refused.
  bool demands_replica = false;
  /// A read added prefers the primary (PreferMaster, the default): a DemandReplica read does
  /// not take the batch from the primary to a replica.
  bool prefers_primary = false;
  /// Redis Cluster: the batch split per node, each part in the batch's order (then
  /// `commands` above is empty and the parts hold everything).
  struct Part {
    Connection* connection = nullptr;
    std::string bytes;
    std::vector<PendingCommand> commands;
  };
  std::vector<Part> parts;
  /// The part for `node`, added at the end when the batch has none for it yet.
  Part& part_for(Connection* node) {
    auto part = std::find_if(parts.begin(), parts.end(),
                             [&](const Part& p) { return p.connection == node; });
    if (part != parts.end()) return *part;
    parts.push_back(Part{node, {}, {}});
    return parts.back();
  }
  /// clientCache=true: what the batch writes, invalidated again once it is queued.
  WrittenKeys written;
  /// The callers' states of the commands added since the last execute(), marked buffered
  /// (CommandState::set_buffered()), one reference each.
  std::vector<CommandState*> buffered;

  void mark_buffered(CommandState* state) {
    buffered.push_back(state);  // first: if it throws, nothing is marked or referenced
    state->add_ref();
    state->set_buffered(true);
  }
  void unmark_buffered() noexcept {
    for (CommandState* state : buffered) {
      state->set_buffered(false);
      state->release();
    }
    buffered.clear();
  }

  std::size_t size() const noexcept {
    std::size_t n = commands.size();
    for (const Part& part : parts) n += part.commands.size();
    return n;
  }

  /// Fails every command with errc::not_sent: "<NAME> not sent: <why>".
  void fail_all(const Error& why) {
    unmark_buffered();
    std::size_t slots = 0;
    auto fail = [&](std::vector<PendingCommand>& list) {
      for (PendingCommand& command : list) {
        if (command.state) {
          command.state->fail(not_sent_error(command, why, errc::not_sent, ""));
          command.state->release();
        }
        slots += command.counted ? 1 : 0;
      }
    };
    fail(commands);
    for (Part& part : parts) fail(part.commands);
    core->shared().release_slots(slots);
    commands.clear();
    bytes.clear();
    parts.clear();
    connection = nullptr;
    keyed = false;
    chosen_by_read = false;
    demands_replica = false;
    prefers_primary = false;
  }
};

/// The refusal of a command that cannot share the batch's one connection with the commands
/// before it: `for_primary`, it needs the primary and the batch holds a DemandReplica read;
/// else it demands a replica and the batch runs on the primary.
Error batch_conflict(const CommandInfo& info, Flags flags, bool for_primary) {
  const std::string name(info.name);
  std::string message =
      for_primary
          ? name +
                (has_flag(flags, Flags::DemandMaster) ? " demands the primary (DemandMaster)"
                                                      : " needs the primary") +
                ", but this batch holds a read that demands a replica (DemandReplica)"
          : name +
                " demands a replica (DemandReplica), but this batch runs on the primary, "
                "which a command before it needs or prefers (a write, or a read under "
                "PreferMaster, the default, or DemandMaster)";
  return Error(errc::not_allowed,
               message + "; a batch runs on one connection: send them in separate batches");
}

Error batch_add(BatchBuffer* target, const CallOptions& options, std::span<const Arg> args,
                CommandState* state) {
  if (target == nullptr) {
    Error error(errc::invalid_argument, "redmux: a command added to a moved-from Batch");
    if (state) state->fail(error);
    return error;
  }
  BatchBuffer& buffer = *target;
  MuxCore& core = *buffer.core;
  const CommandInfo& info = command_info(args);
  // Every refusal is returned as well as set on `state`: a fire-and-forget command has no
  // state, and its future must still hold the refusal (never a silent drop).
  auto refuse = [&](Error error, bool slot_taken) {
    if (slot_taken) core.shared().release_slots(1);
    if (state) state->fail(error);
    report_refusal(core, buffer.db, args, state, error);
    return error;
  };
  if (Error error = core.check_allowed(info, args, MuxCore::Site::Batch))
    return refuse(std::move(error), false);
  if (auto added = buffer.written.note(core.cache_route(), info, args)) {
    core.cache_route().invalidate_keys(added->keys, added->everything);  // again at execute()
  }
  if (state) state->command_name = info.name;
  auto [deadline, timeout_ms] = core.deadline_for(options);
  // A batch's commands hold their slots until execute() sends them: when they hold them all,
  // queueFullPolicy=wait would wait for room only this batch's own execute() can make (each
  // add its whole timeout, while the commands already added time out). Refused at once.
  const std::size_t limit = core.config().max_queued_commands;
  const bool all_its_own = buffer.size() >= limit;
  if (!core.shared().acquire_slot(all_its_own ? Clock::now() : deadline)) {
    core.shared().counters().queue_full.fetch_add(1, std::memory_order_relaxed);
    const std::string name(info.name);
    if (all_its_own) {
      return refuse(
          Error(errc::queue_full,
                name + " refused: this Batch's own " + std::to_string(buffer.size()) +
                    " commands hold every slot of maxQueuedCommands=" + std::to_string(limit) +
                    " until execute() sends them; execute() it first, or raise "
                    "maxQueuedCommands"),
          false);
    }
    return refuse(core.queue_full_error(info, deadline, timeout_ms), false);
  }
  const bool has_key = first_key_index(info, args).has_value();
  if (core.cluster()) {
    // Split per node: each command goes with the others for its slot's node (a keyless one
    // with the first part), in the batch's order within each node.
    if (buffer.db != 0) {
      return refuse(
          Error(errc::invalid_argument, std::string(info.name) + " refused: database " +
                                            std::to_string(buffer.db) +
                                            " does not exist in a Redis Cluster (only database 0)"),
          true);
    }
    if (has_key) {
      // MGET, MSET, DEL … across slots, as a lone command is: split per slot, each part with
      // the batch's other commands for its node, at this command's place among them.
      const PendingCommand prototype =
          timed_command(info.name, deadline, timeout_ms, options.timeout.count() > 0);
      Result<bool> split = split_into_batch(
          *core.cluster(), info, args, state, prototype, buffer.db, options.flags,
          [&](Connection* node, std::span<const Arg> part_args, PendingCommand entry) {
            BatchBuffer::Part& part = buffer.part_for(node);
            entry.bytes_begin = part.bytes.size();
            resp::encode_command(part.bytes, part_args);
            entry.bytes_end = part.bytes.size();
            part.commands.push_back(entry);
          });
      if (!split) return refuse(std::move(split).error(), true);
      if (*split) {
        if (state) buffer.mark_buffered(state);
        return Error();
      }
    }
    Connection* node = nullptr;
    if (has_key || buffer.parts.empty()) {
      Result<Connection*> routed = core.route(info, args, options.flags);
      if (!routed) return refuse(std::move(routed).error(), true);
      node = *routed;
    } else {
      node = buffer.parts.front().connection;
    }
    BatchBuffer::Part* part = &buffer.part_for(node);
    PendingCommand command =
        timed_command(info.name, deadline, timeout_ms, options.timeout.count() > 0);
    command.bytes_begin = part->bytes.size();
    resp::encode_command(part->bytes, args);
    command.bytes_end = part->bytes.size();
    command.kind = state ? PendingKind::Caller : PendingKind::FireAndForget;
    if (!state) command.deadline = Clock::time_point::max();
    // MOVED / ASK / TRYAGAIN / CLUSTERDOWN while a slot moves are followed, and a command
    // still queued for a node that lost its slot moves on, as for a lone command.
    if (state) buffer.mark_buffered(state);
    prepare_cluster_entry(*core.cluster(), state, args, command, buffer.db, node);
    part->commands.push_back(command);
    return Error();
  }
  // One batch, one connection. A command that needs the primary (a write, anything not
  // read-only, DemandMaster) after reads that chose a replica takes the whole batch to the
  // primary, where those reads may run too (while no primary is known it is refused, as it
  // would be alone); a read never takes a batch such a command chose onto a replica. A read
  // under DemandReplica takes a batch that reads accepting a replica chose to a replica, and
  // is refused in one that runs on the primary for a command that needs it or a read that
  // prefers it (PreferMaster); a command that needs the primary is refused in a batch that
  // holds such a read. Where a command could not run alone either, it gets that refusal.
  const bool read_only = info.is(CommandFlag::ReadOnly);
  const bool for_primary = needs_primary(read_only, options.flags);
  const bool for_replica = !for_primary && has_flag(options.flags, Flags::DemandReplica);
  const bool on_primary = for_replica && buffer.connection && !buffer.connection->is_replica();
  const bool kept_on_primary = !buffer.chosen_by_read || buffer.prefers_primary;
  const bool conflict =
      (for_primary && buffer.demands_replica) || (for_replica && on_primary && kept_on_primary);
  if (conflict || !buffer.connection || (has_key && !buffer.keyed) ||
      (buffer.chosen_by_read && (for_primary || (for_replica && on_primary)))) {
    Result<Connection*> connection = core.route(info, args, options.flags);
    if (!connection) return refuse(std::move(connection).error(), true);
    if (conflict) return refuse(batch_conflict(info, options.flags, for_primary), true);
    const bool by_reads = !buffer.connection || buffer.chosen_by_read;
    if (by_reads || for_primary || !(*connection)->is_replica()) {
      buffer.connection = *connection;
      buffer.chosen_by_read = by_reads && !for_primary;
    }
    buffer.keyed = buffer.keyed || has_key;
  }
  buffer.prefers_primary = buffer.prefers_primary ||
                           (read_only && replica_use_of(options.flags) == ReplicaUse::Fallback);
  buffer.demands_replica = buffer.demands_replica || for_replica;
  if (Error error = core.check_database(buffer.db, *buffer.connection, info)) {
    return refuse(std::move(error), true);
  }
  PendingCommand command =
      timed_command(info.name, deadline, timeout_ms, options.timeout.count() > 0);
  command.bytes_begin = buffer.bytes.size();
  resp::encode_command(buffer.bytes, args);
  command.bytes_end = buffer.bytes.size();
  // Where else it may run if its connection loses its server (held_commands.hpp); settled
  // at execute(), when the batch's connection is known.
  if (read_only) command.replica_use = replica_use_of(options.flags);
  if (state) {
    buffer.mark_buffered(state);
    // The batch rides one connection: with several to the server, a write's keys may ride
    // others, so they are cleared again at its reply (cache_route.hpp).
    CommandState* sent =
        core.cache_route().clear_at_reply(info, args, state, CacheRoute::Ride::InBatch);
    if (sent == state) state->add_ref();  // the connection's (a wrapper comes with one)
    command.state = sent;
  } else {
    command.kind = PendingKind::FireAndForget;
    command.deadline = Clock::time_point::max();
  }
  buffer.commands.push_back(command);
  return Error();
}

/// Tells the batch hook of one part of a batch, just queued on `connection`, or refused
/// there (`queued` false: backlogPolicy=failFast while it is down, or closed).
void report_batch(Observer& observer, Connection& connection, int db, std::size_t size,
                  std::size_t bytes, Clock::time_point created, bool queued) noexcept {
  try {
    const Endpoint endpoint = connection.endpoint();
    BatchEvent event;
    event.kind = BatchKind::Batch;
    event.operation_name = "BATCH";
    event.db_namespace = db;
    event.server_address = endpoint.is_unix() ? endpoint.unix_path : endpoint.host;
    event.server_port = endpoint.is_unix() ? 0 : endpoint.port;
    event.batch_size = size;
    event.bytes_written = queued ? bytes : 0;  // refused: none of it reached a socket
    std::string refusal;
    if (!queued) {
      refusal = connection.refusal_of("BATCH").message();
      event.outcome = CommandOutcome::ConnectionError;
      event.error_type = "connection_error";
      event.error_message = refusal;
    }
    event.created = created;
    event.ended = observer.now();
    observer.batch_done(event);
  } catch (...) {  // out of memory copying the endpoint: the batch itself was queued
  }
}

}  // namespace detail

Batch::Batch(std::shared_ptr<detail::MuxCore> core, int db)
    : buffer_(std::make_unique<detail::BatchBuffer>()) {
  buffer_->core = std::move(core);
  buffer_->db = db;
}

Batch::Batch(Batch&&) noexcept = default;
Batch& Batch::operator=(Batch&&) noexcept = default;

Batch::~Batch() {
  if (buffer_ && buffer_->size() > 0) {
    buffer_->fail_all(Error(errc::not_sent, "the batch was destroyed before execute()"));
  }
}

std::size_t Batch::size() const noexcept {
  return buffer_ ? buffer_->size() : 0;
}

void Batch::execute() {
  if (!buffer_) return;
  detail::BatchBuffer& b = *buffer_;
  b.unmark_buffered();
  // A command's timeout started when it was added: one whose deadline has passed is not sent
  // (a failed state is dropped from its connection's queue unwritten).
  const detail::Clock::time_point now = detail::Clock::now();
  auto expire = [&](std::vector<detail::PendingCommand>& commands) {
    for (detail::PendingCommand& command : commands) {
      if (command.state && command.kind == detail::PendingKind::Caller && command.deadline <= now &&
          !command.state->claimed()) {
        // One per TimeoutError a caller gets: a split command's first part stands for it.
        if (command.counted || command.tallied) {
          b.core->shared().counters().timeouts.fetch_add(1, std::memory_order_relaxed);
        }
        command.state->fail(Error::never_ran(
            errc::timeout,
            "Timeout: " + std::string(command.name) + " not sent: its " +
                std::to_string(command.timeout_ms) +
                " ms timeout, counted from when it was added to its Batch, passed before "
                "execute()"));
      }
    }
  };
  expire(b.commands);
  for (detail::BatchBuffer::Part& part : b.parts) expire(part.commands);
  detail::Observer& observer = b.core->shared().observer();
  // One load when no batch hook is installed; the event is built only for one.
  const bool report = observer.wants_batches();
  const detail::Clock::time_point created = report ? observer.now() : detail::Clock::time_point{};
  for (detail::BatchBuffer::Part& part : b.parts) {
    // A command split per slot counts once (its first part), as a lone one does.
    const auto accepted = std::count_if(
        part.commands.begin(), part.commands.end(),
        [](const detail::PendingCommand& command) { return command.counted || command.tallied; });
    b.core->shared().counters().commands.fetch_add(static_cast<std::uint64_t>(accepted),
                                                   std::memory_order_relaxed);
    const bool queued =
        part.connection->submit_batch(b.db, part.bytes, part.commands, /*fail_fast=*/true);
    if (report) {
      detail::report_batch(observer, *part.connection, b.db, part.commands.size(),
                           part.bytes.size(), created, queued);
    }
  }
  b.parts.clear();
  if (b.commands.empty()) {
    b.written.leave_caches(b.core->cache_route());
    b.written.clear();
    return;
  }
  if (!b.connection->is_replica()) {
    // On the primary, its reads keep their place behind its writes if the primary is lost: a
    // PreferReplica read there follows a command that needs the primary.
    for (detail::PendingCommand& command : b.commands) {
      if (command.replica_use == detail::ReplicaUse::Prefer) {
        command.replica_use = detail::ReplicaUse::Fallback;
      }
    }
  }
  b.core->shared().counters().commands.fetch_add(b.commands.size(), std::memory_order_relaxed);
  const bool queued = b.connection->submit_batch(b.db, b.bytes, b.commands, /*fail_fast=*/true);
  if (report) {
    detail::report_batch(observer, *b.connection, b.db, b.commands.size(), b.bytes.size(), created,
                         queued);
  }
  b.written.leave_caches(b.core->cache_route());
  b.written.clear();
  b.commands.clear();
  b.bytes.clear();
  b.connection = nullptr;
  b.keyed = false;
  b.chosen_by_read = false;
  b.demands_replica = false;
  b.prefers_primary = false;
}

Batch Database::batch() const {
  return Batch(core_, db_);
}

}  // namespace redmux
