#include "net/connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio/ip/address.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <cstdio>
#include <random>

#include "net/handler_arena.hpp"
#include "net/io_load.hpp"
#include "redmux/version.hpp"

namespace redmux::detail {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;       // read buffer size at rest
constexpr std::size_t kMinFreeForRead = 16 * 1024;  // below this free space, compact or grow
constexpr std::size_t kShrinkAbove = 1024 * 1024;   // give back a buffer grown past this
// Coalescing under load: with at least this many commands awaiting replies, a write of fewer
// than kCoalesceBatch (or a quarter of those awaited) new commands waits for the next replies.
constexpr std::size_t kCoalesceInFlight = 16;
constexpr std::size_t kCoalesceBatch = 64;
// Blocked callers released by the replies since the last write, from which the I/O thread
// lets them run before it writes (see write_more()).
constexpr std::size_t kYieldForReleased = 4;

long long ms_since(Clock::time_point then, Clock::time_point now) {
  if (then == Clock::time_point{}) return -1;
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count();
}

std::string ago(Clock::time_point then, Clock::time_point now) {
  const long long ms = ms_since(then, now);
  return ms < 0 ? std::string("never") : std::to_string(ms) + " ms ago";
}

/// RESP2 has no push type: on a subscribed connection, messages and (un)subscribe
/// confirmations are arrays of at least 3 elements led by their kind.
bool is_resp2_pubsub(NodeSpan reply) noexcept {
  if (reply.size() < 4 || reply[0].type != ReplyType::Array || reply[0].size < 3) return false;
  const Node& kind = reply[1];
  if (kind.type != ReplyType::BulkString) return false;
  for (std::string_view known : {"message", "pmessage", "smessage", "subscribe", "psubscribe",
                                 "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"}) {
    if (kind.value == known) return true;
  }
  return false;
}

/// While alive, an I/O thread named "redmux-io-N" is named "redmux-dns-N" (a thread it
/// starts meanwhile inherits that name).
class ResolverThreadName {
 public:
  ResolverThreadName() noexcept {
    char name[16] = {};
    if (::pthread_getname_np(::pthread_self(), name, sizeof name) != 0) return;
    const std::string_view current(name);
    if (!current.starts_with("redmux-io-")) return;  // a user's thread (IoPool::wrap)
    std::memcpy(saved_, name, sizeof saved_);
    // "redmux-dns-" and the I/O thread's number: at most 15 characters, as thread names are.
    const std::string renamed = ("redmux-dns-" + std::string(current.substr(10))).substr(0, 15);
    renamed_ = ::pthread_setname_np(::pthread_self(), renamed.c_str()) == 0;
  }
  ~ResolverThreadName() {
    if (renamed_) ::pthread_setname_np(::pthread_self(), saved_);
  }
  ResolverThreadName(const ResolverThreadName&) = delete;
  ResolverThreadName& operator=(const ResolverThreadName&) = delete;

 private:
  char saved_[16] = {};
  bool renamed_ = false;
};

}  // namespace

std::string_view to_string(ConnectionState state) noexcept {
  switch (state) {
    case ConnectionState::Idle:
      return "idle";
    case ConnectionState::Connecting:
      return "connecting";
    case ConnectionState::Handshaking:
      return "handshaking";
    case ConnectionState::Ready:
      return "ready";
    case ConnectionState::Reconnecting:
      return "reconnecting";
    case ConnectionState::Closed:
      return "closed";
  }
  return "?";
}

Connection::Connection(asio::io_context& io, std::shared_ptr<IoPool::Load> load,
                       std::shared_ptr<SharedContext> shared, Endpoint endpoint,
                       std::shared_ptr<TlsContext> tls)
    : io_(io),
      load_(std::move(load)),
      shared_(std::move(shared)),
      config_(shared_->config()),
      endpoint_(std::move(endpoint)),
      endpoint_text_(endpoint_.to_string()),
      transport_(io, std::move(tls)),
      resolver_(io),
      deadline_timer_(io),
      connect_timer_(io),
      health_timer_(io),
      queue_(config_.default_database) {
  read_buffer_.resize(kReadChunk);
  release_slot_ = [shared = shared_.get()] { shared->release_slots(1); };
  report_error_ = [this](std::string_view name, NodeSpan error_reply) {
    // Error replies nobody waits for: fire-and-forget commands, redmux's SELECT, and refused
    // SUBSCRIBE-family commands (whose confirmations fail as well).
    if (name != "SELECT" && !name.ends_with("SUBSCRIBE")) {
      shared_->counters().fire_and_forget_errors.fetch_add(1, std::memory_order_relaxed);
    }
    shared_->report_error(server_error_from(error_reply, name));
  };
}

Connection::~Connection() {
  // Anything still held (shutdown() not called) is failed here so no future waits forever.
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

ServerIdentity Connection::identity() const {
  std::lock_guard lock(identity_mutex_);
  return identity_;
}

// ---------------------------------------------------------------------------------------
// Connecting

void Connection::start(FirstResult first) {
  asio::post(io_, [self = shared_from_this(), first = std::move(first)]() mutable {
    BusyScope busy(*self->load_);
    self->first_result_ = std::move(first);
    self->connect_attempt();
  });
}

void Connection::connect_attempt() {
  if (state() == ConnectionState::Closed) return;
  state_.store(ConnectionState::Connecting, std::memory_order_release);
  const std::uint64_t generation = ++generation_;
  close_socket();
  transport_.renew();  // a fresh TLS session: one cannot be reused after its socket closed

  arm_connect_timeout();

  if (endpoint_.is_unix()) {
    asio::local::stream_protocol::endpoint local(endpoint_.unix_path);
    transport_.async_connect({asio::generic::stream_protocol::endpoint(local)},
                             [self = shared_from_this(), generation](const asio::error_code& ec) {
                               if (generation != self->generation_) return;
                               BusyScope busy(*self->load_);
                               self->on_connected(ec);
                             });
    return;
  }
  asio::error_code not_numeric;
  const asio::ip::address address = asio::ip::make_address(endpoint_.host, not_numeric);
  if (!not_numeric) {
    // An IP address needs no resolver (and so no resolver thread).
    transport_.async_connect({asio::generic::stream_protocol::endpoint(
                                 asio::ip::tcp::endpoint(address, endpoint_.port))},
                             [self = shared_from_this(), generation](const asio::error_code& ec) {
                               if (generation != self->generation_) return;
                               BusyScope busy(*self->load_);
                               self->on_connected(ec);
                             });
    return;
  }
  // Asio runs getaddrinfo on a thread of its own per io_context, started by the first
  // resolve and named after the thread that starts it: "redmux-dns-N" beside
  // "redmux-io-N", so that a thread list tells them apart.
  ResolverThreadName naming;
  resolver_.async_resolve(
      endpoint_.host, std::to_string(endpoint_.port),
      [self = shared_from_this(), generation](const asio::error_code& ec,
                                              asio::ip::tcp::resolver::results_type results) {
        if (generation != self->generation_) return;
        BusyScope busy(*self->load_);
        if (ec) {
          self->attempt_failed(Error(errc::connection_failed, "resolving " + self->endpoint_.host +
                                                                  " failed: " + ec.message()));
          return;
        }
        std::vector<asio::generic::stream_protocol::endpoint> endpoints;
        for (const auto& entry : results) endpoints.emplace_back(entry.endpoint());
        self->transport_.async_connect(std::move(endpoints),
                                       [self, generation](const asio::error_code& ec2) {
                                         if (generation != self->generation_) return;
                                         BusyScope busy2(*self->load_);
                                         self->on_connected(ec2);
                                       });
      });
}

void Connection::arm_connect_timeout() {
  connect_timer_.expires_after(config_.connect_timeout);
  connect_timer_.async_wait(
      [self = shared_from_this(), generation = generation_.load()](const asio::error_code& ec) {
        if (ec || generation != self->generation_) return;
        BusyScope busy(*self->load_);
        if (self->state() != ConnectionState::Connecting &&
            self->state() != ConnectionState::Handshaking) {
          return;
        }
        // Handshaking before the Redis handshake began: the TLS handshake got no answer.
        const bool tls_phase = self->transport_.is_tls() && !self->handshake_ &&
                               self->state() == ConnectionState::Handshaking;
        self->attempt_failed(Error(
            errc::connection_failed,
            "connecting to " + self->endpoint_text_ + " timed out after " +
                std::to_string(self->config_.connect_timeout.count()) + " ms (" +
                (tls_phase ? std::string("TLS handshake") : std::string(to_string(self->state()))) +
                "; connectTimeout=" + std::to_string(self->config_.connect_timeout.count()) + ")" +
                (tls_phase ? "; is this the server's TLS port (tls-port)?" : "")));
      });
}

void Connection::wait_for_loading() {
  // The server answered the handshake but is loading its dataset: commands would fail with
  // -LOADING. Keep them queued (their deadlines still run) and ask again, backing off from
  // 100 ms to 1 s; each probe is bounded by connectTimeout like the handshake itself.
  connect_timer_.cancel();
  if (loading_probes_++ == 0) {
    shared_->counters().loading_waits.fetch_add(1, std::memory_order_relaxed);
  }
  const auto delay =
      std::chrono::milliseconds(std::min(1000, 100 << std::min(loading_probes_ - 1, 4)));
  health_timer_.expires_after(delay);
  health_timer_.async_wait(
      [self = shared_from_this(), generation = generation_.load()](const asio::error_code& ec) {
        if (ec || generation != self->generation_) return;
        BusyScope busy(*self->load_);
        if (self->state() != ConnectionState::Handshaking || !self->handshake_) return;
        std::string probe;
        self->handshake_->probe_loading(probe);
        self->write_raw(std::move(probe));
        self->arm_connect_timeout();
      });
}

void Connection::probe_role() {
  // A READONLY or MASTERDOWN reply: the server's role may have changed under us (a failover
  // demoted it). Ask it with ROLE (once at a time) so routing sees the truth: writes are not
  // sent to a connection known to be a replica when a primary is known. INFO replication
  // instead under replicaHealthCheck: the role, and whether a replica is in sync.
  if (role_probe_pending_) return;
  class RoleProbe final : public CommandState {
   public:
    RoleProbe(std::weak_ptr<Connection> connection, bool info)
        : connection_(std::move(connection)), info_(info) {}
    void deliver(NodeSpan reply) noexcept override {
      if (!claim()) return;
      if (auto connection = connection_.lock()) {
        connection->role_probe_pending_ = false;
        if (info_) {
          connection->note_replication(reply);
        } else if (!is_error_reply(reply) && reply.size() > 1) {
          connection->note_role(reply[1].value);
        }
      }
      publish();
    }
    void fail(Error) noexcept override {
      if (!claim()) return;
      if (auto connection = connection_.lock()) connection->role_probe_pending_ = false;
      publish();
    }

   private:
    std::weak_ptr<Connection> connection_;
    bool info_;
  };
  static constexpr std::string_view kRole = "ROLE";
  static constexpr std::string_view kInfo = "INFO";
  const bool info = config_.replica_health_check && !info_refused_;
  const Arg role[] = {Arg(kRole)};
  const Arg replication[] = {Arg(kInfo), Arg("replication")};
  PendingCommand command = own_command(info ? kInfo : kRole, PendingKind::Internal,
                                       new RoleProbe(weak_from_this(), info));  // its one reference
  role_probe_pending_ = true;
  if (info) {
    submit(-1, replication, command);
  } else {
    submit(-1, role, command);
  }
}

void Connection::note_role(std::string_view role) {
  const bool replica = role == "slave" || role == "replica";
  const bool was_replica = is_replica_.exchange(replica, std::memory_order_acq_rel);
  {
    std::lock_guard lock(identity_mutex_);
    identity_.role = replica ? "replica" : std::string(role);
  }
  if (was_replica != replica && role_hook_) role_hook_(*this);
}

void Connection::note_replication(NodeSpan reply) {
  if (reply.empty() || is_error_reply(reply)) {
    // Refused (an ACL without INFO): the role comes from ROLE from now on, and a replica is
    // trusted as before the check existed.
    info_refused_ = true;
    health_.store(ReplicaHealth::InSync, std::memory_order_release);
    {
      std::lock_guard lock(identity_mutex_);
      replication_state_.clear();
    }
    probe_role();
    report_connected();
    return;
  }
  const std::optional<ReplicationInfo> info = parse_replication_info(reply[0].value);
  if (!info) return;
  ReplicaVerdict verdict;
  if (info->role == "slave") verdict = judge_replica(*info, config_.replica_max_lag);
  {
    std::lock_guard lock(identity_mutex_);
    replication_state_ = std::move(verdict.reason);
  }
  // Before the role: a role hook that routes (a replica promoted) sees the new health.
  health_.store(verdict.health, std::memory_order_release);
  note_role(info->role);
  report_connected();
}

void Connection::report_connected() {
  if (!first_result_ || !ever_ready_) return;
  auto first = std::move(first_result_);
  first_result_ = nullptr;
  first(Error());
}

void Connection::check_role() {
  asio::post(io_, [self = shared_from_this()] {
    if (self->state() == ConnectionState::Ready) self->probe_role();
  });
}

void Connection::retarget(Endpoint endpoint) {
  asio::post(io_, [self = shared_from_this(), endpoint = std::move(endpoint)]() mutable {
    BusyScope busy(*self->load_);
    if (self->state() == ConnectionState::Closed || endpoint == self->endpoint_) return;
    if (self->state() == ConnectionState::Ready) {
      // Before the endpoint changes: the commands in flight went to the old server, and
      // broken_error() names it when it tells each caller whether its command was sent.
      self->connection_broken(
          Error(errc::disconnected, "moved to " + endpoint.to_string() + ": the primary changed"));
    }
    {
      std::lock_guard lock(self->endpoint_mutex_);
      self->endpoint_ = std::move(endpoint);
      self->endpoint_text_ = self->endpoint_.to_string();
    }
    // Another server: not known to be a primary (nor a replica in sync) until it answers.
    self->is_replica_.store(true, std::memory_order_release);
    self->health_.store(ReplicaHealth::Unfit, std::memory_order_release);
    switch (self->state()) {
      case ConnectionState::Idle:  // start() connects to the new endpoint
      case ConnectionState::Closed:
        return;
      case ConnectionState::Connecting:
      case ConnectionState::Handshaking:
      case ConnectionState::Reconnecting:
      case ConnectionState::Ready:
        break;
    }
    if (self->down_hook_) self->down_hook_(*self, /*retargeted=*/true);
    // Now, not after the reconnect backoff: the new server is expected to be up. A new
    // generation makes every handler of the attempt or wait in progress stale.
    self->connect_attempt();
  });
}

void Connection::on_connected(const asio::error_code& ec) {
  if (state() != ConnectionState::Connecting) return;
  if (ec) {
    attempt_failed(Error(errc::connection_failed,
                         "connecting to " + endpoint_text_ + " failed: " + ec.message()));
    return;
  }
  if (!endpoint_.is_unix()) {
    const int fd = transport_.native_handle();
    int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (config_.keep_alive.count() > 0) {
      // keepAlive seconds idle, then 3 probes spread over another keepAlive/2: a peer that
      // vanished without a FIN is noticed even when no command is in flight.
      ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
      int idle = static_cast<int>(config_.keep_alive.count());
      int interval = std::max(1, idle / 6);
      int probes = 3;
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    }
    // Written bytes the peer has not acknowledged for this long close the connection (the
    // kernel's own half-open detection, for when the heartbeat cannot be answered).
    unsigned user_timeout = static_cast<unsigned>(
        std::max<long long>(10000, 3 * static_cast<long long>(config_.async_timeout.count())));
    ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
  }
  if (transport_.is_tls()) {
    begin_tls_handshake();
    return;
  }
  begin_handshake();
}

void Connection::begin_tls_handshake() {
  // The connect timer (connectTimeout) still runs: it bounds the TLS handshake too.
  state_.store(ConnectionState::Handshaking, std::memory_order_release);
  std::string server_name = config_.ssl_host.empty() ? endpoint_.host : config_.ssl_host;
  transport_.async_handshake(
      server_name, [self = shared_from_this(), generation = generation_.load(),
                    server_name](const asio::error_code& ec) {
        if (generation != self->generation_) return;
        BusyScope busy(*self->load_);
        if (self->state() != ConnectionState::Handshaking) return;
        if (ec) {
          self->attempt_failed(
              Error(errc::connection_failed,
                    self->transport_.handshake_error(ec, self->endpoint_text_, server_name)));
          return;
        }
        self->begin_handshake();
      });
}

void Connection::begin_handshake() {
  state_.store(ConnectionState::Handshaking, std::memory_order_release);
  loading_probes_ = 0;
  parser_.reset();
  read_begin_ = read_end_ = 0;
  handshake_ = std::make_unique<Handshake>(config_, endpoint_text_);
  std::string bytes;
  handshake_->begin(bytes);
  write_raw(std::move(bytes));
  read_more();
}

void Connection::attempt_failed(Error error) {
  if (state() == ConnectionState::Closed) return;
  ++generation_;  // handlers of this attempt are stale from now on
  close_socket();
  resolver_.cancel();
  connect_timer_.cancel();
  handshake_.reset();
  last_attempt_error_ = std::move(error);
  {
    std::lock_guard lock(endpoint_mutex_);
    last_failure_ = last_attempt_error_.message();
  }
  ++attempts_;
  shared_->counters().connection_failures.fetch_add(1, std::memory_order_relaxed);
  emit(ConnectionEventKind::Failed, last_attempt_error_);
  if (!ever_ready_ && first_result_) {
    if (attempts_ <= 4) {  // the first few attempts' reasons, for the connect error
      attempt_log_ +=
          "; attempt " + std::to_string(attempts_) + ": " + last_attempt_error_.message();
    }
    if (attempts_ > config_.connect_retry) {
      auto first = std::move(first_result_);
      first_result_ = nullptr;
      std::string message = last_attempt_error_.message();
      if (attempts_ > 1) {
        message = "could not connect to " + endpoint_text_ + " in " + std::to_string(attempts_) +
                  " attempts (connectRetry=" + std::to_string(config_.connect_retry) +
                  ", connectTimeout=" + std::to_string(config_.connect_timeout.count()) + " ms)" +
                  attempt_log_;
        if (attempts_ > 4) message += "; …";
      }
      first(Error(last_attempt_error_.code(), std::move(message)));
      if (state() == ConnectionState::Closed) return;
    }
  }
  if (config_.backlog_policy == BacklogPolicy::FailFast) {
    fail_queued(last_attempt_error_, errc::disconnected, " (backlogPolicy=failFast)");
  }
  schedule_reconnect();
  if (down_hook_) down_hook_(*this, /*retargeted=*/false);
}

void Connection::schedule_reconnect() {
  state_.store(ConnectionState::Reconnecting, std::memory_order_release);
  // Exponential backoff with jitter: base × 2^(attempts-1), capped, then ±20%.
  const int exponent = std::min(attempts_ > 0 ? attempts_ - 1 : 0, 20);
  auto delay = config_.reconnect_base_delay * (1LL << exponent);
  delay = std::min<std::chrono::milliseconds>(delay, config_.reconnect_max_delay);
  thread_local std::minstd_rand random(std::random_device{}());
  const auto jitter = std::uniform_real_distribution<double>(0.8, 1.2)(random);
  delay = std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(delay.count()) * jitter));
  emit(ConnectionEventKind::Reconnecting, Error(), delay);
  const std::uint64_t generation = generation_;
  connect_timer_.expires_after(delay);
  connect_timer_.async_wait([self = shared_from_this(), generation](const asio::error_code& ec) {
    if (ec || generation != self->generation_) return;
    BusyScope busy(*self->load_);
    self->connect_attempt();
  });
  // Queued commands still have deadlines while we wait.
  arm_timer(Clock::now());
}

void Connection::become_ready() {
  connect_timer_.cancel();
  bool role_changed = false;
  bool check_replication = false;
  {
    std::lock_guard lock(identity_mutex_);
    identity_ = handshake_->identity();
    const bool replica = identity_.role == "replica" || identity_.role == "slave";
    role_changed = is_replica_.exchange(replica, std::memory_order_acq_rel) != replica;
    databases_.store(identity_.databases, std::memory_order_release);
    // A replica serves reads only once its INFO replication says it is in sync (a server
    // that restarts and resynchronises answers from its old data set meanwhile).
    check_replication = replica && config_.replica_health_check && !info_refused_;
    replication_state_ = check_replication ? "its first INFO replication is not answered yet" : "";
    health_.store(check_replication ? ReplicaHealth::Unfit : ReplicaHealth::InSync,
                  std::memory_order_release);
  }
  handshake_.reset();
  const bool restored = ever_ready_;
  if (restored) shared_->counters().reconnects.fetch_add(1, std::memory_order_relaxed);
  ever_ready_ = true;
  attempt_log_.clear();
  overdue_ = false;
  loading_probes_ = 0;
  role_probe_pending_ = false;
  last_role_check_ = Clock::now();
  last_read_ = Clock::now();
  attempts_ = 0;
  queue_.reset_stream_database(config_.default_database);
  queue_.reset_stream_offsets();
  stream_taken_ = 0;
  // Offsets restart at 0: bytes kept from the previous stream must not match them.
  write_buffer_.clear();
  write_buffer_begin_ = 0;
  {
    std::lock_guard guard(socket_mutex_);
    inline_unsent_.clear();
  }
  stream_written_.store(0, std::memory_order_release);
  state_.store(ConnectionState::Ready, std::memory_order_release);
  // Inline writes send raw bytes on the socket from a caller's thread: never under TLS,
  // where every byte must go through the TLS session on the I/O thread.
  queue_.set_inline(!transport_.is_tls());
  emit(restored ? ConnectionEventKind::Restored : ConnectionEventKind::Connected);
  // Before the backlog is written: what the hook queues (the subscriptions, in one batch)
  // leaves in the same write as the commands held while the connection was down.
  if (ready_hook_ && state() == ConnectionState::Ready) ready_hook_(*this);
  if (role_changed && restored && role_hook_) role_hook_(*this);
  if (check_replication) {
    // connect() returns once the replica's state is known (one more round trip), so reads
    // sent right after it find the replicas that are in sync; note_replication() reports.
    probe_role();
  } else if (first_result_) {
    auto first = std::move(first_result_);
    first_result_ = nullptr;
    first(Error());
  }
  if (state() != ConnectionState::Ready) return;
  arm_health_timer();
  if (!writing_) write_more();
}

void Connection::emit(ConnectionEventKind kind, const Error& error,
                      std::chrono::milliseconds delay) {
  ConnectionEvent event;
  event.kind = kind;
  event.endpoint = endpoint_text_;
  event.error = error;
  event.attempt = attempts_;
  event.delay = delay;
  shared_->report_event(event);
}

void Connection::connection_broken(const Error& cause) {
  if (state() == ConnectionState::Closed) return;
  if (state() != ConnectionState::Ready) {
    attempt_failed(cause);
    return;
  }
  ++generation_;
  report_connected();  // it was ready: the replica check that connect() awaited is moot
  close_socket();
  absorb_inline_writes();
  if (writing_) {
    // A write was in progress and its handler is now stale: how much of it reached the
    // socket is unknown, so every command of it counts as possibly sent (never "safe to
    // retry" by mistake).
    stream_written_.store(stream_taken_, std::memory_order_release);
  }
  writing_ = false;
  holding_for_replies_ = false;
  health_timer_.cancel();
  broken_scratch_.clear();
  pipeline_.take_all(broken_scratch_);
  resend_or_fail(broken_scratch_, cause);
  last_attempt_error_ = cause;
  {
    std::lock_guard lock(endpoint_mutex_);
    last_failure_ = cause.message();
  }
  attempts_ = 1;
  shared_->counters().connection_failures.fetch_add(1, std::memory_order_relaxed);
  emit(ConnectionEventKind::Failed, cause);
  if (config_.backlog_policy == BacklogPolicy::FailFast) {
    fail_queued(cause, errc::disconnected, " (backlogPolicy=failFast)");
  } else if (!carry_over_) {
    // A leased connection's commands belong to its session (a transaction's EXEC must not
    // run on a new connection without its WATCH): they fail with it, never carried over.
    fail_queued(cause, errc::not_sent, " (dedicated connection: not carried over to a new one)");
  }
  schedule_reconnect();
}

void Connection::resend_or_fail(std::vector<PendingCommand>& in_flight, const Error& cause) {
  // Under the queue policy a command goes out again on the next connection when that cannot
  // apply it twice: it never reached the socket (its bytes are still in the write buffer),
  // or the caller said it may run twice (Retryable / retryReadOnlyCommands) — then once.
  // Everything else fails, telling "not sent" from "outcome unknown".
  const bool may_resend = config_.backlog_policy == BacklogPolicy::Queue && carry_over_;
  const std::uint64_t written = stream_written_.load(std::memory_order_acquire);
  const std::uint64_t buffer_end = write_buffer_begin_ + write_buffer_.size();
  std::string inline_unsent;
  std::uint64_t inline_begin = 0;
  {
    std::lock_guard guard(socket_mutex_);
    inline_unsent.swap(inline_unsent_);
    inline_begin = inline_unsent_begin_;
  }
  const std::uint64_t inline_end = inline_begin + inline_unsent.size();
  std::vector<SubmissionQueue::Resend> resends;
  std::vector<PendingCommand> done;
  for (PendingCommand& command : in_flight) {
    const bool awaited = command.kind == PendingKind::FireAndForget ||
                         (command.kind == PendingKind::Caller && !command.state->claimed());
    std::string_view bytes;
    if (awaited && may_resend) {
      if (command.bytes_begin >= written) {
        if (command.bytes_begin >= write_buffer_begin_ && command.bytes_end <= buffer_end) {
          bytes = std::string_view(write_buffer_)
                      .substr(command.bytes_begin - write_buffer_begin_,
                              command.bytes_end - command.bytes_begin);
        } else if (command.bytes_begin >= inline_begin && command.bytes_end <= inline_end) {
          bytes = std::string_view(inline_unsent)
                      .substr(command.bytes_begin - inline_begin,
                              command.bytes_end - command.bytes_begin);
        }
      } else if (command.retry_written && command.resends == 0 && command.state &&
                 !command.state->retained_command.empty()) {
        bytes = command.state->retained_command;
        ++command.resends;
      }
    }
    if (!bytes.empty()) {
      resends.push_back({command, bytes});
      continue;
    }
    if (command.state && (command.kind == PendingKind::Internal || awaited)) {
      command.state->fail(broken_error(command, cause));
    }
    done.push_back(command);
  }
  if (!resends.empty()) {
    if (queue_.is_closed()) {
      for (SubmissionQueue::Resend& resend : resends) {
        if (resend.command.state) resend.command.state->fail(broken_error(resend.command, cause));
        done.push_back(resend.command);
      }
    } else {
      queue_.requeue_front(resends);
      shared_->counters().resent.fetch_add(resends.size(), std::memory_order_relaxed);
    }
  }
  release(done);
  in_flight.clear();
}

// ---------------------------------------------------------------------------------------
// Health

void Connection::arm_health_timer() {
  const auto period =
      config_.heartbeat_interval.count() > 0 ? config_.heartbeat_interval : config_.async_timeout;
  health_timer_.expires_after(period);
  health_timer_.async_wait(
      [self = shared_from_this(), generation = generation_.load()](const asio::error_code& ec) {
        if (ec || generation != self->generation_) return;
        BusyScope busy(*self->load_);
        self->on_health_tick();
      });
}

void Connection::on_health_tick() {
  if (state() != ConnectionState::Ready) return;
  absorb_inline_writes();
  const Clock::time_point now = Clock::now();
  const auto timeout = config_.async_timeout;
  if (!pipeline_.empty()) {
    // Half-open: a command is overdue (a caller timed out, the idle PING went unanswered, or
    // a SUBSCRIBE — which has no deadline of its own and holds back the PING — is still not
    // confirmed) and nothing has been read for two timeouts — the peer is gone or frozen;
    // replace it.
    const bool heartbeat_overdue = heartbeat_sent_ > last_read_ && now - heartbeat_sent_ >= timeout;
    const bool subscribe_waiting = pipeline_.front().kind == PendingKind::PubSub;
    const Clock::time_point progress = std::max(last_read_, awaiting_since_);
    if ((overdue_ || heartbeat_overdue || subscribe_waiting) && now - progress >= 2 * timeout) {
      shared_->counters().dead_connections.fetch_add(1, std::memory_order_relaxed);
      connection_broken(Error(
          errc::outcome_unknown,
          "no reply from " + endpoint_text_ + " for " + std::to_string(ms_since(progress, now)) +
              " ms while commands were overdue (asyncTimeout=" + std::to_string(timeout.count()) +
              " ms, heartbeatInterval=" + std::to_string(config_.heartbeat_interval.count()) +
              " ms): the connection looks dead or half-open and was replaced"));
      return;
    }
  }
  // Roles change under a failover: a replica is asked every second whether it was promoted,
  // a primary every 30 s whether it was demoted (READONLY replies ask at once).
  if (now - last_role_check_ >=
      (is_replica() ? std::chrono::seconds(1) : std::chrono::seconds(30))) {
    last_role_check_ = now;
    probe_role();
  }
  if (!pipeline_.empty()) {
    // waiting for replies: no heartbeat needed
  } else if (config_.heartbeat_interval.count() > 0 && !writing_ && queued_count() == 0) {
    const Clock::time_point last_write{Clock::duration(last_write_.load())};
    if (now - std::max(last_read_, last_write) >= config_.heartbeat_interval) {
      static constexpr std::string_view kPing = "PING";
      const Arg ping[] = {Arg(kPing)};
      heartbeat_sent_ = now;
      shared_->counters().heartbeats.fetch_add(1, std::memory_order_relaxed);
      submit(-1, ping, own_command(kPing, PendingKind::Heartbeat));
    }
  }
  arm_health_timer();
}

void Connection::pipeline_push(std::span<const PendingCommand> commands) {
  if (pipeline_.empty() && !commands.empty()) awaiting_since_ = Clock::now();
  pipeline_.push(commands);
}

// ---------------------------------------------------------------------------------------
// Writing

void Connection::submit(int db, std::span<const Arg> args, PendingCommand command) {
  const bool fail_fast =
      config_.backlog_policy == BacklogPolicy::FailFast && state() != ConnectionState::Ready;
  SubmissionQueue::Pushed pushed = SubmissionQueue::Pushed::Closed;
  if (!fail_fast) pushed = queue_.push(db, args, command);
  if (pushed == SubmissionQueue::Pushed::WriteInline) {
    write_inline();
  } else if (pushed == SubmissionQueue::Pushed::QueuedWake) {
    asio::post(io_, in_arena(wake_arena_, [self = shared_from_this()] { self->wake(); }));
  } else if (pushed == SubmissionQueue::Pushed::QueuedRearm) {
    rearm_for(command.deadline);
  } else if (pushed == SubmissionQueue::Pushed::Closed) {
    const Error error =
        fail_fast ? Error(errc::disconnected,
                          std::string(command.name) + " not sent: " + describe_endpoint() + " is " +
                              std::string(to_string(state())) + " and backlogPolicy=failFast")
                  : Error(errc::shut_down, std::string(command.name) +
                                               " not sent: the multiplexer was "
                                               "closed");
    if (command.state) {
      command.state->fail(error);
      command.state->release();
    }
    if (command.counted) shared_->release_slots(1);
  }
}

void Connection::submit_batch(int db, std::string_view bytes, std::span<PendingCommand> commands) {
  const SubmissionQueue::Pushed pushed = queue_.push_batch(db, bytes, commands);
  if (pushed == SubmissionQueue::Pushed::WriteInline) {
    write_inline();
  } else if (pushed == SubmissionQueue::Pushed::QueuedWake) {
    asio::post(io_, [self = shared_from_this()] { self->wake(); });
  } else if (pushed == SubmissionQueue::Pushed::QueuedRearm) {
    Clock::time_point earliest = Clock::time_point::max();
    for (const PendingCommand& command : commands) {
      if (command.kind == PendingKind::Caller) earliest = std::min(earliest, command.deadline);
    }
    rearm_for(earliest);
  } else if (pushed == SubmissionQueue::Pushed::Closed) {
    std::size_t slots = 0;
    for (PendingCommand& command : commands) {
      if (command.state) {
        command.state->fail(Error(errc::shut_down, "batch not sent: the multiplexer was closed"));
        command.state->release();
      }
      slots += command.counted ? 1 : 0;
    }
    shared_->release_slots(slots);
  }
}

void Connection::take_queued(std::string& bytes, std::vector<PendingCommand>& commands) {
  bytes.clear();
  commands.clear();
  std::string taken;
  std::vector<PendingCommand> queued;
  dropped_.clear();
  queue_.take(taken, queued, dropped_);
  release(dropped_);
  if (queued.empty()) return;
  // take() counted these as written to the stream: offsets are stream offsets from here.
  const std::uint64_t base = queued.front().bytes_begin;
  std::vector<SubmissionQueue::Resend> staying;
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
      staying.push_back({command, encoded});  // ROLE, PING, SUBSCRIBE …: this server's
    }
  }
  queue_.requeue_front(staying);
}

void Connection::wake() {
  BusyScope busy(*load_);
  if (state() != ConnectionState::Ready) {
    // Not writable yet: keep the commands queued; their deadlines still run.
    queue_.hold();
    if (state() != ConnectionState::Closed) arm_timer(Clock::now());
    return;
  }
  if (!writing_) write_more();
}

std::size_t Connection::coalescing_threshold() const {
  // Many commands awaiting replies and few new ones: the server is busy with the earlier
  // ones and runs these only after them anyway, so they wait for the next replies (which
  // free their callers to add more) and leave in one larger write. Fewer, larger writes cost
  // the server and this I/O thread less per command when hundreds of threads take turns.
  // Never a timer: the next replies are due, and a connection with few commands in flight
  // (a lone caller, a lightly loaded one) writes at once.
  const std::size_t in_flight = pipeline_.size();
  if (in_flight < kCoalesceInFlight) return 0;
  return std::min(kCoalesceBatch, in_flight / 4);
}

void Connection::write_more() {
  if (released_waiters_ >= kYieldForReleased && wait_policy() == WaitPolicy::Adaptive &&
      queued_count() < released_waiters_) {
    // The last replies released blocked callers that have not queued their next commands
    // yet: give them the CPU once, so that their commands leave in this write instead of
    // the next one. On a machine with more CPUs than runnable threads the yield returns at
    // once; with hundreds of blocked callers on a few CPUs it turns many small writes
    // (each one a wake-up of the server and of this thread) into few large ones. Under
    // WaitPolicy::Sleep nothing in redmux yields: that policy is for machines where CPU-bound
    // threads would take the CPU for a whole time slice.
    shared_->counters().yields_for_callers.fetch_add(1, std::memory_order_relaxed);
    ::sched_yield();
  }
  released_waiters_ = 0;
  absorb_inline_writes();
  if (!queue_.take(write_buffer_, batch_, dropped_, coalescing_threshold())) {
    holding_for_replies_ = true;  // the writer role stays ours: pushes meanwhile wake nobody
    writing_ = false;
    return;
  }
  release(dropped_);
  if (write_buffer_.empty()) {
    writing_ = false;
    if (write_buffer_.capacity() > kShrinkAbove) std::string().swap(write_buffer_);
    return;
  }
  Clock::time_point earliest = Clock::time_point::max();
  std::size_t callers = 0;
  for (PendingCommand& command : batch_) {  // offsets are stream offsets already (take())
    if (command.kind == PendingKind::Caller) {
      earliest = std::min(earliest, command.deadline);
      ++callers;
    }
  }
  if (!batch_.empty()) {
    stream_taken_ = batch_.back().bytes_end;
    write_buffer_begin_ = stream_taken_ - write_buffer_.size();
  }
  pipeline_push(batch_);
  queue_.publish_in_flight(pipeline_.size());
  shared_->counters().writes.fetch_add(1, std::memory_order_relaxed);
  if (earliest < timer_at_) arm_timer(earliest);
  writing_ = true;
  transport_.async_write(
      asio::buffer(write_buffer_),
      in_arena(write_arena_, [self = shared_from_this(), generation = generation_.load()](
                                 const asio::error_code& ec, std::size_t bytes) {
        if (generation != self->generation_) return;
        BusyScope busy(*self->load_);
        self->on_written(ec, bytes);
      }));
}

void Connection::write_raw(std::string bytes) {
  auto buffer = std::make_shared<std::string>(std::move(bytes));
  transport_.async_write(
      asio::buffer(*buffer), [self = shared_from_this(), buffer, generation = generation_.load()](
                                 const asio::error_code& ec, std::size_t bytes_written) {
        if (generation != self->generation_) return;
        BusyScope busy(*self->load_);
        (void)bytes_written;  // handshake bytes are not part of the callers' stream
        if (ec) {
          self->connection_broken(Error(
              errc::connection_failed,
              "writing the handshake to " + self->endpoint_text_ + " failed: " + ec.message() +
                  self->transport_.error_hint(ec, /*during_handshake=*/true)));
        }
      });
}

void Connection::rearm_for(Clock::time_point deadline) {
  asio::post(io_, [self = shared_from_this(), deadline] {
    BusyScope busy(*self->load_);
    self->absorb_inline_writes();
    if (self->state() != ConnectionState::Closed) self->arm_timer(deadline);
  });
}

void Connection::write_inline() {
  // The queue was idle and the connection ready: this caller owns the writer role, so it
  // sends its bytes itself (non-blocking) instead of waking the I/O thread — one thread
  // hand-off less per command at low load. The I/O thread still reads every reply; the
  // commands reach its pipeline through the hand-off list before any reply is parsed.
  thread_local std::string bytes;
  std::uint64_t stream_begin = 0;
  bool needs_timer = false;
  std::size_t sent = 0;
  int error = 0;
  bool ready = false;
  {
    // Taken before the commands are: a break (close_socket() takes this lock first) then
    // finds them either not yet taken, or taken with their unsent bytes in inline_unsent_.
    std::lock_guard guard(socket_mutex_);
    needs_timer = queue_.take_inline(bytes, &stream_begin);
    ready = state() == ConnectionState::Ready && transport_.is_open();
    if (ready) {
      const ssize_t n = ::send(transport_.native_handle(), bytes.data(), bytes.size(),
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) {
        sent = static_cast<std::size_t>(n);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        error = errno;
      }
      stream_written_.fetch_add(sent, std::memory_order_acq_rel);
    }
    if (sent < bytes.size()) {
      // Keep what did not reach the socket where a break can find it (under this lock, which
      // close_socket() takes first): those commands can then be resent, not failed.
      inline_unsent_.assign(bytes, sent);
      inline_unsent_begin_ = stream_begin + sent;
    }
  }
  if (sent > 0) {
    auto& counters = shared_->counters();
    counters.bytes_written.fetch_add(sent, std::memory_order_relaxed);
    counters.writes.fetch_add(1, std::memory_order_relaxed);
    last_write_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
  if (ready && error == 0 && sent == bytes.size()) {
    if (queue_.finish_inline()) {
      asio::post(io_, in_arena(wake_arena_, [self = shared_from_this()] { self->wake(); }));
    } else if (needs_timer) {
      asio::post(io_, [self = shared_from_this()] {
        BusyScope busy(*self->load_);
        self->absorb_inline_writes();  // arms the deadline timer for them
      });
    }
    return;
  }
  // Not ready any more, the socket is full, or it failed: the I/O thread takes over (and
  // keeps the writer role until its write completes).
  std::string rest = bytes.substr(sent);
  asio::post(io_, [self = shared_from_this(), rest = std::move(rest), error, ready,
                   generation = generation_.load()]() mutable {
    BusyScope busy(*self->load_);
    if (!ready || generation != self->generation_ || self->state() != ConnectionState::Ready) {
      // The connection broke meanwhile: its commands were failed with it (or are failed now
      // by absorb_inline_writes(), which never puts them into a pipeline when not ready);
      // give the writer role back — whatever the queue holds is written after the reconnect.
      self->absorb_inline_writes();
      // Give the role back only on the connection it was taken on: after a reconnect the
      // new connection's first write_more() has reset it, and may hold it now.
      if (generation == self->generation_) self->queue_.finish_inline();
      return;
    }
    if (error != 0) {
      self->connection_broken(
          Error(errc::outcome_unknown, "writing to " + self->endpoint_text_ +
                                           " failed: " + std::system_category().message(error)));
      return;
    }
    self->finish_inline_write(std::move(rest));
  });
}

void Connection::finish_inline_write(std::string rest) {
  absorb_inline_writes();
  {
    std::lock_guard guard(socket_mutex_);
    inline_unsent_.clear();  // the I/O thread writes it now (write_buffer_ covers it)
  }
  writing_ = true;
  write_buffer_ = std::move(rest);
  write_buffer_begin_ = stream_taken_ - write_buffer_.size();
  transport_.async_write(
      asio::buffer(write_buffer_),
      in_arena(write_arena_, [self = shared_from_this(), generation = generation_.load()](
                                 const asio::error_code& ec, std::size_t bytes) {
        if (generation != self->generation_) return;
        BusyScope busy(*self->load_);
        self->on_written(ec, bytes);
      }));
}

void Connection::absorb_inline_writes() {
  handoff_scratch_.clear();
  queue_.drain_handoff(handoff_scratch_);
  if (handoff_scratch_.empty()) return;
  if (state() != ConnectionState::Ready) {
    // A caller took the writer role just before the connection stopped being ready, and its
    // commands reached the hand-off list after the pipeline was failed: they must never
    // join a pipeline (a later connection's replies would be matched to them). They were
    // not written, or written to a connection that is gone: fail them here.
    const Error cause(errc::disconnected,
                      endpoint_text_ + " is " + std::string(to_string(state())));
    if (state() != ConnectionState::Closed) {
      resend_or_fail(handoff_scratch_, cause);  // what never reached a socket goes out again
      return;
    }
    for (PendingCommand& command : handoff_scratch_) {
      if (command.state) command.state->fail(broken_error(command, cause));
    }
    release(handoff_scratch_);
    return;
  }
  Clock::time_point earliest = Clock::time_point::max();
  for (const PendingCommand& command : handoff_scratch_) {
    if (command.kind == PendingKind::Caller) earliest = std::min(earliest, command.deadline);
  }
  stream_taken_ = handoff_scratch_.back().bytes_end;
  pipeline_push(handoff_scratch_);
  if (earliest < timer_at_ && state() != ConnectionState::Closed) arm_timer(earliest);
}

void Connection::close_socket() {
  queue_.set_inline(false);
  std::lock_guard guard(socket_mutex_);  // waits for an inline write in progress
  transport_.close();
}

void Connection::on_written(const asio::error_code& ec, std::size_t bytes) {
  stream_written_.fetch_add(bytes, std::memory_order_acq_rel);
  shared_->counters().bytes_written.fetch_add(bytes, std::memory_order_relaxed);
  last_write_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (ec) {
    writing_ = false;
    connection_broken(
        Error(errc::outcome_unknown, "writing to " + endpoint_text_ + " failed: " + ec.message()));
    return;
  }
  write_more();
}

// ---------------------------------------------------------------------------------------
// Reading

void Connection::read_more() {
  if (read_buffer_.size() - read_end_ < kMinFreeForRead) {
    const std::size_t unparsed = read_end_ - read_begin_;
    if (read_begin_ > 0) {
      std::memmove(read_buffer_.data(), read_buffer_.data() + read_begin_, unparsed);
      read_begin_ = 0;
      read_end_ = unparsed;
    }
    if (read_buffer_.size() - read_end_ < kMinFreeForRead) {
      read_buffer_.resize(read_buffer_.size() * 2);  // a reply larger than the buffer
    }
  }
  transport_.async_read_some(
      asio::buffer(read_buffer_.data() + read_end_, read_buffer_.size() - read_end_),
      [self = shared_from_this(), generation = generation_.load()](const asio::error_code& ec,
                                                                   std::size_t bytes) {
        if (generation != self->generation_) return;
        BusyScope busy(*self->load_);
        self->on_read(ec, bytes);
      });
}

void Connection::on_read(const asio::error_code& ec, std::size_t bytes) {
  if (ec) {
    const bool closed_by_server = Transport::closed_by_peer(ec);
    const bool handshaking = state() == ConnectionState::Handshaking;
    std::string hint = transport_.error_hint(ec, handshaking);  // TLS only
    if (closed_by_server && handshaking && !transport_.is_tls()) {
      // A TLS port closes a plain connection at its first bytes (the HELLO).
      hint += " during the handshake: is this a TLS port? set ssl=true (or use rediss://)";
    }
    const std::size_t partial = read_end_ - read_begin_;
    if (partial > 0) {
      hint += "; a reply was cut short (" + std::to_string(partial) + " bytes of it had arrived)";
    }
    connection_broken(
        Error(errc::outcome_unknown,
              (closed_by_server ? endpoint_text_ + " closed the connection"
                                : "reading from " + endpoint_text_ + " failed: " + ec.message()) +
                  hint));
    return;
  }
  absorb_inline_writes();  // replies can only answer commands already in the pipeline
  read_end_ += bytes;
  last_read_ = Clock::now();
  shared_->counters().bytes_read.fetch_add(bytes, std::memory_order_relaxed);
  std::size_t replies = 0;
  const std::uint64_t generation = generation_;
  (void)take_released_waiters();  // count only what these replies release
  for (;;) {
    const std::string_view unparsed(read_buffer_.data() + read_begin_, read_end_ - read_begin_);
    const resp::ParseStatus status = parser_.parse(unparsed);
    if (status == resp::ParseStatus::NeedMore) break;
    if (status == resp::ParseStatus::Failed) {
      connection_broken(Error(
          errc::protocol_error,
          "reply from " + endpoint_text_ + " is not valid RESP: " + parser_.error().message()));
      return;
    }
    read_begin_ += parser_.consumed();
    ++replies;
    if (!on_reply(parser_.nodes())) return;
    if (generation != generation_) return;  // the reply broke or closed the connection
  }
  if (replies > 0) overdue_ = false;
  released_waiters_ += take_released_waiters();
  shared_->counters().replies.fetch_add(replies, std::memory_order_relaxed);
  queue_.publish_in_flight(pipeline_.size());
  if (holding_for_replies_ && replies > 0) {
    holding_for_replies_ = false;
    if (!writing_) write_more();
  }
  if (read_begin_ == read_end_) {
    read_begin_ = read_end_ = 0;
    if (read_buffer_.size() > kShrinkAbove) {
      std::vector<char>(kReadChunk).swap(read_buffer_);  // give back what a big reply took
    }
  }
  read_more();
}

bool Connection::on_reply(NodeSpan reply) {
  if ((!reply.empty() && reply[0].type == ReplyType::Push) ||
      (subscriber_mode_ && is_resp2_pubsub(reply))) {
    // Out of band (a RESP3 push, or a RESP2 pub/sub array on a subscriber connection): a
    // message, or the confirmation of one name of a SUBSCRIBE-family command in flight.
    shared_->counters().pushes.fetch_add(1, std::memory_order_relaxed);
    if (reply[0].size >= 2 && reply.size() > 1 && reply[1].type == ReplyType::BulkString) {
      pipeline_.on_confirmation(reply[1].value);
    }
    if (push_handler_) push_handler_(reply);
    return true;
  }
  if (state() == ConnectionState::Handshaking) {
    std::string more;
    switch (handshake_->on_reply(reply, more)) {
      case Handshake::Step::Continue:
        if (!more.empty()) write_raw(std::move(more));
        return true;
      case Handshake::Step::Done:
        become_ready();
        return true;
      case Handshake::Step::Failed:
        attempt_failed(handshake_->error());
        return false;
      case Handshake::Step::Loading:
        wait_for_loading();
        return true;
    }
  }
  if (!reply.empty() && is_error_reply(reply) &&
      (reply[0].value.starts_with("READONLY") || reply[0].value.starts_with("MASTERDOWN"))) {
    probe_role();
  }
  const Pipeline::ReplyOutcome outcome = pipeline_.on_reply(reply, report_error_, release_slot_);
  if (outcome == Pipeline::ReplyOutcome::InternalFailed) {
    connection_broken(Error(
        errc::outcome_unknown,
        "a SELECT redmux sent to switch databases failed on " + endpoint_text_ + " (" +
            std::string(reply.empty() ? std::string_view() : reply[0].value) +
            "); commands written behind it may have run against the previous database, so the "
            "connection was reset"));
    return false;
  }
  if (outcome == Pipeline::ReplyOutcome::Unexpected) {
    connection_broken(Error(errc::protocol_error, "a reply arrived from " + endpoint_text_ +
                                                      " with no command waiting for it"));
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// Deadlines

void Connection::arm_timer(Clock::time_point at) {
  if (at >= timer_at_) return;
  timer_at_ = at;
  queue_.set_timer_armed_until(at);
  deadline_timer_.expires_at(at);
  deadline_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    BusyScope busy(*self->load_);
    self->on_timer(ec);
  });
}

void Connection::on_timer(const asio::error_code&) {
  if (state() == ConnectionState::Closed) return;
  const Clock::time_point now = Clock::now();
  if (now < timer_at_ && timer_at_ != Clock::time_point::max()) {
    // A wait that completed just as the timer was re-armed later: honour the later time.
    const Clock::time_point at = timer_at_;
    timer_at_ = Clock::time_point::max();
    arm_timer(at);
    return;
  }
  timer_at_ = Clock::time_point::max();
  queue_.set_timer_armed_until(timer_at_);
  absorb_inline_writes();
  std::size_t timed_out =
      pipeline_.expire(now, [this](const PendingCommand& c, Clock::time_point t) {
        return timeout_error(c, t, /*in_flight=*/true);
      });
  if (timed_out > 0) overdue_ = true;
  std::vector<PendingCommand> expired;
  const Clock::time_point queued_next = queue_.collect_expired(now, expired);
  for (PendingCommand& command : expired) {
    command.state->fail(timeout_error(command, now, /*in_flight=*/false));
    command.state->release();  // the extra reference collect_expired took
    ++timed_out;
  }
  shared_->counters().timeouts.fetch_add(timed_out, std::memory_order_relaxed);
  if (state() != ConnectionState::Ready) {
    std::vector<PendingCommand> dropped;
    queue_.purge_completed(dropped);
    release(dropped);
  }
  const Clock::time_point next = std::min(pipeline_.next_deadline(), queued_next);
  if (next != Clock::time_point::max()) arm_timer(next);
}

Error Connection::timeout_error(const PendingCommand& command, Clock::time_point now,
                                bool in_flight) const {
  const auto queued = queue_.snapshot();
  const long long elapsed_ms =
      ms_since(command.deadline - std::chrono::milliseconds(command.timeout_ms), now);
  // In flight, offsets count bytes since the connection started; queued, nothing is sent.
  const std::uint64_t written = stream_written_.load(std::memory_order_acquire);
  const bool sent = in_flight && command.bytes_end <= written;
  std::size_t unread = read_end_ - read_begin_;
  int available = 0;
  if (transport_.is_open() && ::ioctl(transport_.native_handle(), FIONREAD, &available) == 0) {
    unread += static_cast<std::size_t>(available);
  }
  std::string_view which;
  switch (command.timeout_source) {
    case TimeoutSource::AsyncTimeout:
      which = "asyncTimeout";
      break;
    case TimeoutSource::Call:
      which = "this call's timeout";
      break;
    case TimeoutSource::Blocking:
      which = "the block time plus the call's timeout";
      break;
  }
  std::string message = "Timeout awaiting reply to " + std::string(command.name) + " after " +
                        std::to_string(elapsed_ms) + " ms (" + std::string(which) + " " +
                        std::to_string(command.timeout_ms) + " ms) from " + endpoint_text_;
  if (!config_.name.empty()) message += " (client name \"" + config_.name + "\")";
  message += ": command " + std::string(sent        ? "was sent"
                                        : in_flight ? "was being written"
                                                    : "was still queued, not sent");
  const bool ready = state() == ConnectionState::Ready;
  if (!in_flight && ready && holding_for_replies_) {
    // Not a stall: under load a small write waits for the replies already due
    // (coalescing_threshold()), and this command's deadline came first.
    message += " (held for the next replies: " + std::to_string(pipeline_.size()) +
               " commands were awaiting theirs)";
  }
  message += "; queued-unsent=" + std::to_string(queued.commands);
  message += ", sent-awaiting-reply=" + std::to_string(pipeline_.size());
  message += ", bytes-to-write=" + std::to_string(queued.bytes + (stream_taken_ - written));
  message += ", bytes-unread=" + std::to_string(unread);
  message += ", connection=" + std::string(to_string(state()));
  message += ", last-read=" + ago(last_read_, now);
  message += ", last-write=" + ago(Clock::time_point(Clock::duration(last_write_.load())), now);
  message += ", io=" + std::to_string(load_->busy_percent()) + "% busy";
  message += ", redmux " + std::string(kVersion);
  if (!ready && last_attempt_error_) {
    // With abortConnect=false a connection that cannot be made shows only as timeouts:
    // say why the last attempt failed (a wrong password, a refused port …).
    message +=
        ". The connection is not ready; its last attempt failed: " + last_attempt_error_.message();
  }
  switch (command.timeout_source) {
    case TimeoutSource::AsyncTimeout:
      message +=
          ". If the server is busy or far away raise asyncTimeout (or give this call a "
          "longer CallOptions::timeout)";
      break;
    case TimeoutSource::Call:
      message += ". If the server is busy or far away raise this call's CallOptions::timeout";
      break;
    case TimeoutSource::Blocking:
      message +=
          ". A blocking command's deadline is its block time plus the call's timeout "
          "(CallOptions::timeout, else asyncTimeout): raise that";
      break;
  }
  message += "; if replies are slow to be read, check the I/O thread is not blocked by callbacks.";
  return Error(errc::timeout, std::move(message));
}

Error Connection::broken_error(const PendingCommand& command, const Error& cause) const {
  if (command.bytes_begin >= stream_written_.load(std::memory_order_acquire)) {
    return Error(errc::not_sent, std::string(command.name) + " was not sent: connection to " +
                                     endpoint_text_ + " lost (" + cause.message() +
                                     "); safe to retry");
  }
  return Error(errc::outcome_unknown, "connection to " + endpoint_text_ + " lost after " +
                                          std::string(command.name) + " was sent (" +
                                          cause.message() + "): it may or may not have run");
}

void Connection::release(std::vector<PendingCommand>& commands) {
  std::size_t slots = 0;
  for (PendingCommand& command : commands) {
    if (command.state) command.state->release();
    slots += command.counted ? 1 : 0;
  }
  commands.clear();
  shared_->release_slots(slots);
}

void Connection::fail_queued(const Error& error, errc code, std::string_view why) {
  std::vector<PendingCommand> queued;
  queue_.drain(queued);
  for (PendingCommand& command : queued) {
    if (command.state) {
      command.state->fail(Error(
          code, std::string(command.name) + " not sent: " + error.message() + std::string(why)));
    }
  }
  release(queued);
}

void Connection::shutdown(std::function<void()> closed_callback) {
  asio::post(io_, [self = shared_from_this(),
                   closed_callback = std::move(closed_callback)]() mutable {
    BusyScope busy(*self->load_);
    struct Notify {  // runs the callback on every path out of this handler
      std::function<void()>& callback;
      ~Notify() {
        if (callback) callback();
      }
    } notify{closed_callback};
    if (self->state() == ConnectionState::Closed) return;
    self->state_.store(ConnectionState::Closed, std::memory_order_release);
    ++self->generation_;
    self->close_socket();
    self->absorb_inline_writes();
    self->resolver_.cancel();
    self->connect_timer_.cancel();
    self->deadline_timer_.cancel();
    self->health_timer_.cancel();
    const Error closed(errc::shut_down, "the multiplexer was closed");
    std::vector<PendingCommand> queued;
    self->queue_.close(queued);
    for (PendingCommand& command : queued) {
      if (command.state) {
        command.state->fail(Error(
            errc::shut_down, std::string(command.name) + " not sent: the multiplexer was closed"));
      }
    }
    self->release(queued);
    self->shared_->release_slots(self->pipeline_.fail_all(
        [&](const PendingCommand& command) { return self->broken_error(command, closed); }));
    if (self->first_result_) {
      auto first = std::move(self->first_result_);
      self->first_result_ = nullptr;
      first(closed);
    }
  });
}

}  // namespace redmux::detail
