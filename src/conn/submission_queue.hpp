// SubmissionQueue: the one structure a connection shares between threads (DESIGN "group
// commit"). Any thread appends a command's encoded bytes and its PendingCommand under a short
// lock; the connection's I/O thread takes everything queued at once and writes it in one go.
//
// The writer role: exactly one thread writes to the socket at a time. A pusher that finds the
// queue idle takes the role: it writes its bytes itself when the connection is ready and
// the I/O thread's deadline timer already covers its deadline and either no reply is
// awaited or its command is large (kInlineWriteBytes) (WriteInline), else it wakes the I/O
// thread, which then holds the role until it finds the queue empty. The role is
// given up only under this lock, so a wake-up can never be lost, and nobody ever writes
// while another writer's bytes are on their way.
//
// Database switches: commands carry the database they target; when it differs from the
// stream's current database a SELECT is queued in front of them, so a run of commands for one
// database costs nothing extra. Sans-IO: no sockets, no Asio.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "conn/pending_command.hpp"
#include "core/adaptive_mutex.hpp"
#include "redmux/arg.hpp"

namespace redmux::detail {

class SubmissionQueue {
 public:
  /// A command (or Batch) of at least this many bytes is written by its caller whenever the
  /// writer role is free, replies awaited or not (below it, only when none are): it is a
  /// large write on its own, and handing it to the I/O thread would cost a wake-up of that
  /// thread per command. Smaller commands gain more from the I/O thread's batching, which
  /// writes several of them in one send(): one caller's SETs of 64 KiB moved about twice the
  /// bytes per second that way as when each was sent by its caller (docs/performance.md).
  static constexpr std::size_t kInlineWriteBytes = 1024 * 1024;

  struct Snapshot {
    std::size_t commands = 0;
    std::size_t bytes = 0;
  };

  /// `db`: the database a new connection starts on (the handshake selects it).
  explicit SubmissionQueue(int db = 0) : stream_db_(db), queue_start_db_(db) {}

  /// QueuedWake: wake the I/O thread. WriteInline: the queue was idle and the connection
  /// ready, so the pusher writes the bytes itself (take_inline()) — no thread hand-off at low
  /// load, or for a large command. Closed: nothing was queued (the connection shut down).
  /// QueuedRearm: the writer role is taken, but the I/O thread must re-arm its deadline timer
  /// for this command (it would fire too late).
  /// Forward (Redis Cluster): nothing was queued — a command sent where the slot map said
  /// (`follow_map`) is for a slot this node no longer serves (see reroute()); the caller
  /// hands it to the slot's new owner.
  enum class Pushed { Queued, QueuedWake, QueuedRearm, WriteInline, Closed, Forward };

  /// Queues one command for database `db` (-1: whichever the stream is on). QueuedWake: the
  /// caller must wake the I/O thread. Closed: nothing was queued (the connection shut down).
  Pushed push(int db, std::span<const Arg> args, PendingCommand command);
  /// Queues pre-encoded commands contiguously (a Batch): `commands[i].bytes_begin/bytes_end`
  /// are offsets into `bytes`. No other caller's command can land between them. Forward
  /// (nothing queued) when any of them is to be forwarded.
  Pushed push_batch(int db, std::string_view bytes, std::span<PendingCommand> commands);

  /// Redis Cluster, when the slot map changed: from now on `elsewhere` are the slots this
  /// node does not serve (null: every slot is welcome). Removes the entries still queued
  /// (never written) for those slots, in order, with their bytes: appended to `moved` and
  /// `bytes` (offsets rebased onto `bytes`), each with its reference and its slot of
  /// maxQueuedCommands, for the caller to hand to the slots' new owners. Later pushes of
  /// `follow_map` commands for those slots return Forward. Entries with no slot stay.
  void reroute(std::shared_ptr<const SlotSet> elsewhere, std::string& bytes,
               std::vector<PendingCommand>& moved);

  /// I/O thread: moves everything queued into `bytes` and `commands` (both cleared first).
  /// When nothing is queued the queue goes idle and the next push wakes the I/O thread.
  /// Entries whose state was already completed (timed out while queued) are dropped here,
  /// bytes and all, so a command whose caller was told "timeout" is never sent; they are
  /// appended to `dropped` for the caller to release. With fewer than `at_least` commands
  /// queued it takes nothing, keeps the writer role (pushes wake nobody) and returns false.
  bool take(std::string& bytes, std::vector<PendingCommand>& commands,
            std::vector<PendingCommand>& dropped, std::size_t at_least = 0);
  /// Pusher after WriteInline: moves the queued bytes into `bytes` and their commands to the
  /// hand-off list (drained by the I/O thread into its pipeline before it reads a reply).
  /// The caller then owns the writer role until finish_inline(). Returns true when the I/O
  /// thread's timer is no longer armed early enough for these commands' deadlines (it fired
  /// meanwhile): the caller must then have the I/O thread absorb them promptly.
  /// `stream_begin`, if given, receives the stream offset of bytes[0].
  /// `taken`, if given, receives the number of commands taken.
  bool take_inline(std::string& bytes, std::uint64_t* stream_begin = nullptr,
                   std::size_t* taken = nullptr);
  /// Pusher after its inline write: gives up the writer role. True when commands arrived
  /// meanwhile: the caller must then wake the I/O thread to write them.
  bool finish_inline();
  /// I/O thread: appends the commands written inline since the last call, in write order.
  void drain_handoff(std::vector<PendingCommand>& out);
  /// I/O thread: allows or forbids inline writes (ready and nothing written by the I/O thread
  /// is pending), and publishes the time its deadline timer is armed for: a command due
  /// earlier must wake the I/O thread instead of being written inline.
  void set_inline(bool allowed);
  void set_timer_armed_until(Clock::time_point at) {
    armed_until_.store(at.time_since_epoch().count(), std::memory_order_release);
  }
  /// I/O thread: how many commands await replies. Inline writes of small commands happen only
  /// when none do (a lone caller): under load the I/O thread batches them into few writes.
  void publish_in_flight(std::size_t count) { in_flight_.store(count, std::memory_order_release); }
  std::size_t in_flight() const noexcept { return in_flight_.load(std::memory_order_acquire); }
  /// Bytes taken for writing since the stream (re)started: stream offsets of taken commands.
  void reset_stream_offsets();

  /// A command to send again on the next connection, with its encoded bytes.
  struct Resend {
    PendingCommand command;  ///< `db` says which database it runs against
    std::string_view bytes;
  };
  /// I/O thread, while the connection is down: puts `resends` in front of everything queued,
  /// in order, selecting their databases as needed (the queued commands keep theirs). Does
  /// nothing once closed (see is_closed()).
  void requeue_front(std::span<const Resend> resends);
  /// I/O thread, from a new session's ready hook (before its first write): puts `commands`
  /// (encoded in `bytes`, bound to no database: pub/sub's) in front of everything queued —
  /// the backlog held while the connection was down goes out after them. False when closed.
  bool push_front(std::string_view bytes, std::span<PendingCommand> commands);
  bool is_closed() const;

  /// I/O thread: marks the queue as being looked after without taking anything (while the
  /// connection is not ready to write), so pushes do not wake it again needlessly.
  void hold();
  /// I/O thread: the stream restarted (new connection): its database is `db` again.
  void reset_stream_database(int db);
  /// Entries whose deadline passed (callers only), with an extra reference each; they stay
  /// queued and are dropped at take(). Also returns the earliest deadline still pending.
  /// The queued entries give up their slot of maxQueuedCommands here (`counted` cleared):
  /// each copy in `expired` with `counted` set is a slot the caller gives back at once.
  Clock::time_point collect_expired(Clock::time_point now, std::vector<PendingCommand>& expired);
  /// Removes entries already completed (timed out) while nothing is being written, so they
  /// give back their slots even while the connection is down. Appended to `dropped`.
  void purge_completed(std::vector<PendingCommand>& dropped);
  /// Removes every entry (fail-fast while disconnected): appended to `out`.
  void drain(std::vector<PendingCommand>& out);
  /// Removes every entry and refuses every later push (shutdown).
  void close(std::vector<PendingCommand>& out);

  Snapshot snapshot() const;

  /// Gives back the queue's byte buffer when it is empty and its capacity exceeds `above`
  /// (Writer::trim(): the large commands that grew it are over).
  void trim_bytes(std::size_t above);
  /// Pusher after an inline write of a large command: `spent` (its bytes sent, or copied
  /// elsewhere) becomes the queue's buffer when the queue's own is empty and smaller, so the
  /// next large command is encoded into memory already grown and trim_bytes() decides when
  /// to give it back; `spent` is left empty, holding no large buffer either way.
  void give_back_buffer(std::string& spent);

  /// For status(): accepted commands whose callers still wait (awaited_by_caller()) —
  /// queued and not yet written, and written inline but not yet in the pipeline.
  struct Tally {
    std::size_t queued = 0;
    std::size_t written = 0;
  };
  Tally tally() const;

 private:
  Pushed note_push_locked(Clock::time_point deadline, std::size_t bytes);
  void switch_database_locked(int db);
  /// Appends `commands` (offsets into `bytes`) at the end, their offsets moved to match.
  void append_locked(std::string_view bytes, std::span<const PendingCommand> commands);
  static void remove_completed(std::string& bytes, std::vector<PendingCommand>& commands,
                               std::vector<PendingCommand>& dropped);

  mutable AdaptiveMutex mutex_;
  std::string bytes_;
  std::vector<PendingCommand> commands_;
  int stream_db_;       ///< database after the last queued command
  int queue_start_db_;  ///< database the stream is on where the queued commands begin
  bool io_pending_ = false;
  bool closed_ = false;
  bool inline_allowed_ = false;
  std::shared_ptr<const SlotSet> elsewhere_;  ///< see reroute(); null outside Redis Cluster
  bool gated_ = false;  ///< closed_ or elsewhere_: push() looks closer (one test otherwise)
  std::uint64_t stream_taken_ = 0;  ///< bytes taken for writing since the stream restarted
  std::vector<PendingCommand> handoff_;
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<Clock::rep> armed_until_{
      Clock::time_point::max()
          .time_since_epoch()
          .count()};  ///< the I/O thread has been told to come (or is holding)
};

}  // namespace redmux::detail
