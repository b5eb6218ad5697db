#include "conn/submission_queue.hpp"

#include <algorithm>

#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

constexpr std::string_view kSelect = "SELECT";

}  // namespace

SubmissionQueue::Pushed SubmissionQueue::note_push_locked(Clock::time_point deadline,
                                                          std::size_t bytes) {
  const Clock::rep armed = armed_until_.load(std::memory_order_acquire);
  if (!io_pending_) {
    io_pending_ = true;
    const bool timer_covers = deadline.time_since_epoch().count() >= armed;
    // Inline when no reply is awaited (a lone caller), or when the bytes make a large write
    // on their own: waiting for the I/O thread would gain no batching, only a hand-off.
    const bool inline_worth_it =
        bytes >= kInlineWriteBytes || in_flight_.load(std::memory_order_acquire) == 0;
    return inline_allowed_ && timer_covers && inline_worth_it ? Pushed::WriteInline
                                                              : Pushed::QueuedWake;
  }
  // Somebody owns the writer role. If the I/O thread's timer would fire after this deadline,
  // it must re-arm (but must not write: the role is not its to take).
  return deadline.time_since_epoch().count() < armed ? Pushed::QueuedRearm : Pushed::Queued;
}

void SubmissionQueue::switch_database_locked(int db) {
  if (db < 0 || db == stream_db_) return;
  const Arg select[] = {Arg(kSelect), Arg(db)};
  PendingCommand entry = own_command(kSelect, PendingKind::Internal);
  entry.select_db = db;
  entry.bytes_begin = bytes_.size();
  resp::encode_command(bytes_, select);
  entry.bytes_end = bytes_.size();
  commands_.push_back(entry);
  stream_db_ = db;
}

SubmissionQueue::Pushed SubmissionQueue::push(int db, std::span<const Arg> args,
                                              PendingCommand command) {
  std::lock_guard lock(mutex_);
  if (gated_) [[unlikely]] {
    if (closed_) return Pushed::Closed;
    if (elsewhere_ && command.follow_map && command.slot != kNoSlot &&
        elsewhere_->test(command.slot)) {
      return Pushed::Forward;
    }
  }
  switch_database_locked(db);
  command.db = db < 0 ? -1 : stream_db_;  // -1: runs on any database (no SELECT for it)
  command.bytes_begin = bytes_.size();
  resp::encode_command(bytes_, args);
  command.bytes_end = bytes_.size();
  if ((command.retry_written || command.keep_for_redirect) && command.state) {
    command.state->retained_command.assign(bytes_, command.bytes_begin,
                                           command.bytes_end - command.bytes_begin);
  }
  const Pushed pushed = note_push_locked(command.deadline, command.bytes_end - command.bytes_begin);
  commands_.push_back(command);
  return pushed;
}

SubmissionQueue::Pushed SubmissionQueue::push_batch(int db, std::string_view bytes,
                                                    std::span<PendingCommand> commands) {
  std::lock_guard lock(mutex_);
  if (closed_) return Pushed::Closed;
  if (gated_ && elsewhere_) {
    for (const PendingCommand& command : commands) {
      if (command.follow_map && command.slot != kNoSlot && elsewhere_->test(command.slot)) {
        return Pushed::Forward;
      }
    }
  }
  switch_database_locked(db);
  const std::size_t base = bytes_.size();
  bytes_.append(bytes);
  Clock::time_point earliest = Clock::time_point::max();
  for (PendingCommand& command : commands) {
    command.db = db < 0 ? -1 : stream_db_;
    command.bytes_begin += base;
    command.bytes_end += base;
    if (command.kind == PendingKind::Caller) earliest = std::min(earliest, command.deadline);
    commands_.push_back(command);
  }
  return note_push_locked(earliest, bytes.size());
}

bool SubmissionQueue::take(std::string& bytes, std::vector<PendingCommand>& commands,
                           std::vector<PendingCommand>& dropped, std::size_t at_least) {
  bytes.clear();
  commands.clear();
  std::lock_guard lock(mutex_);
  if (commands_.size() < at_least) return false;
  if (commands_.empty()) {
    io_pending_ = false;
    return true;
  }
  bytes.swap(bytes_);
  commands.swap(commands_);
  queue_start_db_ = stream_db_;
  // io_pending_ stays true: the I/O thread comes back for more when this write completes.
  remove_completed(bytes, commands, dropped);
  for (PendingCommand& command : commands) {  // offsets in the stream, for not_sent checks
    command.bytes_begin += stream_taken_;
    command.bytes_end += stream_taken_;
  }
  stream_taken_ += bytes.size();
  return true;
}

void SubmissionQueue::give_back_buffer(std::string& spent) {
  spent.clear();
  {
    std::lock_guard lock(mutex_);
    if (bytes_.empty() && bytes_.capacity() < spent.capacity()) bytes_.swap(spent);
  }
  std::string().swap(spent);
}

void SubmissionQueue::trim_bytes(std::size_t above) {
  std::lock_guard lock(mutex_);
  if (bytes_.empty() && bytes_.capacity() > above) std::string().swap(bytes_);
}

bool SubmissionQueue::take_inline(std::string& bytes, std::uint64_t* stream_begin,
                                  std::size_t* taken) {
  bytes.clear();
  std::lock_guard lock(mutex_);
  if (stream_begin) *stream_begin = stream_taken_;
  if (taken) *taken = commands_.size();
  bytes.swap(bytes_);
  Clock::rep earliest = Clock::time_point::max().time_since_epoch().count();
  for (PendingCommand& command : commands_) {
    if (command.kind == PendingKind::Caller) {
      earliest = std::min(earliest, command.deadline.time_since_epoch().count());
    }
    command.bytes_begin += stream_taken_;
    command.bytes_end += stream_taken_;
    handoff_.push_back(command);
  }
  in_flight_.fetch_add(commands_.size(), std::memory_order_acq_rel);
  commands_.clear();
  stream_taken_ += bytes.size();
  queue_start_db_ = stream_db_;
  // Read under the lock that the I/O thread's drain_handoff() takes after it publishes a
  // disarmed timer: either it drains these commands, or we see the disarmed timer here.
  return earliest < armed_until_.load(std::memory_order_acquire);
}

bool SubmissionQueue::finish_inline() {
  std::lock_guard lock(mutex_);
  if (commands_.empty()) {
    io_pending_ = false;
    return false;
  }
  return true;  // io_pending_ stays: the I/O thread, once woken, writes them
}

void SubmissionQueue::drain_handoff(std::vector<PendingCommand>& out) {
  std::lock_guard lock(mutex_);
  out.insert(out.end(), handoff_.begin(), handoff_.end());
  handoff_.clear();
}

void SubmissionQueue::set_inline(bool allowed) {
  std::lock_guard lock(mutex_);
  inline_allowed_ = allowed;
}

void SubmissionQueue::reset_stream_offsets() {
  std::lock_guard lock(mutex_);
  stream_taken_ = 0;
}

void SubmissionQueue::remove_completed(std::string& bytes, std::vector<PendingCommand>& commands,
                                       std::vector<PendingCommand>& dropped) {
  const bool any_done = std::any_of(commands.begin(), commands.end(), [](const PendingCommand& c) {
    return c.kind == PendingKind::Caller && c.state->claimed();
  });
  if (!any_done) return;
  // Rare path: cut out the bytes of commands that timed out while queued.
  std::string kept_bytes;
  std::vector<PendingCommand> kept;
  kept_bytes.reserve(bytes.size());
  kept.reserve(commands.size());
  for (PendingCommand& command : commands) {
    if (command.kind == PendingKind::Caller && command.state->claimed()) {
      dropped.push_back(command);
      continue;
    }
    const std::size_t begin = kept_bytes.size();
    kept_bytes.append(bytes, command.bytes_begin, command.bytes_end - command.bytes_begin);
    command.bytes_begin = begin;
    command.bytes_end = kept_bytes.size();
    kept.push_back(command);
  }
  bytes.swap(kept_bytes);
  commands.swap(kept);
}

void SubmissionQueue::requeue_front(std::span<const Resend> resends) {
  if (resends.empty()) return;
  std::lock_guard lock(mutex_);
  if (closed_) return;  // REQUIRES-like: the caller fails them instead (checked by is_closed)
  std::string old_bytes;
  std::vector<PendingCommand> old_commands;
  old_bytes.swap(bytes_);
  old_commands.swap(commands_);
  const int old_start_db = queue_start_db_;
  const int old_stream_db = stream_db_;
  // The resent commands come first, each selecting its own database as needed; the queue
  // then starts on the first one's database (reset_stream_database() fixes the start up
  // once the new connection is ready).
  stream_db_ = queue_start_db_ = resends.front().command.db;
  for (const Resend& resend : resends) {
    switch_database_locked(resend.command.db);
    PendingCommand command = resend.command;
    command.bytes_begin = bytes_.size();
    bytes_.append(resend.bytes);
    command.bytes_end = bytes_.size();
    commands_.push_back(command);
  }
  if (!old_commands.empty()) {
    switch_database_locked(old_start_db);  // the old queue was encoded from there on
    append_locked(old_bytes, old_commands);
    stream_db_ = old_stream_db;
  }
  io_pending_ = true;  // the I/O thread writes them once the connection is ready
}

void SubmissionQueue::append_locked(std::string_view bytes,
                                    std::span<const PendingCommand> commands) {
  const std::size_t base = bytes_.size();
  bytes_.append(bytes);
  for (PendingCommand command : commands) {
    command.bytes_begin += base;
    command.bytes_end += base;
    commands_.push_back(command);
  }
}

bool SubmissionQueue::push_front(std::string_view bytes, std::span<PendingCommand> commands) {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  if (commands.empty()) return true;
  std::string old_bytes;
  std::vector<PendingCommand> old_commands;
  old_bytes.swap(bytes_);
  old_commands.swap(commands_);
  // No SELECT: they run on whichever database the stream starts on.
  for (PendingCommand& command : commands) command.db = queue_start_db_;
  append_locked(bytes, commands);
  append_locked(old_bytes, old_commands);
  io_pending_ = true;  // the session's first write (ConnectionMachine::become_ready) takes them
  return true;
}

bool SubmissionQueue::is_closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void SubmissionQueue::hold() {
  std::lock_guard lock(mutex_);
  io_pending_ = true;
}

void SubmissionQueue::reset_stream_database(int db) {
  std::lock_guard lock(mutex_);
  if (commands_.empty()) {
    stream_db_ = queue_start_db_ = db;
    return;
  }
  PendingCommand& first = commands_.front();
  if (first.select_db >= 0) {
    // The queue starts by selecting a database itself: nothing to fix, except that a SELECT
    // of the database the new connection is already on is dropped (it may be forbidden).
    if (first.select_db == db) {
      const std::size_t cut = first.bytes_end;
      bytes_.erase(0, cut);
      commands_.erase(commands_.begin());
      for (PendingCommand& command : commands_) {
        command.bytes_begin -= cut;
        command.bytes_end -= cut;
      }
      if (commands_.empty()) stream_db_ = db;
    }
  } else {
    // The queued commands were encoded for a stream that was on the database of the first
    // one that names one when they begin: put a SELECT for it in front of that one, so they
    // still run against the database they name. The ones before it run on any database
    // (SCRIPT KILL, which a server busy with a script would not let a SELECT precede).
    std::size_t first = 0;
    while (first < commands_.size() && commands_[first].db < 0 && commands_[first].select_db < 0) {
      ++first;
    }
    if (first == commands_.size()) {
      stream_db_ = db;  // none names a database: the stream goes on from the connection's
    } else if (commands_[first].select_db < 0 && commands_[first].db != db) {
      const int wanted = commands_[first].db;
      const Arg select[] = {Arg(kSelect), Arg(wanted)};
      std::string prefix;
      resp::encode_command(prefix, select);
      const std::size_t at = commands_[first].bytes_begin;
      PendingCommand entry = own_command(kSelect, PendingKind::Internal);
      entry.select_db = wanted;
      entry.bytes_begin = at;
      entry.bytes_end = at + prefix.size();
      for (std::size_t i = first; i < commands_.size(); ++i) {
        commands_[i].bytes_begin += prefix.size();
        commands_[i].bytes_end += prefix.size();
      }
      bytes_.insert(at, prefix);
      commands_.insert(commands_.begin() + static_cast<std::ptrdiff_t>(first), entry);
    }
  }
  queue_start_db_ = db;
}

Clock::time_point SubmissionQueue::collect_expired(Clock::time_point now,
                                                   std::vector<PendingCommand>& expired) {
  std::lock_guard lock(mutex_);
  Clock::time_point earliest = Clock::time_point::max();
  for (PendingCommand& command : commands_) {
    if (command.kind != PendingKind::Caller || command.state->claimed()) continue;
    if (command.deadline <= now) {
      command.state->add_ref();
      expired.push_back(command);
      // Its slot goes back now (the copy says so), not when take() drops the entry: a queue
      // stalled behind a dead connection must not turn timeouts into QueueFullErrors.
      command.counted = false;
      command.tallied = false;
    } else {
      earliest = std::min(earliest, command.deadline);
    }
  }
  return earliest;
}

void SubmissionQueue::purge_completed(std::vector<PendingCommand>& dropped) {
  std::lock_guard lock(mutex_);
  remove_completed(bytes_, commands_, dropped);
}

void SubmissionQueue::close(std::vector<PendingCommand>& out) {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    gated_ = true;
  }
  drain(out);
}

void SubmissionQueue::drain(std::vector<PendingCommand>& out) {
  std::lock_guard lock(mutex_);
  out.insert(out.end(), commands_.begin(), commands_.end());
  commands_.clear();
  bytes_.clear();
  queue_start_db_ = stream_db_;
}

SubmissionQueue::Snapshot SubmissionQueue::snapshot() const {
  std::lock_guard lock(mutex_);
  return {commands_.size(), bytes_.size()};
}

SubmissionQueue::Tally SubmissionQueue::tally() const {
  std::lock_guard lock(mutex_);
  Tally tally;
  for (const PendingCommand& command : commands_) tally.queued += awaited_by_caller(command);
  for (const PendingCommand& command : handoff_) tally.written += awaited_by_caller(command);
  return tally;
}

void SubmissionQueue::reroute(std::shared_ptr<const SlotSet> elsewhere, std::string& bytes,
                              std::vector<PendingCommand>& moved) {
  std::lock_guard lock(mutex_);
  elsewhere_ = std::move(elsewhere);
  gated_ = closed_ || elsewhere_;
  if (!elsewhere_) return;
  auto leaves = [&](const PendingCommand& command) {
    return command.slot != kNoSlot && elsewhere_->test(command.slot);
  };
  if (std::none_of(commands_.begin(), commands_.end(), leaves)) return;
  // Same cut as remove_completed(): the entries that stay keep their order and databases
  // (a cluster has only database 0, so no SELECT belongs to a leaving entry).
  std::string kept_bytes;
  std::vector<PendingCommand> kept;
  kept_bytes.reserve(bytes_.size());
  kept.reserve(commands_.size());
  for (PendingCommand& command : commands_) {
    std::string& into = leaves(command) ? bytes : kept_bytes;
    const std::size_t begin = into.size();
    into.append(bytes_, command.bytes_begin, command.bytes_end - command.bytes_begin);
    command.bytes_begin = begin;
    command.bytes_end = into.size();
    (leaves(command) ? moved : kept).push_back(command);
  }
  bytes_.swap(kept_bytes);
  commands_.swap(kept);
}

}  // namespace redmux::detail
