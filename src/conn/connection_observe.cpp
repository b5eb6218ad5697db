// ConnectionMachine, part three: what the connection tells its multiplexer's Observer
// (observe/observer.hpp) — a command's phases into the latency histograms and the command
// hook, each write to the write hook, log records. Called only when something watches:
// the data path checks Observer::watching() (one load) and comes here.
//
// The phases' instants, and where they come from, so that none costs a clock read per
// command that the data path does not already make:
//   created     deadline − timeout: the caller's deadline_for() read the clock once
//   written     the event that started the write (Pipeline's marks, one per write); a
//               command its caller wrote inline: created (the same call)
//   reply_read  the read event's time (one per read, shared by the replies it carried)
//   delivered   one clock read after the future was completed (only here, when watched)
#include "conn/connection_machine.hpp"

#include <algorithm>

namespace redmux::detail {
namespace {

/// The prefix of an error reply: "WRONGTYPE Operation against …" → "WRONGTYPE".
std::string_view error_prefix(std::string_view message) noexcept {
  const std::size_t space = message.find(' ');
  return space == std::string_view::npos ? message : message.substr(0, space);
}

}  // namespace

void ConnectionMachine::observe_reply(const PendingCommand& command, Clock::time_point written,
                                      NodeSpan reply, std::size_t reply_bytes) {
  // Callers' commands with a deadline: the deadline is how the creation time is known (and
  // a BLPOP … 0 has none); redmux's own and fire-and-forget commands have no one waiting.
  if (command.kind != PendingKind::Caller || command.deadline == Clock::time_point::max()) return;
  const Clock::time_point created = created_at(command);
  const Clock::time_point delivered = observer_.now();
  if (observer_.histograms()) {
    // Each latency's bucket once, for its command's and its endpoint's histograms; the
    // command's histograms found once per run of one name (a burst of INCRs looks it up
    // once).
    const std::uint64_t reply_ns = AtomicHistogram::nanoseconds(now_ - created);
    const std::uint64_t delivery_ns = AtomicHistogram::nanoseconds(delivered - created);
    const std::size_t reply_bucket = LatencyHistogram::bucket_of(reply_ns);
    const std::size_t delivery_bucket = LatencyHistogram::bucket_of(delivery_ns);
    if (command.name.data() != last_name_) {
      last_name_latency_ = observer_.command_latency(command.name);
      last_name_ = last_name_latency_ ? command.name.data() : nullptr;
    }
    if (LatencyPair* by_name = last_name_latency_) {
      by_name->to_reply.record(reply_ns, reply_bucket);
      by_name->to_delivery.record(delivery_ns, delivery_bucket);
    }
    // A blocking command's time is mostly the wait it asked for: not the server's latency.
    LatencyPair* by_endpoint =
        command.timeout_source == TimeoutSource::Blocking ? nullptr : endpoint_latency_;
    if (by_endpoint) {
      by_endpoint->to_reply.record(reply_ns, reply_bucket);
      by_endpoint->to_delivery.record(delivery_ns, delivery_bucket);
    }
  }
  if (!observer_.wants_events()) return;
  if (written == Clock::time_point{} || written < created || written > now_) written = created;
  CommandEvent event;
  event.operation_name = command.name;
  event.db_namespace = command.db < 0 ? config_.default_database : command.db;
  event.server_address = endpoint_.is_unix() ? endpoint_.unix_path : endpoint_.host;
  event.server_port = endpoint_.is_unix() ? 0 : endpoint_.port;
  if (is_error_reply(reply)) {
    event.outcome = CommandOutcome::ServerError;
    event.error_message = reply[0].value;
    event.response_status_code = error_prefix(reply[0].value);
    event.error_type = event.response_status_code;
  }
  event.bytes_written = command.bytes_end - command.bytes_begin;
  event.bytes_read = reply_bytes;
  event.resent = command.resends > 0;
  event.blocking = command.timeout_source == TimeoutSource::Blocking;
  event.phases.created = created;
  event.phases.written = written;
  event.phases.reply_read = now_;
  event.phases.delivered = delivered;
  observer_.command_done(event);
}

void ConnectionMachine::observe_failure(const PendingCommand& command, CommandOutcome outcome,
                                        const Error& error, std::size_t written,
                                        Clock::time_point written_at) {
  if (command.kind != PendingKind::Caller || command.deadline == Clock::time_point::max()) return;
  CommandEvent event;
  event.operation_name = command.name;
  event.db_namespace = command.db < 0 ? config_.default_database : command.db;
  event.server_address = endpoint_.is_unix() ? endpoint_.unix_path : endpoint_.host;
  event.server_port = endpoint_.is_unix() ? 0 : endpoint_.port;
  event.outcome = outcome;
  event.error_type = outcome == CommandOutcome::Timeout ? "timeout" : "connection_error";
  event.error_message = error.message();
  event.resent = command.resends > 0;
  event.blocking = command.timeout_source == TimeoutSource::Blocking;
  const Clock::time_point created = created_at(command);
  event.phases.created = created;
  // Only what reached the socket: none of a command that timed out while queued, part of one
  // whose write a break cut short. A command written has its `written` phase as a reply's
  // would (its caller's inline write: created).
  if (written > command.bytes_begin) {
    event.bytes_written = std::min(written, command.bytes_end) - command.bytes_begin;
    event.phases.written =
        written_at == Clock::time_point{} || written_at < created ? created : written_at;
  }
  // The failure reaches its future now (the caller is woken with the error, or its
  // continuation runs): that is its delivery, so a span ends here and not at `created`.
  event.phases.delivered = observer_.now();
  observer_.command_done(event);
}

void ConnectionMachine::observe_write(std::size_t commands, std::size_t bytes, bool from_caller,
                                      Clock::time_point at) {
  WriteEvent event;
  event.server_address = endpoint_.is_unix() ? endpoint_.unix_path : endpoint_.host;
  event.server_port = endpoint_.is_unix() ? 0 : endpoint_.port;
  event.batch_size = commands;
  event.bytes = bytes;
  event.from_caller = from_caller;
  event.at = at;
  observer_.write_done(event);
}

void ConnectionMachine::log(LogLevel level, std::string_view message) noexcept {
  observer_.log(level, endpoint_text_, message);
}

}  // namespace redmux::detail
