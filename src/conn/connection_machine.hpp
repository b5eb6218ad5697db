// ConnectionMachine: one connection's lifecycle and data path as a sans-IO state machine.
// Its runner (net/connection.cpp) tells it what happened — an attempt connected, bytes were
// read, a write completed, a timer fired — with the time as an argument, and performs the
// IoActions each event returns, in order. Nothing here includes Asio or opens a socket, so
// tests/unit/conn/ drives it with scripted events.
//
//   Idle ─start─▶ Connecting ─▶ [Tls] ─▶ Handshaking ⇄ Loading ─▶ Ready
//                     ▲                                             │ break
//                     └──────────── Backoff ◀─ attempt failed ◀─────┘
//   retarget(): an attempt or a backoff starts over at once at the new endpoint; a Ready
//   connection breaks first. shutdown(): Closed, from any phase, for good.
//
// Which piece owns which rule (each a file of its own in src/conn/; the machine only
// sequences them — connection_machine.cpp the lifecycle, connection_flow.cpp the data path):
//   submission_queue  callers → I/O thread, the writer role, the SELECT it inserts, the
//                     commands a cluster node hands on when their slot moved (reroute)
//   writer            what goes into the next write, coalescing and the hold, the yield for
//                     released callers, inline writes and their hand-off, stream offsets
//   reader            the parse loop; a frame is a reply, a handshake reply or a push
//   pipeline          commands in flight, replies in order, deadlines (a timed-out command
//                     stays in flight until its reply, its slot given back at once), pub/sub
//                     confirmations
//   handshake         HELLO/AUTH/SELECT/SETINFO/INFO, RESP2 fallback, the LOADING answer
//   credentials.cpp   the credential provider: asked before each handshake, and again
//                     before its credentials expire — AUTH in place, or a RESP2 subscriber
//                     connection replaced; a refusal reported (AuthRefused), not retried
//   health            the idle heartbeat, the dead-connection rule, when to ask ROLE
//   attempts          connectRetry, the first series' error, the reconnect backoff
//   server_profile    the server's identity and role, a replica's health (INFO replication,
//                     replication.hpp), the one probe in flight (INFO replication or ROLE)
//   break_policy      after a break: never sent / outcome unknown / retryable, resend order
//   messages          every error text of the connection
//   cache (src/cache) the client-side cache: on_push() hands it the invalidations, in
//                     order with the replies; a session's end drops it (set_phase)
//   the machine       the loading wait, retarget, reconnect_now (a backoff cut short),
//                     shutdown, backlogPolicy=failFast, the generations that make an old
//                     attempt's completions stale, the down hook (after a retarget or a
//                     failed attempt) and take_queued(), start()'s first result waiting for
//                     a replica's first INFO replication
//
// Threads: submit(), submit_batch(), write_inline() and the accessors marked "any thread"
// are safe from any thread. Every event runs on the connection's I/O thread; events never
// nest (nothing a machine calls out to feeds it an event synchronously: the runner posts).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/client_cache.hpp"
#include "conn/attempts.hpp"
#include "conn/handshake.hpp"
#include "conn/health.hpp"
#include "conn/io_action.hpp"
#include "conn/pending_command.hpp"
#include "conn/pipeline.hpp"
#include "conn/reader.hpp"
#include "conn/server_profile.hpp"
#include "conn/shared_context.hpp"
#include "conn/submission_queue.hpp"
#include "conn/writer.hpp"
#include "redmux/config.hpp"
#include "redmux/events.hpp"

namespace redmux::detail {

/// The state other layers see (routing, pub/sub, status).
enum class ConnectionState : std::uint8_t {
  Idle,
  Connecting,
  Handshaking,  ///< TLS, the Redis handshake, or waiting for the server to load its data
  Ready,
  Reconnecting,  ///< waiting out the backoff
  Closed
};
std::string_view to_string(ConnectionState state) noexcept;

/// What the runner knows about the socket and its thread when the deadline timer fires: for
/// the timeout messages.
struct SocketFacts {
  std::size_t unread_bytes = 0;  ///< bytes the socket holds, not read yet
  int io_busy_percent = 0;
};

class ConnectionMachine {
 public:
  using Actions = std::span<const IoAction>;
  using FirstResult = std::function<void(const Error&)>;
  using PushHandler = std::function<void(NodeSpan)>;
  using Hook = std::function<void()>;
  /// `retargeted`: retarget() ran (else an attempt to connect failed).
  using DownHook = std::function<void(bool retargeted)>;
  /// A caller's command answered `reply` ("REDIRECT host:port", or "MASTERDOWN …" to a
  /// PreferReplica read), which did not run: true when the hook queued it on another
  /// connection (that primary's; for MASTERDOWN another replica's or the primary's) — the
  /// queued copy then owns the command's reference and its slot; false to have it failed
  /// here. Its bytes are in command.state->retained_command. Runs on the I/O thread.
  using RedirectHook = std::function<bool(std::string_view reply, const PendingCommand& command)>;

  /// `tls`: the transport encrypts (no inline writes then: every byte must go through TLS).
  ConnectionMachine(std::shared_ptr<SharedContext> shared, Endpoint endpoint, bool tls);
  ~ConnectionMachine();
  ConnectionMachine(const ConnectionMachine&) = delete;
  ConnectionMachine& operator=(const ConnectionMachine&) = delete;

  // --- set up, before start() ---
  void set_carry_over(bool carry_over) noexcept { carry_over_ = carry_over; }
  void set_subscriber_mode(bool on) noexcept { reader_.set_subscriber_mode(on); }
  /// REQUIRES: before start(). Named in its events (ConnectionEvent::purpose).
  void set_purpose(ConnectionPurpose purpose) noexcept { purpose_ = purpose; }
  void set_push_handler(PushHandler handler) { push_handler_ = std::move(handler); }
  /// Under clientCache=true: this connection keeps a client-side cache (its handshake turns
  /// CLIENT TRACKING on). The multiplexer's interactive and cluster node connections do.
  void enable_client_cache();
  /// Runs each time the connection becomes ready, before anything queued is written.
  void set_ready_hook(Hook hook) { ready_hook_ = std::move(hook); }
  /// Runs when the server's role changed (replica ↔ primary).
  void set_role_hook(Hook hook);
  /// Before start(): which server a replica's primary is (ServerProfile::set_locator).
  void set_locator(ServerProfile::Locator locate) { server_->set_locator(std::move(locate)); }
  /// Runs when the connection is not connected and commands queued on it would wait for it:
  /// after retarget() (the new attempt not begun yet) and after each failed attempt (the
  /// backoff begun). The hook may take out those that may run elsewhere (take_queued()).
  void set_down_hook(DownHook hook) { down_hook_ = std::move(hook); }
  /// This connection follows -REDIRECT through `hook`: its handshake announces CLIENT CAPA
  /// redirect to a server that knows it (handshake.hpp), and a redirected write goes to the
  /// primary the server names (a multiplexer with a primary and replicas). A PreferReplica
  /// read answered -MASTERDOWN goes through it too.
  void set_redirect_hook(RedirectHook hook) { redirect_hook_ = std::move(hook); }

  // --- any thread ---
  /// The current session announced CLIENT CAPA redirect: a write sent on it keeps its bytes
  /// (PendingCommand::keep_for_redirect) so that a -REDIRECT can send it on.
  bool redirects() const noexcept { return redirects_.load(std::memory_order_relaxed); }
  ConnectionState state() const noexcept { return state_.load(std::memory_order_acquire); }
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  const ServerProfile& server() const noexcept { return *server_; }
  Endpoint endpoint() const;
  std::string describe_endpoint() const;
  /// Why the last connection attempt failed, or why the last session broke; empty when
  /// neither happened yet, or since the last session began (a recovered failure is not why
  /// the connection is down later, closed by close() say).
  std::string last_failure() const;
  /// Any thread: where the current attempt is, for connect()'s syncTimeout message — "in its
  /// TLS handshake, unanswered so far (is this the server's TLS port (tls-port)?)", "waiting
  /// to try again after: <the last failure>" …
  std::string attempt_text() const;
  std::size_t queued_count() const { return queue_.snapshot().commands; }
  std::size_t in_flight_count() const noexcept { return queue_.in_flight(); }
  /// For status(): accepted commands whose callers still wait, queued (not yet written) and
  /// in flight (written, awaiting replies). Timed-out and redmux's own commands not counted.
  struct Tally {
    std::size_t queued = 0;
    std::size_t in_flight = 0;
  };
  Tally tally() const {
    const SubmissionQueue::Tally queue = queue_.tally();
    return {queue.queued, queue.written + pipeline_.awaited()};
  }
  /// The client-side cache of this connection (clientCache=true), else null. Its entries
  /// live for one ready session that tracks (see ClientCache).
  const std::shared_ptr<ClientCache>& cache() const noexcept { return cache_; }
  /// For status(): this connection's writes and the commands they carried, and when it last
  /// read and wrote (time_point{}: never).
  struct Activity {
    std::uint64_t writes = 0;
    std::uint64_t commands_written = 0;
    Clock::time_point last_read{};
    Clock::time_point last_write{};
  };
  Activity activity() const noexcept {
    Activity out;
    out.writes = writer_.writes();
    out.commands_written = writer_.commands_written();
    out.last_read = Clock::time_point(Clock::duration(last_read_.load(std::memory_order_relaxed)));
    out.last_write = writer_.last_write();
    return out;
  }
  /// Redis Cluster: see SubmissionQueue::reroute().
  void reroute(std::shared_ptr<const SlotSet> elsewhere, std::string& bytes,
               std::vector<PendingCommand>& moved) {
    queue_.reroute(std::move(elsewhere), bytes, moved);
  }

  /// Queues one command; a refused one (closed, or down under failFast) is failed here.
  /// The runner then acts on the answer: write inline, wake the I/O thread, or re-arm; or,
  /// for Forward (nothing queued: a cluster command whose slot this node lost), hand the
  /// command to the cluster router.
  SubmissionQueue::Pushed submit(int db, std::span<const Arg> args, PendingCommand command) {
    if (fails_fast()) return refuse(command, true);
    const SubmissionQueue::Pushed pushed = queue_.push(db, args, command);
    return pushed == SubmissionQueue::Pushed::Closed ? refuse(command, false) : pushed;
  }
  /// Under failFast, commands are refused at once while the connection is not ready.
  bool fails_fast() const noexcept {
    return config_.backlog_policy == BacklogPolicy::FailFast && state() != ConnectionState::Ready;
  }
  /// Several commands queued contiguously (a Batch, a transaction, commands moved here);
  /// refused (Closed) when the connection is closed, and with `fail_fast` (a caller's Batch)
  /// also while it is not ready under failFast, as a lone command is.
  SubmissionQueue::Pushed submit_batch(int db, std::string_view bytes,
                                       std::span<PendingCommand> commands, bool fail_fast = false);
  /// From the ready hook only (I/O thread, before the session's first write): `commands`
  /// go out first, ahead of the backlog (SubmissionQueue::push_front()).
  void submit_first(std::string_view bytes, std::span<PendingCommand> commands);
  /// After WriteInline: the caller sends the queued bytes itself with `send` (see Writer).
  template <class Send>
  Writer::Inline write_inline(Send&& send, Clock::time_point now) {
    std::uint64_t generation = 0;
    Writer::Inline result = writer_.write_inline(
        queue_,
        [this, &generation] {
          // Under the socket lock, which a break's seal() takes after the generation moved.
          generation = generation_.load(std::memory_order_acquire);
          return state() == ConnectionState::Ready;
        },
        send, now);
    result.generation = generation;
    return result;
  }

  // --- events (I/O thread): each returns what to do next ---
  Actions start(FirstResult first, Clock::time_point now);
  Actions on_resolve_failed(std::string_view reason, Clock::time_point now);
  Actions on_connected(Clock::time_point now);
  Actions on_connect_failed(std::string_view reason, Clock::time_point now);
  Actions on_tls_done(Clock::time_point now);
  Actions on_tls_failed(Error error, Clock::time_point now);
  Actions on_handshake_write_failed(std::string_view reason, std::string_view hint,
                                    Clock::time_point now);
  Actions on_read(std::size_t bytes, Clock::time_point now);
  Actions on_read_failed(bool closed_by_peer, std::string_view reason, std::string_view hint,
                         Clock::time_point now);
  Actions on_written(std::size_t bytes, Clock::time_point now);
  Actions on_write_failed(std::size_t bytes, std::string_view reason, Clock::time_point now);
  Actions on_timer(IoTimer timer, Clock::time_point now, const SocketFacts& facts = {});
  /// A push woke the I/O thread (SubmissionQueue::Pushed::QueuedWake).
  Actions on_wake(Clock::time_point now);
  /// After Inline::Then::HandOver; `generation`: the machine's when the inline write ended.
  Actions on_inline_handover(Writer::Inline result, std::uint64_t generation,
                             Clock::time_point now);
  /// After Inline::Then::Absorb: take the commands written inline in (their deadlines).
  Actions on_absorb(Clock::time_point now);
  /// After Pushed::QueuedRearm: the deadline timer must fire by `deadline`.
  Actions on_rearm(Clock::time_point deadline, Clock::time_point now);
  /// Points the connection at `endpoint` (Sentinel follows a failover with it). From here
  /// until the new server's handshake the server counts as a replica that is not in sync.
  Actions retarget(Endpoint endpoint, Clock::time_point now);
  /// Asks the server its role now, when ready (INFO replication, or ROLE: ServerProfile).
  Actions check_role(Clock::time_point now);
  /// Waiting out the reconnect backoff: tries now instead (the cluster announced the
  /// server again; the backoff grew while it was down). No-op in every other phase.
  Actions reconnect_now(Clock::time_point now);
  /// I/O thread, while not ready (from the down hook): removes the callers' commands queued
  /// and not yet written (Caller and FireAndForget), in order, with their encoded bytes
  /// (offsets into `bytes`; each command's `db` is the database it runs against). Commands
  /// already completed (timed out) are released here; redmux's own commands stay queued.
  void take_queued(std::string& bytes, std::vector<PendingCommand>& commands);
  /// Closes for good: every command fails (queued: shut_down; in flight: not_sent or
  /// outcome_unknown).
  Actions shutdown(Clock::time_point now);

  // --- what the actions refer to (I/O thread) ---
  const Endpoint& target() const noexcept { return endpoint_; }
  const std::string& target_text() const noexcept { return endpoint_text_; }
  bool is_tls() const noexcept { return tls_; }
  std::string tls_server_name() const;
  std::string take_handshake_bytes();
  /// `bytes` of the handshake reached the socket (status().bytes_written counts them, and
  /// they are the connection's last write).
  void handshake_written(std::size_t bytes, Clock::time_point now) noexcept {
    writer_.on_handshake_written(bytes, now);
  }
  std::span<char> read_space() { return reader_.free_space(); }
  std::string_view write_buffer() const noexcept { return writer_.buffer(); }
  /// The command of a Submit action, with its arguments (ROLE, INFO replication, PING).
  const OwnCommand& to_submit(std::uint8_t index) const { return own_commands_[index]; }

 private:
  /// Finer than ConnectionState: which step of an attempt the connection is in.
  enum class Phase : std::uint8_t {
    Idle,
    Connecting,
    Tls,
    Handshaking,
    Loading,
    Ready,
    Backoff,
    Closed
  };

  /// Starts an event at `now`: the actions of the previous one have been performed.
  void begin(Clock::time_point now) {
    now_ = now;
    actions_.clear();
    own_commands_.clear();
  }
  void emit_action(IoAction::Kind kind, IoTimer timer = IoTimer::Deadline,
                   Clock::time_point at = {}) {
    actions_.push_back({kind, timer, 0, generation_.load(std::memory_order_relaxed), at});
  }
  void arm(IoTimer timer, Clock::time_point at) {
    emit_action(IoAction::Kind::ArmTimer, timer, at);
  }
  void cancel(IoTimer timer) { emit_action(IoAction::Kind::CancelTimer, timer); }
  void set_phase(Phase phase) noexcept;
  void report_event(ConnectionEventKind kind, const Error& error = Error(),
                    std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  SubmissionQueue::Pushed refuse(PendingCommand& command, bool fail_fast);

 public:
  /// Why submit() refuses a command named `name` now: closed, or down under failFast.
  Error refusal_of(std::string_view name) const;

 private:
  // lifecycle (connection_machine.cpp)
  void connect_attempt();
  void begin_handshake();
  void write_handshake(std::string bytes);
  bool on_handshake_reply(NodeSpan reply);
  void wait_for_loading();
  void probe_loading();
  void attempt_failed(Error error, bool for_good = false);
  void schedule_reconnect();
  void become_ready();
  /// `backoff`: false when the caller connects again at once (a retarget), so that no
  /// backoff is scheduled and announced for an attempt that does not wait for it.
  void connection_broken(const Error& cause, bool backoff = true);
  /// Runs start()'s first result with success if it waits for a replica's first probe.
  void report_connected();
  void run_down_hook(bool retargeted);
  /// Keeps `error`'s message for last_failure().
  void note_failure(const Error& error);
  void close_socket();
  void fail_queued(const Error& error, errc code, std::string_view why);

  // data path (connection_flow.cpp)
  bool on_reply(NodeSpan reply);
  /// on_reply() past the error replies it explains: to the command in flight, observed.
  bool deliver_reply(NodeSpan reply);
  /// What a READONLY reply does not say: the lone endpoint listed is a replica (whose
  /// primary) — "" when that is not the case.
  std::string write_refused_hint(std::string_view reply) const;
  void on_push(NodeSpan push);
  void write_more();
  void absorb_inline_writes();
  /// `written`: when the write carrying them started; time_point{}: their callers wrote them.
  void enter_pipeline(std::span<const PendingCommand> commands, Clock::time_point written);
  // observation (connection_observe.cpp): histograms and hooks, only when watched
  void observe_reply(const PendingCommand& command, Clock::time_point written, NodeSpan reply,
                     std::size_t reply_bytes);
  /// `written`: how much of the stream had reached the socket (0 for a command still queued,
  /// whose offsets are not stream offsets yet); the event counts its bytes among them.
  /// `written_at`: when the write carrying it started (time_point{}: its caller wrote it).
  void observe_failure(const PendingCommand& command, CommandOutcome outcome, const Error& error,
                       std::size_t written, Clock::time_point written_at);
  /// `at`: when the write started.
  void observe_write(std::size_t commands, std::size_t bytes, bool from_caller,
                     Clock::time_point at);
  void log(LogLevel level, std::string_view message) noexcept;
  void settle_broken(std::vector<PendingCommand>& in_flight, const Error& cause);
  void arm_deadline(Clock::time_point at);
  void on_deadline(const SocketFacts& facts);
  void on_health_tick();
  void probe_role();
  /// A -REDIRECT answered the oldest command: true when it was handed to the redirect hook
  /// or failed with redirect_not_followed(); false leaves the reply to the pipeline. A
  /// -MASTERDOWN to a PreferReplica read: true when the hook sent it elsewhere, else false.
  bool follow_redirect(std::string_view reply);
  /// A Sentinel's "unknown command" (at_sentinel_): the oldest command fails with
  /// refused_by_sentinel(); false when the reply is another or not a caller's.
  bool explain_sentinel_refusal(std::string_view reply);
  /// The oldest command in flight, a caller's, leaves the pipeline and fails with `error`
  /// in place of its reply.
  void fail_oldest(const Error& error);
  void submit_own(OwnCommand command);
  // credentials (credentials.cpp)
  /// The credentials for the next handshake: user= and password=, or the provider's answer
  /// (then false when it threw: the attempt has failed).
  bool credentials_for_handshake(Credentials& out);
  /// config_.credentials(), timed into provider_took_; slow (kSlowProvider and more) is
  /// logged. Throws what the provider throws.
  Credentials ask_provider();
  /// How long the provider took for this attempt's handshake when that was slow, for its
  /// timeout error; zero otherwise.
  std::chrono::milliseconds slow_provider_took() const;
  void note_credentials(const Credentials& credentials);
  Clock::time_point renewal_time(const Credentials& credentials) const;
  /// On a health tick, when the credentials are due for renewal.
  void renew_credentials();
  Error timeout_error_of(const PendingCommand& command, bool in_flight,
                         const SocketFacts& facts) const;
  void release(std::vector<PendingCommand>& commands);

  std::shared_ptr<SharedContext> shared_;
  const Config& config_;
  const bool tls_;
  /// Written on the I/O thread only, under endpoint_mutex_; the I/O thread reads them
  /// without it, other threads through endpoint(), describe_endpoint() and last_failure().
  Endpoint endpoint_;
  std::string endpoint_text_;
  std::string last_failure_;  ///< the last attempt's or break's message, for other threads
  mutable std::mutex endpoint_mutex_;

  Phase phase_ = Phase::Idle;
  std::atomic<Phase> shown_phase_{Phase::Idle};  ///< phase_, for attempt_text() on any thread
  /// What other threads see of phase_ (set_phase()); ahead of it during a break, which
  /// publishes Reconnecting before it reports anything (connection_broken()).
  std::atomic<ConnectionState> state_{ConnectionState::Idle};
  /// Bumps on every new socket and every break; stale completions and actions check it.
  /// Atomic: an inline write (on a caller thread) reads it too.
  std::atomic<std::uint64_t> generation_{0};
  bool carry_over_ = true;
  ConnectionPurpose purpose_ = ConnectionPurpose::Interactive;  ///< set_purpose()

  SubmissionQueue queue_;
  Writer writer_;
  Reader reader_;
  Pipeline pipeline_;
  Pipeline::SlotRelease release_slot_;  ///< built once: no std::function per reply
  Pipeline::ErrorReport report_error_;
  std::unique_ptr<Handshake> handshake_;
  std::string handshake_out_;  ///< handshake bytes for the pending WriteHandshake
  int loading_probes_ = 0;
  /// The credential provider (credentials.cpp). When to renew (max: never); shared with the AUTH in
  /// flight, whose reply sets it (the renewed credentials' time when accepted, never again when
  /// refused). I/O thread only.
  struct Renewal {
    Clock::time_point at = Clock::time_point::max();
  };
  std::shared_ptr<Renewal> renewal_ = std::make_shared<Renewal>();
  /// The renewed credentials a replaced RESP2 subscriber connection authenticates with, and
  /// the arguments of the AUTH in place (kept until the runner has queued it).
  std::optional<Credentials> renewed_;
  /// How long the provider took when last asked (zero when it was not asked for this
  /// attempt's handshake).
  Clock::duration provider_took_{0};
  /// When this attempt's connectTimeout runs out (the Connect timer's expiry).
  Clock::time_point attempt_deadline_ = Clock::time_point::max();
  /// The CLIENT TRACKING refusal last logged, so a reconnect to the same one is quiet.
  std::string refusal_logged_;
  /// The server says it is a Sentinel, and this connection is not a Sentinel monitor's.
  bool at_sentinel_ = false;
  bool sentinel_logged_ = false;
  std::vector<std::string> auth_words_;
  std::vector<Arg> auth_args_;
  Health health_;
  Attempts attempts_;
  std::shared_ptr<ServerProfile> server_;
  std::shared_ptr<ClientCache> cache_;  ///< clientCache=true; shared with the cache's fills
  FirstResult first_result_;
  bool first_waits_for_probe_ = false;  ///< ready, first_result_ waits for INFO replication
  PushHandler push_handler_;
  Hook ready_hook_;
  Hook role_hook_;     ///< reports the change (an event, a log line), then runs the hook
  Hook role_routing_;  ///< set_role_hook()'s hook alone
  /// Retargeted (Sentinel): the next handshake's role is the new server's first, not a
  /// change of role, so it is routed on but not reported.
  bool role_unknown_ = false;
  DownHook down_hook_;
  RedirectHook redirect_hook_;
  std::atomic<bool> redirects_{false};
  Clock::time_point timer_at_ = Clock::time_point::max();  ///< the deadline timer's time
  Observer& observer_;
  LatencyPair* endpoint_latency_ = nullptr;   ///< latencyHistograms: this endpoint's (I/O thread)
  const char* last_name_ = nullptr;           ///< the last command name observed, and its
  LatencyPair* last_name_latency_ = nullptr;  ///< histograms (I/O thread)
  std::atomic<Clock::rep> last_read_{0};      ///< for status(), from any thread
  SpacedLog timeout_log_;                     ///< I/O thread

  // per event
  Clock::time_point now_{};
  std::vector<IoAction> actions_;
  std::vector<OwnCommand> own_commands_;
  // scratch, kept for their capacity
  int handshake_database_ = 0;  ///< the database the last handshake left the connection on
  std::vector<PendingCommand> broken_;
  std::vector<Clock::time_point> broken_written_;  ///< when each of broken_ was written (observed)
  std::vector<PendingCommand> handoff_;
  std::vector<PendingCommand> expired_;
  std::vector<SubmissionQueue::Resend> resends_;
  std::vector<PendingCommand> leaving_;
  std::string inline_unsent_;
};

}  // namespace redmux::detail
