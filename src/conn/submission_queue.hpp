// SubmissionQueue: the one structure a connection shares between threads (DESIGN "group
// commit"). Any thread appends a command's encoded bytes and its PendingCommand under a short
// lock; the connection's I/O thread takes everything queued at once and writes it in one go.
//
// Wake-ups: a pusher is told to wake the I/O thread only when the queue was idle (nobody has
// been told to come for it yet) or when its deadline is earlier than every queued one (so the
// I/O thread can re-arm its timer). The I/O thread clears the idle flag only when it finds
// the queue empty, under the same lock, so a wake-up can never be lost.
//
// Database switches: commands carry the database they target; when it differs from the
// stream's current database a SELECT is queued in front of them, so a run of commands for one
// database costs nothing extra. Sans-IO: no sockets, no Asio.
#pragma once

#include <cstddef>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "conn/pending_command.hpp"
#include "redmux/arg.hpp"

namespace redmux::detail {

class SubmissionQueue {
 public:
  struct Snapshot {
    std::size_t commands = 0;
    std::size_t bytes = 0;
  };

  /// `db`: the database a new connection starts on (the handshake selects it).
  explicit SubmissionQueue(int db = 0) : stream_db_(db), queue_start_db_(db) {}

  enum class Pushed { Queued, QueuedWake, Closed };

  /// Queues one command for database `db` (-1: whichever the stream is on). QueuedWake: the
  /// caller must wake the I/O thread. Closed: nothing was queued (the connection shut down).
  Pushed push(int db, std::span<const Arg> args, PendingCommand command);
  /// Queues pre-encoded commands contiguously (a Batch): `commands[i].bytes_begin/bytes_end`
  /// are offsets into `bytes`. No other caller's command can land between them.
  Pushed push_batch(int db, std::string_view bytes, std::span<PendingCommand> commands);

  /// I/O thread: moves everything queued into `bytes` and `commands` (both cleared first).
  /// When nothing is queued the queue goes idle and the next push wakes the I/O thread.
  /// Entries whose state was already completed (timed out while queued) are dropped here,
  /// bytes and all, so a command whose caller was told "timeout" is never sent; they are
  /// appended to `dropped` for the caller to release.
  void take(std::string& bytes, std::vector<PendingCommand>& commands,
            std::vector<PendingCommand>& dropped);
  /// I/O thread: marks the queue as being looked after without taking anything (while the
  /// connection is not ready to write), so pushes do not wake it again needlessly.
  void hold();
  /// I/O thread: the stream restarted (new connection): its database is `db` again.
  void reset_stream_database(int db);
  /// Entries whose deadline passed (callers only), with an extra reference each; they stay
  /// queued and are dropped at take(). Also returns the earliest deadline still pending.
  Clock::time_point collect_expired(Clock::time_point now, std::vector<PendingCommand>& expired);
  /// Removes entries already completed (timed out) while nothing is being written, so they
  /// give back their slots even while the connection is down. Appended to `dropped`.
  void purge_completed(std::vector<PendingCommand>& dropped);
  /// Removes every entry (fail-fast while disconnected): appended to `out`.
  void drain(std::vector<PendingCommand>& out);
  /// Removes every entry and refuses every later push (shutdown).
  void close(std::vector<PendingCommand>& out);

  Snapshot snapshot() const;

 private:
  Pushed note_push_locked(Clock::time_point deadline);
  void switch_database_locked(int db);
  static void remove_completed(std::string& bytes, std::vector<PendingCommand>& commands,
                               std::vector<PendingCommand>& dropped);

  mutable std::mutex mutex_;
  std::string bytes_;
  std::vector<PendingCommand> commands_;
  int stream_db_;       ///< database after the last queued command
  int queue_start_db_;  ///< database the stream is on where the queued commands begin
  bool io_pending_ = false;
  bool closed_ = false;  ///< the I/O thread has been told to come (or is holding)
  Clock::time_point earliest_deadline_ = Clock::time_point::max();
};

}  // namespace redmux::detail
