// Hooks: what a multiplexer reports, per command, per write, per batch or transaction and as
// log records, to functions the application installs (Multiplexer::on_command(), on_write(),
// on_batch(), on_log()). Field names
// follow OpenTelemetry's semantic conventions for Redis (db.operation.name, db.namespace,
// server.address …) so that a bridge to a tracing SDK is a few lines
// (docs/observability.md shows one).
//
// Threads: hooks run on an I/O thread (the command hook of a read answered from the
// client-side cache: on the caller's thread), in the middle of its work: they must not block (no
// wait on a future, no lock held long, no I/O). A hook that throws is caught and counted
// (MultiplexerStatus::hook_errors); one that takes more than a millisecond is counted too
// (slow_hooks). The events' string_views live only for the call: copy what you keep.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace redmux {

/// How a command ended.
enum class CommandOutcome {
  Value,            ///< the server answered with a value
  ServerError,      ///< the server answered with an error (WRONGTYPE, NOSCRIPT …)
  Timeout,          ///< its deadline passed first (asyncTimeout or its own)
  ConnectionError,  ///< its connection broke or closed; not resent
};
std::string_view to_string(CommandOutcome outcome) noexcept;

/// When each phase of a command ended (steady_clock). A phase not reached is time_point{}.
struct CommandPhases {
  using TimePoint = std::chrono::steady_clock::time_point;
  /// The call that sent it was made and the command queued for its connection (one instant:
  /// the caller's thread encodes it into the connection's queue in that call).
  TimePoint created{};
  /// The write that carried it started (group commit: one instant per write). A command the
  /// caller's thread wrote itself (the connection was idle) has written == created. Set
  /// also for a command that timed out or lost its connection after it was written.
  TimePoint written{};
  TimePoint reply_read{};  ///< its reply was read from the socket (one instant per read)
  /// Its future held the value (a caller woken, a then() run); for a Timeout or
  /// ConnectionError, when its future was failed — so every event has it.
  TimePoint delivered{};
};

/// One command, once it ended. Only callers' commands are reported (not redmux's own PING,
/// SELECT, ROLE …, nor fire-and-forget ones, which no one waits for), each as the server
/// answered it; a transaction's MULTI and EXEC count as its caller's. A command refused at
/// the call (queue full, failFast, closed, admin …) is reported on the caller's thread, with
/// no server and error_type "queue_full", "connection_error" or "refused"; the commands of a
/// Batch or transaction that never reached a server are told of by its BatchEvent alone.
struct CommandEvent {
  static constexpr std::string_view db_system_name = "redis";  ///< db.system.name
  std::string_view operation_name;  ///< db.operation.name: "GET", "CLIENT KILL"
  int db_namespace = 0;             ///< db.namespace: the database index
  std::string_view server_address;  ///< server.address: host, or the Unix socket path
  int server_port = 0;              ///< server.port (0 for a Unix socket)
  CommandOutcome outcome = CommandOutcome::Value;
  /// db.response.status_code: the error reply's prefix ("WRONGTYPE", "ERR"); empty otherwise.
  std::string_view response_status_code;
  /// error.type: the status code for a server error, "timeout", "connection_error";
  /// "queue_full" or "refused" for a refusal at the call; empty for a value.
  std::string_view error_type;
  std::string_view error_message;  ///< the server's or redmux's message; empty for a value
  std::size_t bytes_written = 0;   ///< its request on the wire
  std::size_t bytes_read = 0;      ///< its reply on the wire (0 without one)
  bool resent = false;             ///< written again after a connection broke
  /// Answered from the client-side cache (clientCache=true): nothing was sent, bytes are 0,
  /// its phases are created and delivered only, and server_address / server_port name the
  /// connection whose cache held the reply. This event's hook runs on the caller's thread.
  bool cached = false;
  /// A blocking command with a blocking time (BLPOP … 5, BLMOVE, XREAD … BLOCK 100, WAIT):
  /// its phases include the wait it asked the server for. It never counts as slow, and stays
  /// out of its endpoint's latency histograms (its command's own are kept).
  bool blocking = false;
  CommandPhases phases;
};

/// One write to a socket (one pipelined batch: every command queued meanwhile, a Batch, a
/// transaction's commands).
struct WriteEvent {
  std::string_view server_address;  ///< server.address
  int server_port = 0;              ///< server.port
  std::size_t batch_size = 0;       ///< db.operation.batch.size: commands it carried
  std::size_t bytes = 0;            ///< bytes it carried
  /// The caller's thread wrote it itself (the connection was idle, or the command was 1 MiB
  /// or more and no other thread was writing), else the I/O thread. Callers' writes are
  /// reported by the I/O thread when it next runs, those made since its last run as one
  /// event.
  bool from_caller = false;
  /// When it started (callers' writes: when the first of them was written)
  std::chrono::steady_clock::time_point at{};
};

/// What a BatchEvent is about.
enum class BatchKind {
  Batch,        ///< a Batch's commands, handed to their connection as one (Batch::execute())
  Transaction,  ///< a transaction: WATCH and its checks, then MULTI … EXEC
};
std::string_view to_string(BatchKind kind) noexcept;

/// A Batch or a transaction as one unit, beside its commands' own events (go-redis's span
/// per pipeline). A Batch's event is raised by execute() on the calling thread once its
/// commands are queued (in a Redis Cluster, one per node it was split over): what went out
/// together; its commands' events say how each went. A transaction's is raised when its
/// outcome is known (usually on an I/O thread): `phases` span the whole run.
struct BatchEvent {
  static constexpr std::string_view db_system_name = "redis";  ///< db.system.name
  BatchKind kind = BatchKind::Batch;
  /// db.operation.name: "BATCH" for a Batch (OpenTelemetry's name for a batch of several
  /// operations), "MULTI" for a transaction.
  std::string_view operation_name;
  int db_namespace = 0;             ///< db.namespace: the database index
  std::string_view server_address;  ///< server.address (empty: not routed, e.g. refused)
  int server_port = 0;              ///< server.port
  std::size_t batch_size = 0;       ///< db.operation.batch.size: the caller's commands in it
  std::size_t bytes_written = 0;    ///< those commands' bytes on the wire
  /// A Batch: always Value (it was queued). A transaction: Value when EXEC committed or a
  /// watched key or a condition stopped it (`committed` says which), ServerError when EXEC
  /// was refused (EXECABORT), Timeout or ConnectionError when it did not finish.
  CommandOutcome outcome = CommandOutcome::Value;
  bool committed = false;                           ///< a transaction whose EXEC ran its commands
  std::string_view response_status_code;            ///< db.response.status_code: "EXECABORT" …
  std::string_view error_type;                      ///< error.type; empty when outcome is Value
  std::string_view error_message;                   ///< why it did not commit; empty when committed
  std::chrono::steady_clock::time_point created{};  ///< execute() was called
  std::chrono::steady_clock::time_point ended{};    ///< queued (a Batch); the outcome known
};

/// Severity of a log record; a log hook is given those at or above its level.
enum class LogLevel { Debug, Info, Warning, Error, Off };
std::string_view to_string(LogLevel level) noexcept;

/// One log record. Debug: redirects followed, commands resent. Info: connected, reconnecting,
/// restored. Warning: a failed attempt or a break, a dead connection, a slow command (over
/// slowCommandThreshold, with its phases), commands that timed out (at most one record a
/// second per connection, counting those since the last). Error: a hook that threw.
struct LogRecord {
  LogLevel level = LogLevel::Info;
  std::string_view endpoint;  ///< the connection's "host:port", or empty
  std::string_view message;
};

using CommandHook = std::function<void(const CommandEvent&)>;
using WriteHook = std::function<void(const WriteEvent&)>;
using LogHook = std::function<void(const LogRecord&)>;
using BatchHook = std::function<void(const BatchEvent&)>;

}  // namespace redmux
