// ConnectionMachine, part one: the lifecycle — attempts, TLS, the handshake, the loading
// wait, ready, broken, backoff, retarget, shutdown. The data path is connection_flow.cpp.
#include "conn/connection_machine.hpp"

#include <algorithm>
#include <utility>

#include "conn/messages.hpp"

namespace redmux::detail {

std::string_view to_string(ConnectionState state) noexcept {
  static constexpr std::string_view kNames[] = {"idle",  "connecting",   "handshaking",
                                                "ready", "reconnecting", "closed"};
  const auto index = static_cast<std::size_t>(state);
  return index < std::size(kNames) ? kNames[index] : "?";
}

ConnectionMachine::ConnectionMachine(std::shared_ptr<SharedContext> shared, Endpoint endpoint,
                                     bool tls)
    : shared_(std::move(shared)),
      config_(shared_->config()),
      tls_(tls),
      endpoint_(std::move(endpoint)),
      endpoint_text_(endpoint_.to_string()),
      queue_(config_.default_database),
      writer_(shared_->counters()),
      health_(config_),
      attempts_(config_),
      server_(std::make_shared<ServerProfile>(config_)),
      observer_(shared_->observer()) {
  actions_.reserve(8);

  server_->set_answered_hook([this](bool ask_again) {
    if (ask_again) probe_role();  // INFO refused: ROLE says the role from now on
    report_connected();
  });
  release_slot_ = [shared = shared_.get()] { shared->release_slots(1); };
  report_error_ = [this](const PendingCommand& command, NodeSpan error_reply) {
    // Error replies nobody waits for: fire-and-forget commands (counted), redmux's SELECT,
    // and refused SUBSCRIBE-family commands (whose confirmations fail as well).
    if (command.kind == PendingKind::FireAndForget) {
      shared_->counters().fire_and_forget_errors.fetch_add(1, std::memory_order_relaxed);
    }
    shared_->report_error(server_error_from(error_reply, command.name));
  };
}

ConnectionMachine::~ConnectionMachine() {
  // Anything still held (shutdown() not run) is failed here so no future waits forever.
  std::vector<PendingCommand> left;
  queue_.close(left);
  for (PendingCommand& command : left) {
    if (command.state) {
      command.state->fail(Error(errc::shut_down, "redmux: connection destroyed"));
      command.state->release();
    }
  }
  std::size_t released = pipeline_.fail_all(
      [](const PendingCommand&) { return Error(errc::shut_down, "redmux: connection destroyed"); });
  shared_->release_slots(released);
}

void ConnectionMachine::set_role_hook(Hook hook) {
  // Reported first (an event, and a log line): a failover redmux follows is otherwise seen
  // only in topology().
  role_routing_ = std::move(hook);
  role_hook_ = [this] {
    ConnectionEvent event;
    event.kind = ConnectionEventKind::RoleChanged;
    event.endpoint = endpoint_text_;
    event.purpose = purpose_;
    event.primary = !server_->is_replica();
    if (!event.primary) event.master = server_->master();
    shared_->report_role_change(event);
    role_routing_();
  };
  server_->set_changed_hook(role_hook_);
}

Endpoint ConnectionMachine::endpoint() const {
  std::lock_guard lock(endpoint_mutex_);
  return endpoint_;
}

std::string ConnectionMachine::describe_endpoint() const {
  std::lock_guard lock(endpoint_mutex_);
  return endpoint_text_;
}

std::string ConnectionMachine::last_failure() const {
  std::lock_guard lock(endpoint_mutex_);
  return last_failure_;
}

void ConnectionMachine::note_failure(const Error& error) {
  std::lock_guard lock(endpoint_mutex_);
  last_failure_ = error.message();
}

std::string ConnectionMachine::tls_server_name() const {
  return config_.ssl_host.empty() ? endpoint_.host : config_.ssl_host;
}

std::string ConnectionMachine::take_handshake_bytes() {
  std::string bytes;
  bytes.swap(handshake_out_);
  return bytes;
}

void ConnectionMachine::enable_client_cache() {
  if (!config_.client_cache || cache_) return;
  cache_ = std::make_shared<ClientCache>(config_.client_cache_bytes, config_.client_cache_max_ttl);
}

void ConnectionMachine::set_phase(Phase phase) noexcept {
  // What other layers see of each phase, in the order of Phase: the TLS handshake and the
  // loading wait are part of handshaking, the backoff is reconnecting.
  static constexpr ConnectionState kStateOf[] = {
      ConnectionState::Idle,         ConnectionState::Connecting,  ConnectionState::Handshaking,
      ConnectionState::Handshaking,  ConnectionState::Handshaking, ConnectionState::Ready,
      ConnectionState::Reconnecting, ConnectionState::Closed};
  static_assert(std::size(kStateOf) == static_cast<std::size_t>(Phase::Closed) + 1);
  // The client-side cache lives as long as one ready session: what the server tracked for
  // the session ends with it (invalidations sent meanwhile are lost).
  if (cache_ && phase_ == Phase::Ready && phase != Phase::Ready) cache_->set_active(false);
  if (phase == Phase::Ready && phase_ != Phase::Ready) {
    // A new session: the failure it recovered from is no longer why it is down.
    std::lock_guard lock(endpoint_mutex_);
    last_failure_.clear();
  }
  phase_ = phase;
  shown_phase_.store(phase, std::memory_order_relaxed);
  state_.store(kStateOf[static_cast<std::size_t>(phase)], std::memory_order_release);
}

std::string ConnectionMachine::attempt_text() const {
  const std::string failure = last_failure();
  switch (shown_phase_.load(std::memory_order_relaxed)) {
    case Phase::Idle:
      return "not started";
    case Phase::Connecting: {
      const std::string_view how = endpoint().is_unix() ? "(Unix socket)" : "(TCP)";
      return failure.empty() ? "connecting " + std::string(how) + ", unanswered so far"
                             : "connecting " + std::string(how) + " again after: " + failure;
    }
    case Phase::Tls:
      return "in its TLS handshake, unanswered so far (is this the server's TLS port "
             "(tls-port)?)";
    case Phase::Handshaking:
      return "in the Redis handshake (HELLO, AUTH …), unanswered so far";
    case Phase::Loading:
      return "waiting for the server to load its data (LOADING)";
    case Phase::Ready:
      return "ready";
    case Phase::Backoff:
      return "waiting to try again after: " + (failure.empty() ? std::string("?") : failure);
    case Phase::Closed:
      return "closed";
  }
  return {};
}

void ConnectionMachine::report_event(ConnectionEventKind kind, const Error& error,
                                     std::chrono::milliseconds delay) {
  ConnectionEvent event;
  event.kind = kind;
  event.endpoint = endpoint_text_;
  event.purpose = purpose_;
  event.error = error;
  event.attempt = attempts_.failed_in_a_row();
  event.delay = delay;
  shared_->report_event(event);
}

// ---------------------------------------------------------------------------------------
// Events

ConnectionMachine::Actions ConnectionMachine::start(FirstResult first, Clock::time_point now) {
  begin(now);
  first_result_ = std::move(first);
  connect_attempt();
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_resolve_failed(std::string_view reason,
                                                                Clock::time_point now) {
  begin(now);
  attempt_failed(connect_error::resolve_failed(endpoint_.host, reason));
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_connected(Clock::time_point now) {
  begin(now);
  if (phase_ != Phase::Connecting) return actions_;
  if (tls_) {
    // The connect timer (connectTimeout) still runs: it bounds the TLS handshake too.
    set_phase(Phase::Tls);
    emit_action(IoAction::Kind::StartTls);
    return actions_;
  }
  begin_handshake();
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_connect_failed(std::string_view reason,
                                                                Clock::time_point now) {
  begin(now);
  if (phase_ == Phase::Connecting) {
    attempt_failed(connect_error::connect_failed(endpoint_text_, reason));
  }
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_tls_done(Clock::time_point now) {
  begin(now);
  if (phase_ == Phase::Tls) begin_handshake();
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_tls_failed(Error error, Clock::time_point now) {
  begin(now);
  if (phase_ == Phase::Tls) attempt_failed(std::move(error));
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_handshake_write_failed(std::string_view reason,
                                                                        std::string_view hint,
                                                                        Clock::time_point now) {
  begin(now);
  connection_broken(connect_error::handshake_write_failed(endpoint_text_, reason, hint));
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_read_failed(bool closed_by_peer,
                                                             std::string_view reason,
                                                             std::string_view hint,
                                                             Clock::time_point now) {
  begin(now);
  const bool plain_handshake = state() == ConnectionState::Handshaking && !tls_;
  const std::string refusal =
      handshake_ && state() == ConnectionState::Handshaking ? handshake_->refusal() : std::string();
  std::string why(hint);
  if (closed_by_peer && state() == ConnectionState::Ready &&
      (purpose_ == ConnectionPurpose::Subscription ||
       purpose_ == ConnectionPurpose::ShardSubscription)) {
    // What closes a subscriber of a server that stays up, said where it is seen: the
    // server's own log is the only other place.
    why +=
        " (a server that stays up closes a subscriber when it passes client-output-buffer-limit "
        "pubsub — messages came faster than they were read — or on CLIENT KILL; its log says "
        "which)";
  }
  connection_broken(break_cause::read_failed(endpoint_text_, closed_by_peer, reason, why,
                                             plain_handshake, reader_.unparsed(), refusal));
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::on_timer(IoTimer timer, Clock::time_point now,
                                                       const SocketFacts& facts) {
  begin(now);
  switch (timer) {
    case IoTimer::Deadline:
      on_deadline(facts);
      break;
    case IoTimer::Connect:
      if (phase_ == Phase::Backoff) {
        connect_attempt();
      } else if (phase_ == Phase::Connecting || phase_ == Phase::Tls ||
                 phase_ == Phase::Handshaking || phase_ == Phase::Loading) {
        // Tls: the TLS handshake got no answer (the Redis handshake had not begun).
        const bool in_tls = phase_ == Phase::Tls;
        const std::string_view step = in_tls ? "TLS handshake" : to_string(state());
        // The provider is asked as the Redis handshake begins (renewals' timings are not
        // this attempt's).
        const auto provider_took =
            phase_ == Phase::Handshaking ? slow_provider_took() : std::chrono::milliseconds(0);
        attempt_failed(connect_error::timed_out(endpoint_text_, config_.connect_timeout, step,
                                                in_tls, provider_took));
      }
      break;
    case IoTimer::Health:
      if (phase_ == Phase::Loading) {
        probe_loading();
      } else if (phase_ == Phase::Ready) {
        on_health_tick();
      }
      break;
  }
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::retarget(Endpoint endpoint, Clock::time_point now) {
  begin(now);
  if (phase_ == Phase::Closed || endpoint == endpoint_) return actions_;
  if (phase_ == Phase::Ready) {
    // Before the endpoint changes: the commands in flight went to the old server, and each
    // caller is told whether its command was sent there.
    connection_broken(break_cause::moved(endpoint.to_string()), /*backoff=*/false);
  }
  // A timeout record held back names the old server's commands: logged now, under its name.
  if (observer_.logs(LogLevel::Warning)) {
    if (const std::string held = timeout_log_.flush(now); !held.empty()) {
      log(LogLevel::Warning, held);
    }
  }
  {
    std::lock_guard lock(endpoint_mutex_);
    endpoint_ = std::move(endpoint);
    endpoint_text_ = endpoint_.to_string();
  }
  server_->retargeted();
  role_unknown_ = true;
  // Idle: start() connects to the new endpoint. Otherwise now, not after the reconnect
  // backoff: the new server is expected to be up. A new generation makes every completion
  // of the attempt or wait in progress stale.
  if (phase_ == Phase::Idle || phase_ == Phase::Closed) return actions_;
  run_down_hook(/*retargeted=*/true);  // what is queued was meant for the old server
  report_event(ConnectionEventKind::Reconnecting, Error(), std::chrono::milliseconds(0));
  connect_attempt();
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::reconnect_now(Clock::time_point now) {
  begin(now);
  // The new attempt's generation makes the backoff timer's completion stale.
  if (phase_ == Phase::Backoff) connect_attempt();
  return actions_;
}

ConnectionMachine::Actions ConnectionMachine::shutdown(Clock::time_point now) {
  begin(now);
  if (phase_ == Phase::Closed) return actions_;
  set_phase(Phase::Closed);
  ++generation_;
  close_socket();
  absorb_inline_writes();
  cancel(IoTimer::Connect);
  cancel(IoTimer::Deadline);
  cancel(IoTimer::Health);
  const Error closed = break_cause::closed(shared_->close_note());
  std::vector<PendingCommand> queued;
  queue_.close(queued);
  // The command hook hears of each, as of a command failed by a break.
  const bool observed = observer_.wants_events();
  for (PendingCommand& command : queued) {
    if (!command.state) continue;
    Error error = not_sent_error(command, closed, errc::shut_down, "");
    if (observed) observe_failure(command, CommandOutcome::ConnectionError, error, 0, {});
    command.state->fail(std::move(error));
  }
  release(queued);
  // A write in progress may have reached the server, in part or whole: as at a break, it
  // counts as written, so that none of its commands is called "not sent".
  writer_.on_break();
  const std::uint64_t written = writer_.written();
  shared_->release_slots(pipeline_.fail_all([&](const PendingCommand& command) {
    Error error = broken_error(command, closed, written, endpoint_text_);
    if (observed) observe_failure(command, CommandOutcome::ConnectionError, error, written, {});
    return error;
  }));
  first_waits_for_probe_ = false;
  if (first_result_) {
    auto first = std::move(first_result_);
    first_result_ = nullptr;
    first(closed);
  }
  return actions_;
}

// ---------------------------------------------------------------------------------------
// Lifecycle steps

void ConnectionMachine::connect_attempt() {
  if (phase_ == Phase::Closed) return;
  set_phase(Phase::Connecting);
  ++generation_;
  close_socket();
  attempt_deadline_ = now_ + config_.connect_timeout;
  arm(IoTimer::Connect, attempt_deadline_);
  emit_action(IoAction::Kind::Connect);
}

void ConnectionMachine::close_socket() {
  queue_.set_inline(false);
  writer_.seal();  // an inline write in progress finishes first; none starts after
  emit_action(IoAction::Kind::CloseSocket);
}

void ConnectionMachine::begin_handshake() {
  set_phase(Phase::Handshaking);
  loading_probes_ = 0;
  reader_.reset();
  Credentials credentials;
  if (!credentials_for_handshake(credentials)) return;
  handshake_ = std::make_unique<Handshake>(config_, endpoint_text_, cache_ != nullptr,
                                           std::move(credentials));
  redirects_.store(false, std::memory_order_relaxed);
  if (redirect_hook_) handshake_->announce_redirect();
  handshake_out_.clear();
  std::string bytes;
  handshake_->begin(bytes);
  write_handshake(std::move(bytes));
  emit_action(IoAction::Kind::Read);
}

void ConnectionMachine::write_handshake(std::string bytes) {
  const bool pending = !handshake_out_.empty();
  handshake_out_ += bytes;
  if (!pending) emit_action(IoAction::Kind::WriteHandshake);
}

bool ConnectionMachine::on_handshake_reply(NodeSpan reply) {
  std::string more;
  switch (handshake_->on_reply(reply, more)) {
    case Handshake::Step::Continue:
      if (!more.empty()) write_handshake(std::move(more));
      return true;
    case Handshake::Step::Done:
      become_ready();
      return true;
    case Handshake::Step::Failed:
      attempt_failed(handshake_->error(), handshake_->refused_for_good());
      return false;
    case Handshake::Step::Loading:
      wait_for_loading();
      return true;
  }
  return true;
}

void ConnectionMachine::wait_for_loading() {
  // The server answered the handshake but is loading its dataset: commands would fail with
  // -LOADING. Keep them queued (their deadlines still run) and ask again, backing off from
  // 100 ms to 1 s; each probe is bounded by connectTimeout like the handshake itself.
  cancel(IoTimer::Connect);
  if (loading_probes_++ == 0) {
    shared_->counters().loading_waits.fetch_add(1, std::memory_order_relaxed);
  }
  const auto delay =
      std::chrono::milliseconds(std::min(1000, 100 << std::min(loading_probes_ - 1, 4)));
  set_phase(Phase::Loading);
  arm(IoTimer::Health, now_ + delay);
}

void ConnectionMachine::probe_loading() {
  std::string probe;
  handshake_->probe_loading(probe);
  set_phase(Phase::Handshaking);
  write_handshake(std::move(probe));
  arm(IoTimer::Connect, now_ + config_.connect_timeout);
}

void ConnectionMachine::attempt_failed(Error error, bool for_good) {
  if (phase_ == Phase::Closed) return;
  ++generation_;  // completions of this attempt are stale from now on
  close_socket();
  cancel(IoTimer::Connect);
  handshake_.reset();
  std::optional<Error> gave_up =
      attempts_.failed(error, endpoint_text_, first_result_ != nullptr, for_good);
  note_failure(attempts_.last_error());
  shared_->counters().connection_failures.fetch_add(1, std::memory_order_relaxed);
  report_event(ConnectionEventKind::Failed, attempts_.last_error());
  if (gave_up) {
    auto first = std::move(first_result_);
    first_result_ = nullptr;
    first(*gave_up);
    if (phase_ == Phase::Closed) return;
  }
  if (config_.backlog_policy == BacklogPolicy::FailFast) {
    fail_queued(attempts_.last_error(), errc::disconnected, " (backlogPolicy=failFast)");
  }
  schedule_reconnect();
  run_down_hook(/*retargeted=*/false);
}

void ConnectionMachine::run_down_hook(bool retargeted) {
  if (down_hook_) down_hook_(retargeted);
}

void ConnectionMachine::schedule_reconnect() {
  set_phase(Phase::Backoff);
  const std::chrono::milliseconds delay = attempts_.next_delay(reconnect_jitter());
  report_event(ConnectionEventKind::Reconnecting, Error(), delay);
  arm(IoTimer::Connect, now_ + delay);
  arm_deadline(now_);  // queued commands still have deadlines while we wait
}

void ConnectionMachine::become_ready() {
  cancel(IoTimer::Connect);
  const bool role_changed = server_->adopt(handshake_->identity());
  const bool first_role_of_server = std::exchange(role_unknown_, false);
  handshake_database_ = handshake_->database();
  redirects_.store(handshake_->redirects(), std::memory_order_relaxed);
  if (cache_) {
    // A new session: nothing from an earlier one is kept (set_active(false) dropped it at
    // the break); reads are cached again only if this session tracks.
    cache_->invalidate_all();
    cache_->set_active(handshake_->tracking());
    const std::string& refusal = handshake_->tracking_refusal();
    // Said once per connection, not at every reconnect to the same refusal; a refusal at
    // connect(), before a log is installed, is said at the first reconnect after that.
    if (refusal.empty()) {
      refusal_logged_.clear();
    } else if (refusal != refusal_logged_ && observer_.logs(LogLevel::Warning)) {
      log(LogLevel::Warning,
          "client-side cache off on this connection, its reads go to the server: " + refusal);
      refusal_logged_ = refusal;
    }
    cache_->set_refusal(refusal);
  }
  // Said once per connection, as the refusal above.
  at_sentinel_ = !shared_->to_sentinels() && handshake_->identity().mode == "sentinel";
  if (!at_sentinel_) {
    sentinel_logged_ = false;
  } else if (!sentinel_logged_ && observer_.logs(LogLevel::Warning)) {
    log(LogLevel::Warning, connected_to_sentinel(endpoint_text_));
    sentinel_logged_ = true;
  }
  handshake_.reset();
  const bool restored = attempts_.succeeded();
  if (restored) shared_->counters().reconnects.fetch_add(1, std::memory_order_relaxed);
  health_.on_ready(now_);
  if (observer_.histograms() && !endpoint_latency_) {
    // Once per connection (a lock): the endpoint's histograms. A connection retargeted
    // elsewhere (Sentinel) keeps recording into its first endpoint's: they are per
    // connection target as configured.
    try {
      endpoint_latency_ = observer_.endpoint_latency(endpoint_text_);
    } catch (...) {  // out of memory: this connection records per command name only
    }
  }
  loading_probes_ = 0;
  server_->forget_probe();
  queue_.reset_stream_database(handshake_database_);
  queue_.reset_stream_offsets();
  writer_.restart();
  set_phase(Phase::Ready);
  report_event(restored ? ConnectionEventKind::Restored : ConnectionEventKind::Connected);
  // Before the backlog is written: what the hook puts first (the subscriptions, in one
  // batch: submit_first()) leaves ahead of the commands held while the connection was down,
  // in the same write.
  if (ready_hook_ && phase_ == Phase::Ready) ready_hook_();
  // Only now may callers write inline: a caller's bytes must not reach the socket before
  // what the hook put first. (Never under TLS, where every byte must go through the TLS
  // session on the I/O thread.)
  if (phase_ == Phase::Ready) queue_.set_inline(!tls_);
  if (role_changed && restored && role_hook_) {
    // A connection moved to another server learns that server's role: no change to report.
    if (first_role_of_server) {
      role_routing_();
    } else {
      role_hook_();
    }
  }
  if (server_->awaits_replication()) {
    // connect() returns once the replica's state is known (one more round trip), so reads
    // sent right after it find the replicas that are in sync; report_connected() reports.
    first_waits_for_probe_ = first_result_ != nullptr;
    probe_role();
  } else if (first_result_) {
    auto first = std::move(first_result_);
    first_result_ = nullptr;
    first(Error());
  }
  if (phase_ != Phase::Ready) return;
  arm(IoTimer::Health, now_ + health_.period());
  if (!writer_.writing()) write_more();
}

void ConnectionMachine::connection_broken(const Error& cause, bool backoff) {
  if (phase_ == Phase::Closed) return;
  if (phase_ != Phase::Ready) {
    attempt_failed(cause);
    return;
  }
  if (cache_) cache_->set_active(false);  // first: no hit from a session known to be gone
  // Other threads, and the handlers this break calls, see the connection down from here on
  // (callers stop writing inline, failFast refuses at submit). phase_ stays Ready until
  // schedule_reconnect(): absorb_inline_writes() below must still take what callers wrote
  // inline into the pipeline that fails with this session.
  state_.store(ConnectionState::Reconnecting, std::memory_order_release);
  ++generation_;
  report_connected();  // it was ready: the replica's first probe that start() awaited is moot
  close_socket();
  absorb_inline_writes();  // still Ready: commands written inline join those in flight
  writer_.on_break();
  cancel(IoTimer::Health);
  broken_.clear();
  pipeline_.take_all(broken_, observer_.wants_events() ? &broken_written_ : nullptr);
  settle_broken(broken_, cause);
  attempts_.broke(cause);
  note_failure(cause);
  // Release: status() reads it with acquire, and then sees this session's end (state_ above).
  shared_->counters().connection_failures.fetch_add(1, std::memory_order_release);
  report_event(ConnectionEventKind::Failed, cause);
  if (config_.backlog_policy == BacklogPolicy::FailFast) {
    fail_queued(cause, errc::disconnected, " (backlogPolicy=failFast)");
  } else if (!carry_over_) {
    // A leased connection's commands belong to its session (a transaction's EXEC must not
    // run on a new connection without its WATCH): they fail with it, never carried over.
    fail_queued(cause, errc::not_sent, " (dedicated connection: not carried over to a new one)");
  }
  if (backoff) {
    schedule_reconnect();
  } else {
    arm_deadline(now_);  // as schedule_reconnect(): queued commands keep their deadlines
  }
}

void ConnectionMachine::report_connected() {
  if (!std::exchange(first_waits_for_probe_, false) || !first_result_) return;
  auto first = std::move(first_result_);
  first_result_ = nullptr;
  first(Error());
}

void ConnectionMachine::fail_queued(const Error& error, errc code, std::string_view why) {
  std::vector<PendingCommand> queued;
  queue_.drain(queued);
  for (PendingCommand& command : queued) {
    if (command.state) command.state->fail(not_sent_error(command, error, code, why));
  }
  release(queued);
}

}  // namespace redmux::detail
