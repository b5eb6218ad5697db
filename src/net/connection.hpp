// Connection: one physical connection to one server. Its rules live in a sans-IO
// ConnectionMachine (conn/connection_machine.hpp); this is the thin runner that feeds it
// from Asio on one I/O thread. It owns the transport (socket, or TLS over it), the resolver
// and three timers, performs the actions each event of the machine returns, and hands every
// completion back to it with the time.
//
// Threads: submit(), submit_batch(), start(), shutdown(), retarget(), check_role() and the
// snapshot accessors are safe from any thread; everything else runs on the connection's
// io_context. Asio handlers hold a shared_ptr to the connection, so it lives as long as any
// operation on it is pending; a completion for an earlier generation (socket) is dropped.
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conn/connection_machine.hpp"
#include "conn/pending_command.hpp"
#include "conn/shared_context.hpp"
#include "net/handler_arena.hpp"
#include "net/transport.hpp"
#include "redmux/io_pool.hpp"
#include "redmux/server_info.hpp"

namespace redmux::detail {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using FirstResult = ConnectionMachine::FirstResult;
  /// Gets each out-of-band frame (a RESP3 push; in subscriber mode also a RESP2 pub/sub
  /// array), on the I/O thread. The span is valid only during the call.
  using PushHandler = ConnectionMachine::PushHandler;
  /// Runs on the I/O thread each time the connection becomes ready (first connect and every
  /// reconnect), after the handshake and before anything queued is written.
  using ReadyHook = std::function<void(Connection&)>;
  /// Redis Cluster: gets commands a push refused with SubmissionQueue::Pushed::Forward (their
  /// slot moved to another node), with their bytes, on the submitting thread. It must queue
  /// or fail every one of them (each holds its reference and its slot).
  using ForwardHook =
      std::function<void(int db, std::string_view bytes, std::span<PendingCommand> commands)>;

  /// `tls`: the multiplexer's TLS settings when ssl=true (null: plain connections).
  Connection(asio::io_context& io, std::shared_ptr<IoPool::Load> load,
             std::shared_ptr<SharedContext> shared, Endpoint endpoint,
             std::shared_ptr<TlsContext> tls = nullptr);
  ~Connection() = default;

  /// Starts connecting. `first` is called once (on the I/O thread) with the outcome of the
  /// first attempt series: ok, or the error of the last attempt after connectRetry retries.
  /// Later breaks reconnect in the background regardless.
  void start(FirstResult first);

  /// Queues one command (any thread). REQUIRES: `command.counted` slots already acquired.
  /// False when it was refused (the connection is closed, or down under failFast): a
  /// caller's future has failed with the reason, which refusal_of() gives for a
  /// fire-and-forget command (its caller's future fails with it).
  bool submit(int db, std::span<const Arg> args, PendingCommand command);
  /// Why a command named `name` is refused now (see submit()).
  Error refusal_of(std::string_view name) const { return machine_.refusal_of(name); }
  /// Queues a batch contiguously (any thread). With `fail_fast` (a caller's Batch) refused
  /// while the connection is not ready under failFast, as submit() is. False when refused
  /// (each command's future holds why; refusal_of() says it for the whole).
  bool submit_batch(int db, std::string_view bytes, std::span<PendingCommand> commands,
                    bool fail_fast = false);
  /// Queues a caller's command that another server refused without running it (-REDIRECT,
  /// -MASTERDOWN), from the bytes its state kept (PendingCommand::keep_for_redirect); the
  /// queued copy takes over its reference and its queue slot (any thread).
  void send_on(const PendingCommand& refused);
  /// Under backlogPolicy=failFast, whether commands are refused now (not ready).
  bool fails_fast() const noexcept { return machine_.fails_fast(); }
  /// From the ready hook only (its I/O thread, before the session's first write): `commands`
  /// go out ahead of the backlog held while the connection was down.
  void submit_first(std::string_view bytes, std::span<PendingCommand> commands) {
    machine_.submit_first(bytes, commands);
  }
  /// Closes the connection and fails every command (any thread). `closed`, if given, runs on
  /// the I/O thread once that is done.
  void shutdown(std::function<void()> closed = nullptr);

  /// false: commands queued or in flight when the connection breaks are never carried over
  /// to the next connection (no resend, no backlog): for leased dedicated connections, whose
  /// commands depend on the session (WATCH). Call before start().
  void set_carry_over(bool carry_over) noexcept { machine_.set_carry_over(carry_over); }
  /// Where push frames go (pub/sub messages and confirmations); without one they are counted
  /// and dropped. Call before start().
  void set_push_handler(PushHandler handler) { machine_.set_push_handler(std::move(handler)); }
  /// Call before start(): see ConnectionMachine::enable_client_cache().
  void enable_client_cache() { machine_.enable_client_cache(); }
  /// The client-side cache (null unless enabled); see ClientCache for its threads.
  const std::shared_ptr<ClientCache>& cache() const noexcept { return machine_.cache(); }
  /// Call before start(). The pub/sub layer re-subscribes from here in one write.
  void set_ready_hook(ReadyHook hook) { ready_hook_ = std::move(hook); }
  /// Call before start(). Runs on the I/O thread when the server's role changed (replica ↔
  /// primary): seen by a ROLE probe, or by the handshake of a new connection.
  void set_role_hook(ReadyHook hook) { role_hook_ = std::move(hook); }
  /// Before start(): which of the multiplexer's servers a replica's primary is.
  void set_locator(ServerProfile::Locator locate) { machine_.set_locator(std::move(locate)); }
  /// Call before start() (Redis Cluster node connections).
  void set_forward_hook(ForwardHook hook) { forward_hook_ = std::move(hook); }
  /// Call before start(): see ConnectionMachine::set_redirect_hook() (a primary and replicas).
  void set_redirect_hook(ConnectionMachine::RedirectHook hook) {
    machine_.set_redirect_hook(std::move(hook));
  }
  /// Any thread: the current session announced CLIENT CAPA redirect (writes keep their bytes).
  bool redirects() const noexcept { return machine_.redirects(); }
  /// Redis Cluster, any thread: see SubmissionQueue::reroute().
  void reroute(std::shared_ptr<const SlotSet> elsewhere, std::string& bytes,
               std::vector<PendingCommand>& moved) {
    machine_.reroute(std::move(elsewhere), bytes, moved);
  }
  /// Runs `task` on this connection's I/O thread, after what is already queued there (any
  /// thread): where its commands complete, one at a time. A task still queued when the I/O
  /// threads stop is destroyed without running.
  void post(std::function<void()> task);
  /// Any thread: a connection waiting to reconnect tries now instead of after its backoff
  /// (the cluster announced the node again). No-op in every other state.
  void reconnect_now();
  /// Runs on the I/O thread when the connection is not connected and commands queued on it
  /// would wait for it: after retarget() (`retargeted` true) and after each failed attempt
  /// to connect. The multiplexer takes out those that may run elsewhere (take_queued()).
  using DownHook = std::function<void(Connection&, bool retargeted)>;
  /// Call before start().
  void set_down_hook(DownHook hook) { down_hook_ = std::move(hook); }
  /// I/O thread, from the down hook: the callers' commands queued and not yet written, in
  /// order, with their bytes (ConnectionMachine::take_queued()).
  void take_queued(std::string& bytes, std::vector<PendingCommand>& commands) {
    machine_.take_queued(bytes, commands);
  }
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
  void set_subscriber_mode(bool on) noexcept { machine_.set_subscriber_mode(on); }
  /// What it is for, named in its connection events and log records. REQUIRES: before
  /// start(). Interactive unless set.
  void set_purpose(ConnectionPurpose purpose) noexcept { machine_.set_purpose(purpose); }

  ConnectionState state() const noexcept { return machine_.state(); }
  /// Changes with every connection attempt and every break, never while one session is
  /// ready. A ready hook records it to tell "ready, and my hook ran" from "ready again, and
  /// my hook has not run yet" (the state turns Ready just before the hook runs).
  std::uint64_t generation() const noexcept { return machine_.generation(); }
  /// True when the server said (HELLO role, ROLE, INFO) it is a replica; also from retarget()
  /// until the new server's handshake, which is not known to be a primary before it answers.
  bool is_replica() const noexcept { return machine_.server().is_replica(); }
  /// ServerProfile::refuses_stale_reads().
  bool refuses_stale_reads() const noexcept { return machine_.server().refuses_stale_reads(); }
  /// Its server reports the client's availability zone (availabilityZone=).
  bool in_zone() const noexcept { return machine_.server().in_zone(); }
  /// For a replica: what its last INFO replication said about serving reads
  /// (conn/replication.hpp); InSync when the check is off or refused, Unfit from its
  /// handshake until the first answer.
  ReplicaHealth replica_health() const noexcept { return machine_.server().health(); }
  /// A replica's primary: which server of the multiplexer (ServerProfile::kNoServer: none
  /// or unknown), and as INFO named it.
  std::size_t follows() const noexcept { return machine_.server().follows(); }
  std::string master() const { return machine_.server().master(); }
  /// Why a replica is not in sync ("" when it is), from its last INFO replication.
  std::string replication_state() const { return machine_.server().replication_state(); }
  /// Logical databases the server has (0: unknown until connected, or not disclosed).
  int databases() const noexcept { return machine_.server().databases(); }
  /// What the server answered the handshake's SELECT (identity().select_refusal: how it
  /// refused); Unknown before a handshake.
  ServerProfile::SelectAnswer select_answer() const noexcept {
    return machine_.server().select_answer();
  }
  ServerIdentity identity() const { return machine_.server().identity(); }
  /// The server it connects to (a copy: retarget() may change it meanwhile).
  Endpoint endpoint() const { return machine_.endpoint(); }
  std::string describe_endpoint() const { return machine_.describe_endpoint(); }
  /// Why the last connection attempt failed, or why the last session broke; empty when
  /// neither happened yet. Kept while ready again: status shows it only when not ready.
  std::string last_failure() const { return machine_.last_failure(); }
  /// Where the current attempt is (any thread): see ConnectionMachine::attempt_text().
  std::string attempt_text() const { return machine_.attempt_text(); }
  /// Commands queued and not yet written; commands written and awaiting replies (snapshots).
  std::size_t queued_count() const { return machine_.queued_count(); }
  std::size_t in_flight_count() const noexcept { return machine_.in_flight_count(); }
  /// For status() (any thread): see ConnectionMachine::tally().
  using Tally = ConnectionMachine::Tally;
  Tally tally() const { return machine_.tally(); }
  /// For status() (any thread): see ConnectionMachine::activity().
  ConnectionMachine::Activity activity() const noexcept { return machine_.activity(); }

 private:
  /// Does what the machine asked, in order, dropping what a newer generation made stale.
  void perform(ConnectionMachine::Actions actions);
  void connect(std::uint64_t generation);
  void connected(const asio::error_code& ec);
  void start_tls(std::uint64_t generation);
  void write_handshake(std::uint64_t generation);
  void read(std::uint64_t generation);
  void write(std::uint64_t generation);
  void arm(IoTimer timer, Clock::time_point at, std::uint64_t generation);
  void cancel(IoTimer timer);
  /// Queues redmux's own command of a Submit action like any caller's.
  void submit_own(std::uint8_t index);
  /// A caller writes its command itself when the connection is ready and idle (any thread).
  void write_inline();
  void post_wake();
  /// A push the queue did not take: Forward (a cluster command whose slot moved) goes to
  /// forward_hook_, encoded; QueuedRearm re-arms the deadline timer. Rare: out of the way.
  [[gnu::cold, gnu::noinline]] void forward(int db, std::span<const Arg> args,
                                            const PendingCommand& refused);
  void post_rearm(Clock::time_point deadline);
  /// Connects to `endpoints` in order (a host name's addresses), noting each for the error.
  template <class Handler>
  void connect_each(const std::vector<asio::ip::tcp::endpoint>& addresses, Handler&& connected);
  SocketFacts socket_facts() const;
  /// A completion handler that runs `body(*this, args…)` on the I/O thread only while
  /// `generation` is still the machine's.
  template <class Body>
  auto current(std::uint64_t generation, Body body);

  asio::io_context& io_;
  std::shared_ptr<IoPool::Load> load_;  ///< outlives the pool: handlers may run after it
  std::shared_ptr<SharedContext> shared_;
  Transport transport_;
  asio::ip::tcp::resolver resolver_;
  std::vector<std::string> addresses_;  ///< the current attempt's, as text (several: a name)
  asio::steady_timer deadline_timer_;
  asio::steady_timer connect_timer_;
  asio::steady_timer health_timer_;
  ReadyHook ready_hook_;
  ReadyHook role_hook_;
  ForwardHook forward_hook_;
  DownHook down_hook_;
  // Memory for the one outstanding operation of each kind (see handler_arena.hpp).
  HandlerArena wake_arena_;
  HandlerArena write_arena_;
  /// Declared last, destroyed first: it fails what is still pending while the rest lives.
  ConnectionMachine machine_;
};

}  // namespace redmux::detail
