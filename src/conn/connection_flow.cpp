// ConnectionMachine, part two: the data path of a connection — submissions, the write loop,
// the read loop, what a break does to the commands in flight, deadlines and the health tick.
// The lifecycle is connection_machine.cpp.
#include <system_error>

#include "conn/break_policy.hpp"
#include "conn/connection_machine.hpp"
#include "conn/messages.hpp"
#include "core/reply_hint.hpp"
#include "resp/classify.hpp"

namespace redmux::detail {
namespace {

constexpr std::string_view kPing = "PING";
// Deferred wakes (CommandState::DeferWakes) wait at most this many replies: a 64 KiB read
// of small replies holds thousands, and the first caller released should not wait for all.
constexpr std::size_t kWakeEvery = 1024;
const Arg kPingArgs[] = {Arg(kPing)};

}  // namespace

// ---------------------------------------------------------------------------------------
// Submitting (any thread)

SubmissionQueue::Pushed ConnectionMachine::refuse(PendingCommand& command, bool fail_fast) {
  const Error error =
      refused_at_submit(command.name, describe_endpoint(), to_string(state()), fail_fast);
  if (command.state) {
    command.state->fail(error);
    command.state->release();
  }
  if (command.counted) shared_->release_slots(1);
  return SubmissionQueue::Pushed::Closed;
}

Error ConnectionMachine::refusal_of(std::string_view name) const {
  const ConnectionState now = state();
  return refused_at_submit(name, describe_endpoint(), to_string(now),
                           config_.backlog_policy == BacklogPolicy::FailFast &&
                               now != ConnectionState::Ready && now != ConnectionState::Closed);
}

SubmissionQueue::Pushed ConnectionMachine::submit_batch(int db, std::string_view bytes,
                                                        std::span<PendingCommand> commands,
                                                        bool fail_fast) {
  if (fail_fast && fails_fast()) {
    for (PendingCommand& command : commands) refuse(command, true);
    return SubmissionQueue::Pushed::Closed;
  }
  const SubmissionQueue::Pushed pushed = queue_.push_batch(db, bytes, commands);
  if (pushed != SubmissionQueue::Pushed::Closed) return pushed;
  std::size_t slots = 0;
  for (PendingCommand& command : commands) {
    if (command.state) {
      command.state->fail(Error(errc::shut_down, "batch not sent: the multiplexer was closed"));
      command.state->release();
    }
    slots += command.counted ? 1 : 0;
  }
  shared_->release_slots(slots);
  return pushed;
}

void ConnectionMachine::submit_first(std::string_view bytes, std::span<PendingCommand> commands) {
  if (queue_.push_front(bytes, commands)) return;
  for (PendingCommand& command : commands) refuse(command, false);
}

void ConnectionMachine::take_queued(std::string& bytes, std::vector<PendingCommand>& commands) {
  bytes.clear();
  commands.clear();
  std::string taken;
  std::vector<PendingCommand> queued;
  std::vector<PendingCommand> dropped;
  queue_.take(taken, queued, dropped);
  release(dropped);
  if (queued.empty()) return;
  // take() counted these as written to the stream: offsets are stream offsets from here (the
  // next connection restarts them).
  const std::uint64_t base = queued.front().bytes_begin;
  resends_.clear();
  for (PendingCommand& command : queued) {
    const std::string_view encoded(taken.data() + (command.bytes_begin - base),
                                   command.bytes_end - command.bytes_begin);
    if (command.kind == PendingKind::Internal && command.select_db >= 0 && !command.state) {
      continue;  // a SELECT redmux queued: wherever they go, commands select their own `db`
    }
    if (command.kind == PendingKind::Caller || command.kind == PendingKind::FireAndForget) {
      command.bytes_begin = bytes.size();
      bytes.append(encoded);
      command.bytes_end = bytes.size();
      commands.push_back(command);
    } else {
      resends_.push_back({command, encoded});  // ROLE, PING, SUBSCRIBE …: this server's
    }
  }
  queue_.requeue_front(resends_);
  resends_.clear();
}

// ---------------------------------------------------------------------------------------
// Writing

ConnectionMachine::Actions ConnectionMachine::on_wake(Clock::time_point now) {
  begin(now);
  if (phase_ != Phase::Ready) {
    // Not writable yet: keep the commands queued; their deadlines still run.
    queue_.hold();
    if (phase_ != Phase::Closed) arm_deadline(now_);
    return actions_;
  }
  if (!writer_.writing()) write_more();
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_written(std::size_t bytes, Clock::time_point now) {
  begin(now);
  writer_.on_written(bytes, /*failed=*/false, now);
  write_more();
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_write_failed(std::size_t bytes,
                                                              std::string_view reason,
                                                              Clock::time_point now) {
  begin(now);
  writer_.on_written(bytes, /*failed=*/true, now);
  connection_broken(break_cause::write_failed(endpoint_text_, reason));
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_inline_handover(Writer::Inline result,
                                                                 std::uint64_t generation,
                                                                 Clock::time_point now) {
  begin(now);
  if (!result.ready || generation != generation_ || phase_ != Phase::Ready) {
    // The connection broke meanwhile: its commands were failed with it (or are failed now
    // by absorb_inline_writes(), which never puts them into a pipeline when not ready);
    // whatever the queue holds is written after the reconnect. The writer role is given
    // back only on the connection it was taken on: after a reconnect the new connection's
    // first write_more() has reset it, and may hold it now.
    absorb_inline_writes();
    if (generation == generation_) queue_.finish_inline();
    return actions_;
  }
  if (result.error != 0) {
    connection_broken(
        break_cause::write_failed(endpoint_text_, std::system_category().message(result.error)));
    return actions_;
  }
  // The socket was full: the I/O thread writes the rest (and keeps the writer role).
  absorb_inline_writes();
  writer_.resume_inline(std::move(result.rest));
  emit_action(IoAction::Kind::Write);
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_absorb(Clock::time_point now) {
  begin(now);
  absorb_inline_writes();  // arms the deadline timer for them
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_rearm(Clock::time_point deadline,
                                                       Clock::time_point now) {
  begin(now);
  absorb_inline_writes();
  if (phase_ != Phase::Closed) arm_deadline(deadline);
  return actions_;
}

void ConnectionMachine::write_more() {
  writer_.yield_for_released(queue_, pipeline_.size());
  absorb_inline_writes();
  const Writer::Take take = writer_.take(queue_, pipeline_.size());
  if (take == Writer::Take::Held) return;
  release(writer_.dropped());
  if (take == Writer::Take::Nothing) return;
  std::span<const PendingCommand> batch = writer_.batch();
  const Clock::time_point earliest = earliest_deadline(batch);
  enter_pipeline(batch, now_);
  queue_.publish_in_flight(pipeline_.size());
  // The commands before the write that carries them: status() then never sees fewer
  // commands written than writes.
  shared_->counters().commands_written.fetch_add(batch.size(), std::memory_order_relaxed);
  shared_->counters().writes.fetch_add(1, std::memory_order_release);
  writer_.count_write(batch.size());
  if (observer_.wants_writes()) [[unlikely]] {
    observe_write(batch.size(), writer_.buffer().size(), /*from_caller=*/false, now_);
  }
  arm_deadline(earliest);
  emit_action(IoAction::Kind::Write);
}

void ConnectionMachine::absorb_inline_writes() {
  handoff_.clear();
  queue_.drain_handoff(handoff_);
  if (handoff_.empty()) return;
  if (phase_ != Phase::Ready) {
    // A caller took the writer role just before the connection stopped being ready, and its
    // commands reached the hand-off list after the pipeline was failed: they must never
    // join a pipeline (a later connection's replies would be matched to them). They were
    // not written, or written to a connection that is gone.
    const Error cause = break_cause::not_ready(endpoint_text_, to_string(state()));
    if (phase_ != Phase::Closed) {
      settle_broken(handoff_, cause);  // what never reached a socket goes out again
      return;
    }
    const std::uint64_t written = writer_.written();
    for (PendingCommand& command : handoff_) {
      if (command.state) command.state->fail(broken_error(command, cause, written, endpoint_text_));
    }
    release(handoff_);
    return;
  }
  const Clock::time_point earliest = earliest_deadline(handoff_);
  writer_.note_taken(handoff_.back().bytes_end);
  enter_pipeline(handoff_, Clock::time_point{});
  if (observer_.wants_writes()) [[unlikely]] {
    // The callers' writes, reported as one: they happened on their threads meanwhile, the
    // first as its command was created (deadline − timeout: the clock read of that call).
    Clock::time_point first = now_;
    for (const PendingCommand& command : handoff_) {
      if (command.deadline == Clock::time_point::max()) continue;
      first = std::min(first, created_at(command));
    }
    observe_write(handoff_.size(), handoff_.back().bytes_end - handoff_.front().bytes_begin,
                  /*from_caller=*/true, first);
  }
  arm_deadline(earliest);
}

void ConnectionMachine::enter_pipeline(std::span<const PendingCommand> commands,
                                       Clock::time_point written) {
  if (pipeline_.empty() && !commands.empty()) health_.on_busy(now_);
  if (observer_.wants_events()) [[unlikely]] {
    pipeline_.push(commands, written);  // a mark per write: the events' `written` phase
  } else {
    pipeline_.push(commands);
  }
}

void ConnectionMachine::settle_broken(std::vector<PendingCommand>& in_flight, const Error& cause) {
  BrokenStream stream;
  stream.written = writer_.written();
  stream.buffer = writer_.unsent_in_buffer();
  stream.inline_unsent = writer_.take_inline_unsent(inline_unsent_);
  stream.may_resend = config_.backlog_policy == BacklogPolicy::Queue && carry_over_;
  resends_.clear();
  leaving_.clear();
  plan_after_break(in_flight, stream, resends_, leaving_, [&](const PendingCommand& command) {
    Error error = broken_error(command, cause, stream.written, endpoint_text_);
    if (observer_.wants_events()) {
      // broken_written_ holds the write times of the pipeline's commands (connection_broken())
      const auto index = static_cast<std::size_t>(&command - in_flight.data());
      const Clock::time_point written_at = &in_flight == &broken_ && index < broken_written_.size()
                                               ? broken_written_[index]
                                               : Clock::time_point{};
      observe_failure(command, CommandOutcome::ConnectionError, error, stream.written, written_at);
    }
    return error;
  });
  if (!resends_.empty()) {
    if (queue_.is_closed()) {
      for (SubmissionQueue::Resend& resend : resends_) {
        if (resend.command.state) {
          resend.command.state->fail(
              broken_error(resend.command, cause, stream.written, endpoint_text_));
        }
        leaving_.push_back(resend.command);
      }
    } else {
      queue_.requeue_front(resends_);
      shared_->counters().resent.fetch_add(resends_.size(), std::memory_order_relaxed);
      if (observer_.logs(LogLevel::Debug)) {
        log(LogLevel::Debug,
            std::to_string(resends_.size()) +
                " commands to be resent after the connection broke: " + cause.message());
      }
    }
  }
  release(leaving_);
  in_flight.clear();
}

// ---------------------------------------------------------------------------------------
// Reading

ConnectionMachine::Actions ConnectionMachine::on_read(std::size_t bytes, Clock::time_point now) {
  begin(now);
  absorb_inline_writes();  // replies can only answer commands already in the pipeline
  reader_.commit(bytes);
  health_.on_read(now);
  last_read_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  Counters& counters = shared_->counters();
  counters.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
  std::size_t replies = 0;
  const std::uint64_t generation = generation_;
  (void)take_released_waiters();  // count only what these replies release
  // Sleeping callers are woken after the read's replies (at most every kWakeEvery of them).
  const CommandState::DeferWakes wakes;
  for (;;) {
    const Reader::Frame frame = reader_.next();
    if (frame == Reader::Frame::NeedMore) break;
    if (replies % kWakeEvery == kWakeEvery - 1) CommandState::DeferWakes::flush();
    if (frame == Reader::Frame::Malformed) {
      counters.replies.fetch_add(replies, std::memory_order_relaxed);
      connection_broken(break_cause::not_resp(endpoint_text_, reader_.error()));
      return actions_;
    }
    ++replies;
    bool go_on = true;
    if (frame == Reader::Frame::Push) {
      on_push(reader_.frame());
    } else if (reader_.attributes().empty()) {
      go_on = on_reply(reader_.frame());
    } else {
      const CommandState::WithAttributes with(reader_.attributes());
      go_on = on_reply(reader_.frame());
    }
    // A reply that failed the handshake, or broke or closed the connection, was read too.
    if (!go_on || generation != generation_) {
      counters.replies.fetch_add(replies, std::memory_order_relaxed);
      return actions_;
    }
  }
  // Wake the sleepers now, before the writer decides whether to let released callers queue
  // first (Writer::yield_for_released()).
  CommandState::DeferWakes::flush();
  if (replies > 0) health_.on_replies();
  writer_.note_released(take_released_waiters());
  counters.replies.fetch_add(replies, std::memory_order_relaxed);
  queue_.publish_in_flight(pipeline_.size());
  if (replies > 0 && writer_.release_hold()) write_more();
  reader_.settle();
  emit_action(IoAction::Kind::Read);
  return actions_;
}

void ConnectionMachine::on_push(NodeSpan push) {
  // Out of band (a RESP3 push, or a RESP2 pub/sub array on a subscriber connection): a
  // message, or the confirmation of one name of a SUBSCRIBE-family command in flight.
  shared_->counters().pushes.fetch_add(1, std::memory_order_relaxed);
  if (cache_ && resp::is_invalidation(push)) {
    // In order with the replies: a fill whose reply comes after this push finds its entry
    // gone and is not stored (the fill race). A nil list: everything (FLUSHALL, FLUSHDB).
    if (push[2].type == ReplyType::Null) {
      cache_->invalidate_all();
    } else {
      for (std::size_t i = 3; i < push.size(); ++i) cache_->invalidate(push[i].value);
    }
    return;
  }
  const resp::PushKind kind = resp::push_kind(push);
  if (resp::is_confirmation(kind) && push[0].size >= 2) pipeline_.on_confirmation(kind);
  if (push_handler_) push_handler_(push);
}

bool ConnectionMachine::on_reply(NodeSpan reply) {
  if (phase_ == Phase::Handshaking || phase_ == Phase::Loading) return on_handshake_reply(reply);
  if (is_error_reply(reply)) [[unlikely]] {
    if (resp::says_role_changed(reply)) {
      probe_role();
      if (resp::says_master_down(reply[0].value)) server_->note_refused_stale_read();
      if (redirect_hook_ && follow_redirect(reply[0].value)) return true;
      if (const std::string hint = write_refused_hint(reply[0].value); !hint.empty()) {
        const ReplyHint scope(hint);
        return deliver_reply(reply);
      }
    } else if (at_sentinel_ && explain_sentinel_refusal(reply[0].value)) {
      return true;
    }
  }
  return deliver_reply(reply);
}

std::string ConnectionMachine::write_refused_hint(std::string_view reply) const {
  // Several endpoints: a write goes to the one that is the primary, so a READONLY means a
  // failover under way, which redmux follows. A lone endpoint gets every command, whatever
  // its role: say why a write cannot run there.
  if (!reply.starts_with("READONLY") || config_.endpoints.size() != 1 ||
      !config_.service_name.empty() || !server_->is_replica()) {
    return {};
  }
  const std::string master = server_->master();
  return endpoint_text_ + ", the only endpoint listed, is a replica" +
         (master.empty() ? std::string() : " of " + master) +
         ": list the primary among the endpoints for writes to go there";
}

bool ConnectionMachine::deliver_reply(NodeSpan reply) {
  if (observer_.watching() && !pipeline_.empty()) [[unlikely]] {
    const PendingCommand front = pipeline_.front();
    // A command that timed out (its caller no longer waits) was reported then: its late
    // reply is skipped here as in the pipeline.
    const bool awaited = front.kind == PendingKind::Caller && !front.state->claimed();
    const Clock::time_point written =
        observer_.wants_events() ? pipeline_.front_written() : Clock::time_point{};
    const Pipeline::ReplyOutcome outcome = pipeline_.on_reply(reply, report_error_, release_slot_);
    if (outcome == Pipeline::ReplyOutcome::Delivered) {
      if (awaited) observe_reply(front, written, reply, reader_.frame_bytes());
      return true;
    }
    // Not delivered: the connection breaks below, as unobserved.
    if (outcome == Pipeline::ReplyOutcome::InternalFailed) {
      connection_broken(break_cause::select_failed(endpoint_text_, reply[0].value));
    } else {
      connection_broken(break_cause::unexpected_reply(endpoint_text_));
    }
    return false;
  }
  const Pipeline::ReplyOutcome outcome = pipeline_.on_reply(reply, report_error_, release_slot_);
  if (outcome == Pipeline::ReplyOutcome::InternalFailed) {
    connection_broken(break_cause::select_failed(endpoint_text_, reply[0].value));
    return false;
  }
  if (outcome == Pipeline::ReplyOutcome::Unexpected) {
    connection_broken(break_cause::unexpected_reply(endpoint_text_));
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// Deadlines

bool ConnectionMachine::follow_redirect(std::string_view reply) {
  // -REDIRECT host:port: the replica did not run the command (Valkey checks before it
  // executes anything), so it may go to the primary as if sent there first. Only a write
  // that kept its bytes can; anything else gets the reply as its error, as a READONLY.
  // -MASTERDOWN: a replica that lost its primary refused the command before running it; a
  // PreferReplica read that kept its bytes goes where else it may run, and gets the reply
  // as its error when it cannot go anywhere now.
  constexpr std::string_view kRedirect = "REDIRECT ";
  const bool redirect = reply.starts_with(kRedirect);
  if ((!redirect && !resp::says_master_down(reply)) || pipeline_.empty()) return false;
  const PendingCommand& front = pipeline_.front();
  if (front.kind != PendingKind::Caller || !front.keep_for_redirect || front.state->claimed() ||
      front.state->retained_command.empty() ||
      (!redirect && front.replica_use != ReplicaUse::Prefer)) {
    return false;
  }
  const bool too_many = front.redirects >= kMaxRedirects;
  if (!too_many && redirect_hook_(reply, front)) {
    pipeline_.take_front();  // the copy queued elsewhere owns its reference and its slot
    shared_->counters().redirects.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (!redirect) return false;  // the MASTERDOWN is its error
  fail_oldest(redirect_not_followed(front, reply, endpoint_text_, too_many));
  return true;
}

void ConnectionMachine::fail_oldest(const Error& error) {
  PendingCommand command = pipeline_.take_front();
  if (command.counted) release_slot_();  // before the future completes, as on_reply does
  command.state->fail(error);
  command.state->release();
}

bool ConnectionMachine::explain_sentinel_refusal(std::string_view reply) {
  if (!reply.starts_with("ERR unknown command") || pipeline_.empty()) return false;
  const PendingCommand& front = pipeline_.front();
  if (front.kind != PendingKind::Caller || front.state->claimed()) return false;
  fail_oldest(refused_by_sentinel(reply, endpoint_text_));
  return true;
}

void ConnectionMachine::arm_deadline(Clock::time_point at) {
  if (at >= timer_at_) return;
  timer_at_ = at;
  queue_.set_timer_armed_until(at);
  arm(IoTimer::Deadline, at);
}

void ConnectionMachine::on_deadline(const SocketFacts& facts) {
  if (phase_ == Phase::Closed) return;
  if (now_ < timer_at_ && timer_at_ != Clock::time_point::max()) {
    // A wait that completed just as the timer was re-armed later: honour the later time.
    const Clock::time_point at = timer_at_;
    timer_at_ = Clock::time_point::max();
    arm_deadline(at);
    return;
  }
  timer_at_ = Clock::time_point::max();
  queue_.set_timer_armed_until(timer_at_);
  absorb_inline_writes();
  // A command that times out gives its maxQueuedCommands slot back now, before its future
  // completes: in flight only its entry stays, to skip the late reply. It is counted in
  // status().timeouts before its future completes too, so a caller that reads the status
  // after its TimeoutError finds its own timeout there.
  std::atomic<std::uint64_t>& timeouts = shared_->counters().timeouts;
  const bool logs = observer_.logs(LogLevel::Warning);
  std::string latest;  // the last timeout's message, when logged
  const std::size_t timed_out = pipeline_.expire(
      now_,
      [&](const PendingCommand& c, Clock::time_point written_at) {
        Error error = timeout_error_of(c, /*in_flight=*/true, facts);
        if (observer_.wants_events()) {
          observe_failure(c, CommandOutcome::Timeout, error, writer_.written(), written_at);
        }
        if (logs) latest = error.message();
        timeouts.fetch_add(1, std::memory_order_relaxed);
        return error;
      },
      release_slot_);
  if (timed_out > 0) health_.on_timed_out();
  expired_.clear();
  const Clock::time_point queued_next = queue_.collect_expired(now_, expired_);
  for (PendingCommand& command : expired_) {
    if (command.counted) shared_->release_slots(1);  // before its future completes
    const Error error = timeout_error_of(command, /*in_flight=*/false, facts);
    if (observer_.wants_events()) {
      observe_failure(command, CommandOutcome::Timeout, error, 0, Clock::time_point{});
    }
    if (logs) latest = error.message();
    timeouts.fetch_add(1, std::memory_order_relaxed);
    command.state->fail(error);
    command.state->release();  // the extra reference collect_expired took
  }
  if (logs) {
    const std::string record = timeout_log_.note(now_, timed_out + expired_.size(), latest);
    if (!record.empty()) log(LogLevel::Warning, record);
  }
  // Their slots are back, so new commands come in: what timed out while queued leaves the
  // queue too, also while a write is stuck (a stalled server), or memory would grow.
  if (phase_ != Phase::Ready || !expired_.empty()) {
    std::vector<PendingCommand> dropped;
    queue_.purge_completed(dropped);
    release(dropped);
  }
  const Clock::time_point next = std::min(pipeline_.next_deadline(), queued_next);
  if (next != Clock::time_point::max()) arm_deadline(next);
}

Error ConnectionMachine::timeout_error_of(const PendingCommand& command, bool in_flight,
                                          const SocketFacts& facts) const {
  const SubmissionQueue::Snapshot queued = queue_.snapshot();
  TimeoutFacts timeout;
  timeout.endpoint = endpoint_text_;
  timeout.client_name = config_.name;
  timeout.state = to_string(state());
  timeout.queued_commands = queued.commands;
  timeout.queued_bytes = queued.bytes;
  timeout.in_flight = pipeline_.size();
  timeout.written = writer_.written();
  timeout.taken = writer_.taken();
  // Only a ready session's unread bytes are replies someone is late reading: before that
  // they are the handshake's (a refused AUTH's rest), which the message explains otherwise.
  timeout.unread_bytes = phase_ == Phase::Ready ? reader_.unparsed() + facts.unread_bytes : 0;
  timeout.last_read = health_.last_read();
  timeout.last_write = writer_.last_write();
  timeout.io_busy_percent = facts.io_busy_percent;
  timeout.ready = phase_ == Phase::Ready;
  timeout.held_for_replies = writer_.holding();
  timeout.last_attempt = &attempts_.last_error();
  return timeout_error(command, now_, in_flight, timeout);
}

// ---------------------------------------------------------------------------------------
// Health

void ConnectionMachine::on_health_tick() {
  absorb_inline_writes();
  const bool quiet = pipeline_.empty() && !writer_.writing() && queue_.snapshot().commands == 0;
  const Health::Tick tick =
      health_.on_tick(now_, pipeline_, server_->is_replica(), quiet, writer_.last_write());
  if (tick.dead) {
    // Logged once, as the Failed event's record ("connection failed (attempt 1): no reply …").
    std::string_view oldest;  // a script there may still be running: the message says so
    long long oldest_age_ms = -1;
    if (!pipeline_.empty()) {
      const PendingCommand& front = pipeline_.front();
      oldest = front.name;
      if (front.deadline != Clock::time_point::max()) {
        oldest_age_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(now_ - created_at(front)).count();
      }
    }
    const Error cause =
        break_cause::dead(endpoint_text_, tick.silent_ms, config_, oldest, oldest_age_ms);
    connection_broken(cause);
    // Counted once broken (release; status() reads it with acquire): whoever sees the count
    // sees the connection no longer ready.
    shared_->counters().dead_connections.fetch_add(1, std::memory_order_release);
    return;
  }
  // A READONLY or MASTERDOWN reply asks at once (on_reply()).
  if (tick.probe_role) probe_role();
  if (tick.heartbeat) {
    shared_->counters().heartbeats.fetch_add(1, std::memory_order_relaxed);
    submit_own({own_command(kPing, PendingKind::Heartbeat), kPingArgs});
  }
  writer_.trim(queue_);
  reader_.on_tick();
  if (now_ >= renewal_->at) {
    renew_credentials();
    if (phase_ != Phase::Ready) return;  // replaced: the new attempt arms its own timers
  }
  arm(IoTimer::Health, now_ + health_.period());
}

ConnectionMachine::Actions ConnectionMachine::check_role(Clock::time_point now) {
  begin(now);
  if (phase_ == Phase::Ready) probe_role();
  return actions_;
}

void ConnectionMachine::probe_role() {
  // The server's role may have changed under us (a failover demoted or promoted it), or a
  // replica's link to its primary: ask it (INFO replication or ROLE), one probe at a time, so
  // that routing sees the truth.
  if (std::optional<OwnCommand> probe = server_->begin_probe(now_)) submit_own(*probe);
}

void ConnectionMachine::submit_own(OwnCommand command) {
  own_commands_.push_back(command);
  IoAction action;
  action.kind = IoAction::Kind::Submit;
  action.own = static_cast<std::uint8_t>(own_commands_.size() - 1);
  action.generation = generation_.load(std::memory_order_relaxed);
  actions_.push_back(action);
}

void ConnectionMachine::release(std::vector<PendingCommand>& commands) {
  std::size_t slots = 0;
  for (PendingCommand& command : commands) {
    if (command.state) command.state->release();
    slots += command.counted ? 1 : 0;
  }
  commands.clear();
  shared_->release_slots(slots);
}

}  // namespace redmux::detail
