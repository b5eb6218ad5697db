// Writer: the write side of one connection (sans-IO). It decides what goes into the next
// write, when a write waits, and keeps the stream offsets that tell, after a break, which
// commands reached the socket.
//
// - Group commit: the I/O thread takes everything queued into one write (take()); when that
//   write completes it takes whatever arrived meanwhile.
// - Coalescing: with many commands awaiting replies, a write of few new ones waits for the
//   next replies instead (coalescing_threshold()) — never for a timer.
// - The yield: when the last replies released several blocked callers that have not queued
//   their next commands yet, the I/O thread lets them run once before it takes
//   (yield_for_released()).
// - Inline writes: a caller that finds the connection idle, or has a large command, sends its
//   own bytes (write_inline()); what the socket did not take the I/O thread writes
//   (resume_inline()).
//
// Stream offsets count the bytes of callers' commands since the connection became ready;
// written() is how many the socket accepted. A command whose first byte is at or past it
// never reached the server.
//
// Threads: write_inline() runs on a caller's thread, under the socket lock, which seal()
// takes too; written() and last_write() may be read anywhere. The rest is the I/O thread's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "conn/buffer_keep.hpp"
#include "conn/pending_command.hpp"
#include "conn/shared_context.hpp"
#include "conn/submission_queue.hpp"

namespace redmux::detail {

class Writer {
 public:
  /// Bytes of one contiguous stretch of the stream, with the offset of its first byte.
  struct Unsent {
    std::string_view bytes;
    std::uint64_t begin = 0;
    /// The bytes of `command` when they all lie in this stretch, else empty.
    std::string_view of(const PendingCommand& command) const noexcept {
      if (command.bytes_begin < begin || command.bytes_end > begin + bytes.size()) return {};
      return bytes.substr(command.bytes_begin - begin, command.bytes_end - command.bytes_begin);
    }
  };

  /// What a caller's non-blocking send did: bytes taken by the socket, or an errno.
  struct SendResult {
    std::size_t sent = 0;
    int error = 0;  ///< 0 also when the socket was full (EAGAIN)
  };
  /// What is left to do after an inline write.
  struct Inline {
    enum class Then {
      Done,      ///< everything was sent and nothing else is pending
      Wake,      ///< sent; commands queued meanwhile: wake the I/O thread to write them
      Absorb,    ///< sent; the I/O thread must take these commands in now (their deadlines)
      HandOver,  ///< not all sent, or the connection is not ready: the I/O thread takes over
    };
    Then then = Then::Done;
    std::string rest;  ///< HandOver: what the socket did not take
    int error = 0;     ///< HandOver: the send failed with this errno
    bool ready = false;
    /// The connection's generation when the bytes were taken, read under the socket lock
    /// (set by ConnectionMachine::write_inline()): the stream they went to. Read after the
    /// send instead, it could name the next connection, which would then take the rest.
    std::uint64_t generation = 0;
  };

  explicit Writer(Counters& counters) noexcept : counters_(counters) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Commands a write waits for before it leaves with `in_flight` awaiting replies (0: at once).
  static std::size_t coalescing_threshold(std::size_t in_flight) noexcept;

  // --- I/O thread ---

  /// A new stream (the connection became ready): offsets restart at 0, nothing is kept from
  /// the previous one, and inline writes may reach the socket again.
  void restart();
  /// The replies just read released `count` blocked callers.
  void note_released(std::size_t count) noexcept { released_waiters_ += count; }
  /// Before a take(): when the replies since the last write released enough blocked callers
  /// that have not queued yet, at least a quarter as many as the `in_flight` commands still
  /// awaiting replies, gives them the CPU once (see writer.cpp). Resets the count.
  void yield_for_released(const SubmissionQueue& queue, std::size_t in_flight);

  enum class Take {
    Write,    ///< buffer() holds the next write, batch() its commands
    Held,     ///< few new commands behind many in flight: they wait for the next replies
    Nothing,  ///< the queue is empty: the writer role is given back
  };
  /// Takes the next write from `queue`. Commands that completed while queued are left in
  /// dropped() (never written) for the caller to release.
  Take take(SubmissionQueue& queue, std::size_t in_flight);
  /// On each health tick: gives back the write buffers (this one and the queue's, which
  /// take() swaps) grown past kShrinkAbove when no write since the previous tick needed a
  /// quarter of them. They are kept across the idle moments of a stream of large commands:
  /// given back after every write that emptied the queue, they were allocated, faulted in
  /// and grown again for the next window (SETs of 64 KiB ran at half the rate).
  void trim(SubmissionQueue& queue);
  std::vector<PendingCommand>& batch() noexcept { return batch_; }
  std::vector<PendingCommand>& dropped() noexcept { return dropped_; }
  std::string_view buffer() const noexcept { return buffer_; }
  std::size_t buffer_capacity() const noexcept { return buffer_.capacity(); }

  /// The write of buffer() completed: the socket accepted `bytes` of it (all of it, unless
  /// `failed`; after a failure, what it reports may have reached the server).
  void on_written(std::size_t bytes, bool failed, Clock::time_point now);
  /// Commands written inline were taken into the pipeline, up to stream offset `end`.
  void note_taken(std::uint64_t end) noexcept { taken_ = end; }
  /// The replies a held write waited for came: true when the I/O thread should write now.
  bool release_hold() noexcept {
    if (!holding_) return false;
    holding_ = false;
    return !writing_;
  }
  bool writing() const noexcept { return writing_; }
  /// take() left commands queued for the next replies (Take::Held), and they have not come.
  bool holding() const noexcept { return holding_; }

  /// The connection breaks. A write in progress counts as written entirely: how much of it
  /// reached the socket is unknown, so none of its commands may look "safe to retry".
  void on_break();
  /// From now on no inline write touches the socket (it is about to be closed): a caller
  /// that took the writer role keeps its bytes for a resend instead (see take_inline_unsent).
  void seal();
  /// The bytes of the current write (commands of it that never reached the socket).
  Unsent unsent_in_buffer() const noexcept { return {buffer_, buffer_begin_}; }
  /// What inline writes could not send (moved out; `storage` keeps the bytes).
  Unsent take_inline_unsent(std::string& storage);

  /// After Inline::Then::HandOver on a ready connection: the I/O thread writes `rest`.
  void resume_inline(std::string rest);

  std::uint64_t written() const noexcept { return written_.load(std::memory_order_acquire); }
  std::uint64_t taken() const noexcept { return taken_; }
  /// This connection's writes and the commands they carried (status(); any thread).
  void count_write(std::size_t commands) noexcept {
    commands_written_.fetch_add(commands, std::memory_order_relaxed);
    writes_.fetch_add(1, std::memory_order_release);
  }
  std::uint64_t writes() const noexcept { return writes_.load(std::memory_order_acquire); }
  std::uint64_t commands_written() const noexcept {
    return commands_written_.load(std::memory_order_relaxed);
  }
  /// The handshake's `bytes` reached the socket at `now`: counted, and the last write, but not
  /// part of the callers' stream.
  void on_handshake_written(std::size_t bytes, Clock::time_point now) noexcept {
    counters_.bytes_written.fetch_add(bytes, std::memory_order_relaxed);
    last_write_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  }
  Clock::time_point last_write() const noexcept {
    return Clock::time_point(Clock::duration(last_write_.load(std::memory_order_relaxed)));
  }

  // --- a caller's thread ---

  /// The caller owns the writer role (the queue answered WriteInline): sends what is queued
  /// with `send(bytes) -> SendResult` when `ready()` says the connection is ready, both
  /// called under the socket lock (ready() always, send() only when ready and not sealed). The
  /// commands go to the queue's hand-off list.
  template <class Ready, class Send>
  Inline write_inline(SubmissionQueue& queue, Ready&& ready, Send&& send, Clock::time_point now);

 private:
  Counters& counters_;
  bool writing_ = false;
  bool holding_ = false;  ///< take() left commands queued for the next replies
  std::size_t released_waiters_ = 0;
  std::string buffer_;
  std::size_t peak_since_trim_ = 0;  ///< the largest write taken since the last trim()
  std::uint64_t buffer_begin_ = 0;   ///< stream offset of buffer_[0]
  std::uint64_t taken_ = 0;          ///< stream offset taken for writing up to
  std::vector<PendingCommand> batch_;
  std::vector<PendingCommand> dropped_;
  /// Bytes the socket confirmed written since the stream restarted (by either writer).
  std::atomic<std::uint64_t> written_{0};
  std::atomic<Clock::rep> last_write_{0};
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> commands_written_{0};

  std::mutex socket_mutex_;  ///< held by an inline write while it sends, and by seal()
  bool sealed_ = true;       ///< guarded by socket_mutex_
  /// Bytes an inline write could not send (socket full, failed or sealed), with the stream
  /// offset of their first byte; guarded by socket_mutex_. Lets a break resend them.
  std::string inline_unsent_;
  std::uint64_t inline_unsent_begin_ = 0;
};

template <class Ready, class Send>
Writer::Inline Writer::write_inline(SubmissionQueue& queue, Ready&& ready, Send&& send,
                                    Clock::time_point now) {
  thread_local std::string bytes;
  std::uint64_t stream_begin = 0;
  std::size_t taken = 0;
  Inline result;
  bool needs_absorb = false;
  std::size_t sent = 0;
  {
    // Taken before the commands are: a break (seal() takes this lock first) then finds them
    // either not yet taken, or taken with their unsent bytes in inline_unsent_.
    std::lock_guard guard(socket_mutex_);
    needs_absorb = queue.take_inline(bytes, &stream_begin, &taken);
    result.ready = ready() && !sealed_;  // ready() first: it runs under this lock every time
    if (result.ready) {
      const SendResult outcome = send(std::string_view(bytes));
      sent = outcome.sent;
      result.error = outcome.error;
      written_.fetch_add(sent, std::memory_order_acq_rel);
    }
    if (sent < bytes.size()) {
      inline_unsent_.assign(bytes, sent);
      inline_unsent_begin_ = stream_begin + sent;
    }
  }
  if (sent > 0) {
    counters_.bytes_written.fetch_add(sent, std::memory_order_relaxed);
    // The commands before the write that carries them: status() reads writes first, so it
    // never sees fewer commands written than writes.
    counters_.commands_written.fetch_add(taken, std::memory_order_relaxed);
    counters_.writes.fetch_add(1, std::memory_order_release);
    count_write(taken);
    last_write_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  }
  if (!(result.ready && result.error == 0 && sent == bytes.size())) {
    result.then = Inline::Then::HandOver;
    result.rest = bytes.substr(sent);
  }
  // A buffer a large command grew goes back to the queue (whose ticks give it back when large
  // commands stop), never stays with this thread.
  if (bytes.capacity() > kShrinkAbove) queue.give_back_buffer(bytes);
  if (result.then == Inline::Then::HandOver) return result;
  result.then = queue.finish_inline() ? Inline::Then::Wake
                : needs_absorb        ? Inline::Then::Absorb
                                      : Inline::Then::Done;
  return result;
}

}  // namespace redmux::detail
