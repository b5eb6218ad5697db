// Connection: one physical connection to one server, driven by Asio on one I/O thread.
// It owns the socket, the reader (read buffer + RESP parser), the writer (submission queue →
// one write), the in-flight pipeline, the deadline timer, the handshake and reconnects.
//
// Threads: submit(), submit_batch(), start(), shutdown() and the snapshot accessors are safe
// from any thread; everything else runs on the connection's io_context and touches its state
// only there. Asio handlers hold a shared_ptr to the connection, so it lives as long as any
// operation on it is pending.
#pragma once

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conn/handshake.hpp"
#include "conn/pending_command.hpp"
#include "conn/pipeline.hpp"
#include "conn/shared_context.hpp"
#include "conn/submission_queue.hpp"
#include "net/handler_arena.hpp"
#include "net/transport.hpp"
#include "redmux/events.hpp"
#include "redmux/io_pool.hpp"
#include "redmux/server_info.hpp"
#include "resp/parser.hpp"
#include "topology/replication.hpp"

namespace redmux::detail {

enum class ConnectionState : std::uint8_t {
  Idle,
  Connecting,
  Handshaking,
  Ready,
  Reconnecting,
  Closed
};
std::string_view to_string(ConnectionState state) noexcept;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using FirstResult = std::function<void(const Error&)>;
  /// Gets each out-of-band frame (a RESP3 push; in subscriber mode also a RESP2 pub/sub
  /// array), on the I/O thread. The span is valid only during the call.
  using PushHandler = std::function<void(NodeSpan)>;
  /// Runs on the I/O thread each time the connection becomes ready (first connect and every
  /// reconnect), after the handshake and before anything queued is written.
  using ReadyHook = std::function<void(Connection&)>;

  /// `tls`: the multiplexer's TLS settings when ssl=true (null: plain connections).
  Connection(asio::io_context& io, std::shared_ptr<IoPool::Load> load,
             std::shared_ptr<SharedContext> shared, Endpoint endpoint,
             std::shared_ptr<TlsContext> tls = nullptr);
  ~Connection();

  /// Starts connecting. `first` is called once (on the I/O thread) with the outcome of the
  /// first attempt series: ok, or the error of the last attempt after connectRetry retries.
  /// Later breaks reconnect in the background regardless.
  void start(FirstResult first);

  /// Queues one command (any thread). REQUIRES: `command.counted` slots already acquired.
  void submit(int db, std::span<const Arg> args, PendingCommand command);
  /// Queues a batch contiguously (any thread).
  void submit_batch(int db, std::string_view bytes, std::span<PendingCommand> commands);
  /// Closes the connection and fails every command (any thread). `closed`, if given, runs on
  /// the I/O thread once that is done.
  void shutdown(std::function<void()> closed = nullptr);

  /// false: commands queued or in flight when the connection breaks are never carried over
  /// to the next connection (no resend, no backlog): for leased dedicated connections, whose
  /// commands depend on the session (WATCH). Call before start().
  void set_carry_over(bool carry_over) noexcept { carry_over_ = carry_over; }
  /// Where push frames go (pub/sub messages and confirmations); without one they are counted
  /// and dropped. Call before start().
  void set_push_handler(PushHandler handler) { push_handler_ = std::move(handler); }
  /// Call before start(). The pub/sub layer re-subscribes from here in one write.
  void set_ready_hook(ReadyHook hook) { ready_hook_ = std::move(hook); }
  /// Call before start(). Runs on the I/O thread when the server's role changed (replica ↔
  /// primary): seen by a ROLE probe, or by the handshake of a new connection.
  void set_role_hook(ReadyHook hook) { role_hook_ = std::move(hook); }
  /// Runs on the I/O thread when the connection is not connected and commands queued on it
  /// would wait for it: after retarget() (`retargeted` true) and after each failed attempt
  /// to connect. The multiplexer takes out those that may run elsewhere (take_queued()).
  using DownHook = std::function<void(Connection&, bool retargeted)>;
  /// Call before start().
  void set_down_hook(DownHook hook) { down_hook_ = std::move(hook); }
  /// I/O thread, while not ready: removes the callers' commands queued and not yet written
  /// (Caller and FireAndForget), in order, with their encoded bytes (offsets into `bytes`;
  /// each command's `db` is the database it runs against). Commands already completed (timed
  /// out) are released here; redmux's own commands stay queued.
  void take_queued(std::string& bytes, std::vector<PendingCommand>& commands);
  /// Asks the server its role now, from any thread; routing follows the answer. With
  /// replicaHealthCheck (the default) it asks INFO replication, which also says whether a
  /// replica is in sync; otherwise (or when the server refuses INFO) ROLE.
  void check_role();
  /// Points the connection at another server (any thread; Sentinel follows a failover with
  /// it). Runs on the I/O thread: a ready connection is broken the normal way (queued
  /// commands carry over, those in flight are resent or fail as not sent / outcome unknown);
  /// an attempt in progress or a wait to reconnect is cut short. Either way the next attempt
  /// goes to `endpoint` at once. No-op when closed or already there; before start(), only
  /// changes where start() connects.
  void retarget(Endpoint endpoint);
  /// A connection that holds subscriptions: under RESP2 an array whose first element is
  /// message, pmessage, smessage or a (un)subscribe confirmation is a push, not a reply.
  /// Call before start().
  void set_subscriber_mode(bool on) noexcept { subscriber_mode_ = on; }

  ConnectionState state() const noexcept { return state_.load(std::memory_order_acquire); }
  /// Changes with every connection attempt and every break, never while one session is
  /// ready. A ready hook records it to tell "ready, and my hook ran" from "ready again, and
  /// my hook has not run yet" (the state turns Ready just before the hook runs).
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  /// True when the server said (HELLO role, ROLE, INFO) it is a replica; also from retarget()
  /// until the new server's handshake, which is not known to be a primary before it answers.
  bool is_replica() const noexcept { return is_replica_.load(std::memory_order_acquire); }
  /// For a replica: what its last INFO replication said about serving reads
  /// (topology/replication.hpp); InSync when the check is off or refused, Unfit from its
  /// handshake until the first answer.
  ReplicaHealth replica_health() const noexcept { return health_.load(std::memory_order_acquire); }
  /// Why a replica is not in sync ("" when it is), from its last INFO replication.
  std::string replication_state() const {
    std::lock_guard lock(identity_mutex_);
    return replication_state_;
  }
  /// Logical databases the server has (0: unknown until connected, or not disclosed).
  int databases() const noexcept { return databases_.load(std::memory_order_acquire); }
  ServerIdentity identity() const;
  /// The server it connects to (a copy: retarget() may change it meanwhile).
  Endpoint endpoint() const {
    std::lock_guard lock(endpoint_mutex_);
    return endpoint_;
  }
  std::string describe_endpoint() const {
    std::lock_guard lock(endpoint_mutex_);
    return endpoint_text_;
  }
  /// Why the last connection attempt failed, or why the last session broke; empty when
  /// neither happened yet. Kept while ready again: status shows it only when not ready.
  std::string last_failure() const {
    std::lock_guard lock(endpoint_mutex_);
    return last_failure_;
  }
  /// Commands queued and not yet written; commands written and awaiting replies (snapshots).
  std::size_t queued_count() const { return queue_.snapshot().commands; }
  std::size_t in_flight_count() const noexcept { return queue_.in_flight(); }

 private:
  // --- connecting (I/O thread) ---
  void connect_attempt();
  void on_connected(const asio::error_code& ec);
  void begin_tls_handshake();
  void begin_handshake();
  void attempt_failed(Error error);
  void become_ready();
  void connection_broken(const Error& cause);
  void schedule_reconnect();
  /// After a break: resends what may be resent (never written; or written and marked
  /// retryable, once), fails the rest. Queue policy only.
  void resend_or_fail(std::vector<PendingCommand>& in_flight, const Error& cause);
  void emit(ConnectionEventKind kind, const Error& error = Error(),
            std::chrono::milliseconds delay = std::chrono::milliseconds(0));

  void arm_connect_timeout();
  void wait_for_loading();
  void probe_role();
  /// What ROLE or INFO said ("master", "slave" …), on the I/O thread.
  void note_role(std::string_view role);
  /// The text of an INFO replication reply (or the error that refused it), on the I/O thread.
  void note_replication(NodeSpan reply);
  /// Runs start()'s `first` with success if it still waits and the connection was ready.
  void report_connected();

  // --- health (I/O thread) ---
  void arm_health_timer();
  void on_health_tick();

  // --- writing ---
  void wake();
  void write_more();
  /// Commands a write waits for before it leaves (0: write at once).
  std::size_t coalescing_threshold() const;
  void write_raw(std::string bytes);
  /// A caller writes its command itself when the connection is ready and idle (any thread).
  void write_inline();
  /// Has the I/O thread arm its deadline timer for `deadline` (any thread).
  void rearm_for(Clock::time_point deadline);
  /// I/O thread: what an inline write could not finish (socket full), written the Asio way.
  void finish_inline_write(std::string rest);
  /// I/O thread: moves commands written inline into the pipeline (before any reply is read).
  void absorb_inline_writes();
  void close_socket();
  void on_written(const asio::error_code& ec, std::size_t bytes);

  // --- reading ---
  void read_more();
  void on_read(const asio::error_code& ec, std::size_t bytes);
  bool on_reply(NodeSpan reply);

  // --- deadlines ---
  void arm_timer(Clock::time_point at);
  void on_timer(const asio::error_code& ec);
  Error timeout_error(const PendingCommand& command, Clock::time_point now, bool in_flight) const;
  Error broken_error(const PendingCommand& command, const Error& cause) const;
  void release(std::vector<PendingCommand>& commands);
  void fail_queued(const Error& error, errc code, std::string_view why);

  asio::io_context& io_;
  std::shared_ptr<IoPool::Load> load_;  ///< outlives the pool: handlers may run after it
  std::shared_ptr<SharedContext> shared_;
  const Config& config_;
  /// Written on the I/O thread only (retarget()), under endpoint_mutex_; the I/O thread reads
  /// them without it, other threads through endpoint() and describe_endpoint().
  Endpoint endpoint_;
  std::string endpoint_text_;
  std::string last_failure_;  ///< last_attempt_error_'s message, for other threads
  mutable std::mutex endpoint_mutex_;

  Transport transport_;  ///< the socket, or TLS over it
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer deadline_timer_;
  asio::steady_timer connect_timer_;
  asio::steady_timer health_timer_;
  Clock::time_point timer_at_ = Clock::time_point::max();

  std::atomic<ConnectionState> state_{ConnectionState::Idle};
  std::atomic<bool> is_replica_{false};
  std::atomic<ReplicaHealth> health_{ReplicaHealth::InSync};
  bool info_refused_ = false;  ///< the server refused INFO (an ACL): role from ROLE, trusted
  std::atomic<int> databases_{0};
  SubmissionQueue queue_;
  Pipeline pipeline_;
  Pipeline::SlotRelease release_slot_;  ///< built once: no std::function per reply
  Pipeline::ErrorReport report_error_;
  std::unique_ptr<Handshake> handshake_;
  FirstResult first_result_;
  int attempts_ = 0;  ///< failed attempts in the current series
  Error last_attempt_error_;
  std::string attempt_log_;  ///< why each attempt of the first series failed (connect error)
  bool ever_ready_ = false;
  bool carry_over_ = true;
  bool subscriber_mode_ = false;
  PushHandler push_handler_;
  ReadyHook ready_hook_;
  ReadyHook role_hook_;
  DownHook down_hook_;

  // writer
  bool writing_ = false;
  // write_more() left commands queued for the next replies (coalescing_threshold()).
  bool holding_for_replies_ = false;
  std::size_t released_waiters_ = 0;  ///< blocked callers released since the last write
  std::string write_buffer_;
  std::uint64_t write_buffer_begin_ = 0;  ///< stream offset of write_buffer_[0]
  std::vector<PendingCommand> broken_scratch_;
  std::vector<PendingCommand> batch_;
  std::vector<PendingCommand> dropped_;
  /// Bytes of callers' commands the socket confirmed written since the connection became
  /// ready (by the I/O thread or by an inline write); command offsets count the same stream.
  std::atomic<std::uint64_t> stream_written_{0};
  std::uint64_t stream_taken_ = 0;  ///< I/O thread's copy: bytes taken for writing
  std::mutex socket_mutex_;         ///< held by an inline write while it sends; by closers to close
  /// Bytes an inline write could not send (socket full, failed or closed), with the stream
  /// offset of their first byte; guarded by socket_mutex_. Lets a break resend them.
  std::string inline_unsent_;
  std::uint64_t inline_unsent_begin_ = 0;
  std::vector<PendingCommand> handoff_scratch_;

  // reader
  resp::Parser parser_;
  std::vector<char> read_buffer_;
  std::size_t read_begin_ = 0;
  std::size_t read_end_ = 0;

  // health (I/O thread)
  Clock::time_point awaiting_since_{};  ///< when the pipeline last went from empty to busy
  Clock::time_point heartbeat_sent_{};  ///< when the last idle PING was queued
  bool overdue_ = false;
  int loading_probes_ = 0;
  Clock::time_point last_role_check_{};
  bool role_probe_pending_ = false;  ///< a command in flight timed out and nothing was read since
  /// Moves commands about to be written (or written inline) into the pipeline.
  void pipeline_push(std::span<const PendingCommand> commands);

  // diagnostics (written on the I/O thread, read by timeout_error on it too)
  Clock::time_point last_read_{};
  std::atomic<Clock::rep> last_write_{0};  ///< written by inline writes too
  mutable std::mutex identity_mutex_;
  ServerIdentity identity_;
  std::string replication_state_;  ///< guarded by identity_mutex_
  /// Bumps on every new socket; stale handlers check it. Atomic: an inline write (on a
  /// caller thread) reads it too.
  std::atomic<std::uint64_t> generation_{0};
  // Memory for the one outstanding operation of each kind (see handler_arena.hpp).
  HandlerArena wake_arena_;
  HandlerArena write_arena_;
  HandlerArena read_arena_;  ///< bumps on every new socket; stale handlers check it
};

}  // namespace redmux::detail
