#include "conn/writer.hpp"

#include <algorithm>
#include <thread>
#include <utility>

namespace redmux::detail {
namespace {

// Coalescing under load: with at least this many commands awaiting replies, a write of fewer
// than kCoalesceBatch (or a quarter of those awaited) new commands waits for the next replies.
constexpr std::size_t kCoalesceInFlight = 16;
constexpr std::size_t kCoalesceBatch = 64;
// Blocked callers released by the replies since the last write, from which the I/O thread
// lets them run before it writes (see yield_for_released()), and the least share of the
// commands still awaiting replies they must be: released ≥ in flight ÷ kYieldShare.
constexpr std::size_t kYieldForReleased = 4;
constexpr std::size_t kYieldShare = 4;

}  // namespace

std::size_t Writer::coalescing_threshold(std::size_t in_flight) noexcept {
  // Many commands awaiting replies and few new ones: the server is busy with the earlier
  // ones and runs these only after them anyway, so they wait for the next replies (which
  // free their callers to add more) and leave in one larger write. Fewer, larger writes cost
  // the server and this I/O thread less per command when hundreds of threads take turns.
  // Never a timer: the next replies are due, and a connection with few commands in flight
  // (a lone caller, a lightly loaded one) writes at once.
  if (in_flight < kCoalesceInFlight) return 0;
  return std::min(kCoalesceBatch, in_flight / 4);
}

void Writer::restart() {
  taken_ = 0;
  // Offsets restart at 0: bytes kept from the previous stream must not match them.
  buffer_.clear();
  buffer_begin_ = 0;
  {
    std::lock_guard guard(socket_mutex_);
    inline_unsent_.clear();
    sealed_ = false;
  }
  written_.store(0, std::memory_order_release);
}

void Writer::yield_for_released(const SubmissionQueue& queue, std::size_t in_flight) {
  if (released_waiters_ >= kYieldForReleased && released_waiters_ * kYieldShare >= in_flight &&
      wait_policy() == WaitPolicy::Adaptive && queue.snapshot().commands < released_waiters_) {
    // The last replies released blocked callers that have not queued their next commands
    // yet: give them the CPU once, so that their commands leave in this write instead of
    // the next one. On a machine with more CPUs than runnable threads the yield returns at
    // once; with hundreds of blocked callers on a few CPUs it turns many small writes
    // (each one a wake-up of the server and of this thread) into few large ones. Under
    // WaitPolicy::Sleep nothing in redmux yields: that policy is for machines where CPU-bound
    // threads would take the CPU for a whole time slice.
    //
    // Only when the released callers are a fair share of those still waiting for replies
    // (`in_flight`): the yield puts this thread behind every runnable thread, and the
    // waiters whose replies are still to come spin through their turns meanwhile, finding
    // nothing. After a read that released a few of many waiters, the write goes out at once.
    counters_.yields_for_callers.fetch_add(1, std::memory_order_relaxed);
    std::this_thread::yield();
  }
  released_waiters_ = 0;
}

Writer::Take Writer::take(SubmissionQueue& queue, std::size_t in_flight) {
  if (!queue.take(buffer_, batch_, dropped_, coalescing_threshold(in_flight))) {
    holding_ = true;  // the writer role stays ours: pushes meanwhile wake nobody
    writing_ = false;
    return Take::Held;
  }
  if (buffer_.empty()) {
    writing_ = false;
    return Take::Nothing;
  }
  peak_since_trim_ = std::max(peak_since_trim_, buffer_.size());
  if (!batch_.empty()) {  // offsets are stream offsets already (SubmissionQueue::take())
    taken_ = batch_.back().bytes_end;
    buffer_begin_ = taken_ - buffer_.size();
  }
  writing_ = true;
  return Take::Write;
}

void Writer::trim(SubmissionQueue& queue) {
  const std::size_t peak = std::exchange(peak_since_trim_, 0);
  const std::size_t keep = kept_capacity(peak);
  if (!writing_ && buffer_.capacity() > keep) {
    std::string().swap(buffer_);
  }
  queue.trim_bytes(keep);
}

void Writer::on_written(std::size_t bytes, bool failed, Clock::time_point now) {
  written_.fetch_add(bytes, std::memory_order_acq_rel);
  counters_.bytes_written.fetch_add(bytes, std::memory_order_relaxed);
  last_write_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  // A failed write is over: what it did not report stays unwritten (resent after the break).
  if (failed) writing_ = false;
}

void Writer::on_break() {
  if (writing_) written_.store(taken_, std::memory_order_release);
  writing_ = false;
  holding_ = false;
}

void Writer::seal() {
  std::lock_guard guard(socket_mutex_);  // waits for an inline write in progress
  sealed_ = true;
}

Writer::Unsent Writer::take_inline_unsent(std::string& storage) {
  std::lock_guard guard(socket_mutex_);
  storage.swap(inline_unsent_);
  inline_unsent_.clear();
  return {storage, inline_unsent_begin_};
}

void Writer::resume_inline(std::string rest) {
  {
    std::lock_guard guard(socket_mutex_);
    inline_unsent_.clear();  // the I/O thread writes it now (buffer_ covers it)
  }
  writing_ = true;
  buffer_ = std::move(rest);
  buffer_begin_ = taken_ - buffer_.size();
}

}  // namespace redmux::detail
