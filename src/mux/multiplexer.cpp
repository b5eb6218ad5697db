#include "redmux/multiplexer.hpp"

#include "core/enum_names.hpp"
#include "mux/cluster.hpp"
#include "mux/connect_watch.hpp"
#include "mux/core.hpp"
#include "mux/dedicated_pool.hpp"
#include "mux/sentinel_connect.hpp"
#include "pubsub/hub.hpp"
#if REDMUX_WITH_TLS
#include "net/tls_context.hpp"
#endif
#include "redmux/version.hpp"

namespace redmux {

namespace detail {

Error submit_command(MuxCore& core, int db, const CallOptions& options, std::span<const Arg> args,
                     CommandState* state) {
  return core.submit(db, options, args, state);
}

}  // namespace detail

namespace {

/// A ready connection whose server runs in cluster mode, or null.
detail::Connection* cluster_seed(detail::MuxCore& core) {
  for (const auto& group : core.groups()) {
    for (const auto& connection : group) {
      if (connection->state() == detail::ConnectionState::Ready &&
          connection->identity().mode == "cluster") {
        return connection.get();
      }
    }
  }
  return nullptr;
}

}  // namespace

Multiplexer::Multiplexer(std::shared_ptr<detail::MuxCore> core) : core_(std::move(core)) {}

Multiplexer::~Multiplexer() {
  close();
}

std::shared_ptr<Multiplexer> Multiplexer::connect(std::string_view configuration) {
  return connect(Config::from_string(configuration));
}

std::shared_ptr<Multiplexer> Multiplexer::connect(const Config& config,
                                                  std::shared_ptr<IoPool> pool) {
  if (detail::on_io_thread()) detail::deadlock_error("Multiplexer::connect()").raise();
  detail::ConnectWatch watch;
  Future<std::shared_ptr<Multiplexer>> pending = start_connect(config, std::move(pool), &watch);
  // syncTimeout bounds this blocking call. The attempts still running are stopped here, so
  // the multiplexer's I/O threads end now (joined here, or just after when a handler lets go
  // of the pool last), not at the attempts' own timeouts, maybe during the process's exit.
  if (!pending.wait_for(config.sync_timeout)) {
    const std::string so_far = watch.progress ? watch.progress() : std::string();
    if (watch.abandon) watch.abandon();
    if (!so_far.empty() && !config.service_name.empty()) {
      throw ConnectionError(errc::connection_failed,
                            "Sentinel service \"" + config.service_name +
                                "\" not connected within syncTimeout=" +
                                std::to_string(config.sync_timeout.count()) + " ms: " + so_far +
                                "; raise syncTimeout, or use abortConnect=false to connect in "
                                "the background");
    }
    throw ConnectionError(
        errc::connection_failed,
        "no endpoint of \"" + config.to_string() +
            "\" connected within syncTimeout=" + std::to_string(config.sync_timeout.count()) +
            " ms (connectTimeout=" + std::to_string(config.connect_timeout.count()) +
            " ms, connectRetry=" + std::to_string(config.connect_retry) + ")" +
            (so_far.empty() ? std::string() : ": " + so_far) +
            "; raise syncTimeout, or use abortConnect=false to connect in the background");
  }
  return pending.get();
}

Future<std::shared_ptr<Multiplexer>> Multiplexer::connect_async(const Config& config,
                                                                std::shared_ptr<IoPool> pool) {
  return start_connect(config, std::move(pool), nullptr);
}

Future<std::shared_ptr<Multiplexer>> Multiplexer::connect_async(std::string_view configuration) {
  return connect_async(Config::from_string(configuration));
}

Future<std::shared_ptr<Multiplexer>> Multiplexer::start_connect(const Config& config,
                                                                std::shared_ptr<IoPool> pool,
                                                                detail::ConnectWatch* watch) {
  using Ptr = std::shared_ptr<Multiplexer>;
  if (Result<void> valid = config.validate(); !valid) {
    return Future<Ptr>::ready_with(std::move(valid).error());
  }
  // The TLS settings are read (CA, certificate and key files) here, on the caller's thread,
  // so a bad path is a ConfigError from connect(), not a failure on every attempt.
  std::shared_ptr<detail::TlsContext> tls;
  if (config.ssl) {
#if REDMUX_WITH_TLS
    Result<std::shared_ptr<detail::TlsContext>> made = detail::TlsContext::create(config);
    if (!made) return Future<Ptr>::ready_with(std::move(made).error());
    tls = std::move(*made);
#else
    // Refused, never silently ignored: a plain-text connection where TLS was asked for
    // would leak credentials and data.
    return Future<Ptr>::ready_with(Error(
        errc::invalid_config,
        "ssl=true (or a rediss:// URL): this build of redmux " + std::string(kVersion) +
            " has no TLS support (built with REDMUX_WITH_TLS=OFF; rebuild with "
            "-DREDMUX_WITH_TLS=ON and OpenSSL 3); refusing to connect in plain text instead"));
#endif
  }
  if (!config.service_name.empty()) {  // the endpoints are Sentinels: ask them first
    return detail::connect_through_sentinels(
        config, std::move(pool), std::move(tls),
        [](std::shared_ptr<detail::MuxCore> core) { return Ptr(new Multiplexer(std::move(core))); },
        watch);
  }
  auto core = std::make_shared<detail::MuxCore>(config, std::move(pool), std::move(tls));
  Ptr mux(new Multiplexer(core));
  auto* state = new detail::FutureState<Ptr>();
  Future<Ptr> future(state);
  if (!config.abort_connect) {
    // Connects in the background; a cluster's slot map is loaded once a node answers
    // (commands sent before that go to the listed nodes as they are).
    std::weak_ptr<detail::MuxCore> weak = core;
    core->start([weak](std::vector<Error> errors) {
      auto core = weak.lock();
      if (!core || !errors.empty()) return;
      if (detail::Connection* seed = cluster_seed(*core)) {
        core->enable_cluster(*seed, [](const Error&) {});
      }
    });
    state->set(mux);
    return future;
  }
  if (watch) {
    // For connect()'s syncTimeout message: where each endpoint's attempt is.
    watch->progress = [weak = std::weak_ptr<detail::MuxCore>(core)] {
      std::string text;
      if (auto held = weak.lock()) {
        for (const auto& group : held->groups()) {
          for (const auto& connection : group) {
            const std::string one =
                connection->describe_endpoint() + " " + connection->attempt_text();
            if (text.find(one) != std::string::npos) continue;  // connectionsPerEndpoint > 1
            if (!text.empty()) text += "; ";
            text += one;
          }
        }
      }
      return text;
    };
    // close() waits until each connection has shut down, which ends its attempt and runs
    // the callback below (it lets go of the multiplexer): the reference taken here is then
    // usually the last one, and the core and its I/O threads end on connect()'s thread.
    watch->abandon = [weak = std::weak_ptr<detail::MuxCore>(core)] {
      if (auto held = weak.lock()) held->close();
    };
  }
  state->add_ref();
  // The callback holds the multiplexer until it has decided; on failure it closes it. It
  // runs on an I/O thread, so the close must not wait there: MuxCore::close() knows.
  core->start([state, mux](std::vector<Error> errors) mutable {
    if (errors.empty()) {
      if (detail::Connection* seed = cluster_seed(*mux->core_)) {
        // A Redis Cluster: ready once the slot map is loaded.
        auto core = mux->core_;
        core->enable_cluster(*seed, [state, mux = std::move(mux)](const Error& error) mutable {
          if (error) {
            mux->core_->close();
            mux.reset();  // before connect() is woken: see below
            state->set(Error(error.code(),
                             "connected to a Redis Cluster node, but could not load "
                             "the slot map: " +
                                 error.message()));
          } else {
            state->set(std::move(mux));
          }
          mux.reset();
          state->release();
        });
        return;
      }
      state->set(std::move(mux));
    } else {
      std::string message = "could not connect to any of " +
                            std::to_string(mux->config().endpoints.size()) + " endpoint(s)";
      if (!mux->config().name.empty()) message += " for client \"" + mux->config().name + "\"";
      for (const Error& error : errors) message += "; " + error.message();
      message +=
          " (abortConnect=true: use abortConnect=false to start disconnected and "
          "connect in the background)";
      const errc code = errors.front().code() == errc::authentication_failed
                            ? errc::authentication_failed
                            : errc::connection_failed;
      mux->core_->close();
      // Let go before the caller is woken, so that when connect() throws, no I/O thread
      // holds the multiplexer (its last reference usually: the pool is then an orphan,
      // joined at the latest at exit, before the caller can reach exit).
      mux.reset();
      state->set(Error(code, std::move(message)));
    }
    mux.reset();
    state->release();
  });
  return future;
}

Subscriber Multiplexer::subscriber() const {
  return Subscriber(core_, core_->subscription_hub());
}

Database Multiplexer::database(int index) const {
  return Database(core_, index == -1 ? core_->config().default_database : index);
}

const Config& Multiplexer::config() const noexcept {
  return core_->configured();
}

ServerIdentity Multiplexer::server_identity() const {
  for (const auto& group : core_->groups()) {
    for (const auto& connection : group) {
      if (connection->state() == detail::ConnectionState::Ready) return connection->identity();
    }
  }
  return core_->groups().front().front()->identity();
}

bool Multiplexer::is_connected() const noexcept {
  for (const auto& group : core_->groups()) {
    for (const auto& connection : group) {
      if (connection->state() == detail::ConnectionState::Ready) return true;
    }
  }
  return false;
}

std::string_view to_string(ConnectionStatus::State state) noexcept {
  static constexpr std::string_view kNames[] = {"idle",  "connecting",   "handshaking",
                                                "ready", "reconnecting", "closed"};
  return detail::name_of(state, kNames);
}

std::string_view to_string(ConnectionStatus::Role role) noexcept {
  static constexpr std::string_view kNames[] = {"unknown", "primary", "replica"};
  return detail::name_of(role, kNames);
}

namespace {

ConnectionStatus::State public_state(detail::ConnectionState state) noexcept {
  switch (state) {
    case detail::ConnectionState::Idle:
      return ConnectionStatus::State::Idle;
    case detail::ConnectionState::Connecting:
      return ConnectionStatus::State::Connecting;
    case detail::ConnectionState::Handshaking:
      return ConnectionStatus::State::Handshaking;
    case detail::ConnectionState::Ready:
      return ConnectionStatus::State::Ready;
    case detail::ConnectionState::Reconnecting:
      return ConnectionStatus::State::Reconnecting;
    case detail::ConnectionState::Closed:
      return ConnectionStatus::State::Closed;
  }
  return ConnectionStatus::State::Closed;
}

/// "12 ms ago", or "never".
std::string ago(std::chrono::steady_clock::time_point at,
                std::chrono::steady_clock::time_point now) {
  if (at == std::chrono::steady_clock::time_point{}) return "never";
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - at).count();
  return std::to_string(ms < 0 ? 0 : ms) + " ms ago";
}

/// One connection's line in status(). The role is what its server said (HELLO, ROLE).
ConnectionStatus describe(const detail::Connection& connection, ConnectionStatus::Purpose purpose) {
  ConnectionStatus out;
  out.endpoint = connection.describe_endpoint();
  out.purpose = purpose;
  out.state = public_state(connection.state());
  const std::string role = connection.identity().role;
  if (role == "master") out.role = ConnectionStatus::Role::Primary;
  if (role == "replica" || role == "slave") out.role = ConnectionStatus::Role::Replica;
  const detail::Connection::Tally tally = connection.tally();
  out.queued = tally.queued;
  out.in_flight = tally.in_flight;
  const detail::ConnectionMachine::Activity activity = connection.activity();
  out.writes = activity.writes;
  out.commands_written = activity.commands_written;
  out.last_read = activity.last_read;
  out.last_write = activity.last_write;
  if (out.state != ConnectionStatus::State::Ready) out.last_failure = connection.last_failure();
  if (const auto& cache = connection.cache()) {
    const detail::CacheTally t = cache->tally();
    out.cache = {t.hits,      t.misses,  t.stored,  t.refused, t.invalidations, t.flushes,
                 t.evictions, t.expired, t.entries, t.bytes,   cache->active(), cache->refusal()};
  }
  return out;
}

/// The subscription and dedicated connections do not ask their server's role after their
/// handshake (a subscribed RESP2 connection cannot), so after a failover theirs would be the
/// role from before. The connections commands are routed over learn a change at once (and
/// a cluster node's role is the slot map's): each of the others shows the role of a ready
/// one to the same server.
void learn_roles_from_routed(std::vector<ConnectionStatus>& connections) {
  using Purpose = ConnectionStatus::Purpose;
  for (ConnectionStatus& other : connections) {
    if (other.purpose == Purpose::Interactive || other.purpose == Purpose::ClusterNode) continue;
    for (const ConnectionStatus& routed : connections) {
      if ((routed.purpose == Purpose::Interactive || routed.purpose == Purpose::ClusterNode) &&
          routed.endpoint == other.endpoint && routed.state == ConnectionStatus::State::Ready &&
          routed.role != ConnectionStatus::Role::Unknown) {
        other.role = routed.role;
        break;
      }
    }
  }
}

}  // namespace

MultiplexerStatus Multiplexer::status() const {
  const detail::Counters& c = core_->shared().counters();
  MultiplexerStatus s;
  // Every connection first, then the counters: a command counted in a connection's queue
  // or pipeline has been accepted (and counted in outstanding) before, so reading
  // outstanding last keeps queued + in_flight <= outstanding under traffic too.
  using Purpose = ConnectionStatus::Purpose;
  for (const auto& group : core_->groups()) {
    for (const auto& connection : group) {
      s.per_connection.push_back(describe(*connection, Purpose::Interactive));
    }
  }
  if (detail::ClusterRouter* router = core_->cluster()) {
    // A node's role is what the slot map says now (a handshake's may be from before a
    // failover), for the seeds as well.
    std::vector<ConnectionStatus> nodes;
    for (const detail::ClusterRouter::NodeView& node : router->nodes()) {
      ConnectionStatus one = describe(*node.connection, Purpose::ClusterNode);
      one.role = node.primary   ? ConnectionStatus::Role::Primary
                 : node.replica ? ConnectionStatus::Role::Replica
                                : ConnectionStatus::Role::Unknown;  // not in the map
      one.slots = node.slots;
      one.cluster_failed = node.failed;
      nodes.push_back(std::move(one));
    }
    for (ConnectionStatus& seed : s.per_connection) {
      seed.role = ConnectionStatus::Role::Unknown;
      for (const ConnectionStatus& node : nodes) {
        if (node.endpoint == seed.endpoint) seed.role = node.role;
      }
    }
    s.per_connection.insert(s.per_connection.end(), nodes.begin(), nodes.end());
  }
  if (auto own = core_->subscription_hub()->own_connection()) {
    s.per_connection.push_back(describe(*own, Purpose::Subscription));
  }
  for (const auto& hub : core_->shard_hubs()) {
    if (auto own = hub->own_connection()) {
      s.per_connection.push_back(describe(*own, Purpose::ShardSubscription));
    }
  }
  for (const auto& connection : core_->dedicated_pool()->connections()) {
    s.per_connection.push_back(describe(*connection, Purpose::Dedicated));
  }
  learn_roles_from_routed(s.per_connection);
  // Held by the multiplexer until a primary is known (Sentinel): accepted, not yet queued.
  s.queued = core_->held_count();
  for (const ConnectionStatus& one : s.per_connection) {
    ++s.connections;
    if (one.state == ConnectionStatus::State::Ready) ++s.connected;
    s.queued += one.queued;
    s.in_flight += one.in_flight;
    ClientCacheStatus& sum = s.cache;
    const ClientCacheStatus& c = one.cache;
    sum.hits += c.hits;
    sum.misses += c.misses;
    sum.stored += c.stored;
    sum.refused += c.refused;
    sum.invalidations += c.invalidations;
    sum.flushes += c.flushes;
    sum.evictions += c.evictions;
    sum.expired += c.expired;
    sum.entries += c.entries;
    sum.bytes += c.bytes;
    sum.active = sum.active || c.active;
    if (sum.refusal.empty()) sum.refusal = c.refusal;
  }
  s.commands = c.commands.load(std::memory_order_relaxed);
  s.replies = c.replies.load(std::memory_order_relaxed);
  s.writes = c.writes.load(std::memory_order_acquire);
  // After writes: a write's commands are counted before the write is, so this keeps
  // commands_written >= writes.
  s.commands_written = c.commands_written.load(std::memory_order_relaxed);
  s.yields_for_callers = c.yields_for_callers.load(std::memory_order_relaxed);
  s.bytes_written = c.bytes_written.load(std::memory_order_relaxed);
  s.bytes_read = c.bytes_read.load(std::memory_order_relaxed);
  s.timeouts = c.timeouts.load(std::memory_order_relaxed);
  s.queue_full = c.queue_full.load(std::memory_order_relaxed);
  s.reconnects = c.reconnects.load(std::memory_order_relaxed);
  s.fire_and_forget_errors = c.fire_and_forget_errors.load(std::memory_order_relaxed);
  s.resent = c.resent.load(std::memory_order_relaxed);
  s.heartbeats = c.heartbeats.load(std::memory_order_relaxed);
  s.dead_connections = c.dead_connections.load(std::memory_order_acquire);
  s.connection_failures = c.connection_failures.load(std::memory_order_acquire);
  s.loading_waits = c.loading_waits.load(std::memory_order_relaxed);
  s.redirects = c.redirects.load(std::memory_order_relaxed);
  s.cluster_retries = c.cluster_retries.load(std::memory_order_relaxed);
  const detail::Observer& observer = core_->shared().observer();
  s.hook_errors = observer.hook_errors();
  s.slow_hooks = observer.slow_hooks();
  s.slow_commands = observer.slow_commands();
  s.outstanding = core_->shared().outstanding();
  return s;
}

std::string Multiplexer::status_text() const {
  const MultiplexerStatus s = status();
  const auto now = std::chrono::steady_clock::now();
  std::string text = "redmux " + std::string(kVersion);
  if (!config().name.empty()) text += " \"" + config().name + "\"";
  text += ": ";
  bool first = true;
  for (const ConnectionStatus& one : s.per_connection) {
    text += first ? "" : ", ";
    first = false;
    text += one.endpoint;
    if (one.purpose != ConnectionStatus::Purpose::Interactive) {
      text += " (" + std::string(to_string(one.purpose)) + ")";
    }
    if (one.role != ConnectionStatus::Role::Unknown) {
      text += " " + std::string(to_string(one.role));
      if (one.role == ConnectionStatus::Role::Primary && one.slots > 0) {
        text += " of " + std::to_string(one.slots) + " slots";
      }
    }
    text += " " + std::string(to_string(one.state));
    if (!one.last_failure.empty()) text += " (last failure: " + one.last_failure + ")";
    if (one.cluster_failed) text += " (failed, says the cluster)";
    if (one.queued > 0 || one.in_flight > 0) {
      text +=
          " queued=" + std::to_string(one.queued) + " in-flight=" + std::to_string(one.in_flight);
    }
    if (one.writes > 0) {
      char per[32];
      std::snprintf(per, sizeof per, "%.1f", one.commands_per_write());
      text += " writes=" + std::to_string(one.writes) + " (" + per + " commands/write)";
    }
    text += " last read " + ago(one.last_read, now) + ", last write " + ago(one.last_write, now);
  }
  char per_write[32];
  std::snprintf(per_write, sizeof per_write, "%.1f", s.commands_per_write());
  text += "; connections=" + std::to_string(s.connections) +
          " connected=" + std::to_string(s.connected) + " commands=" + std::to_string(s.commands) +
          " replies=" + std::to_string(s.replies) + " writes=" + std::to_string(s.writes) + " (" +
          per_write + " commands/write)" + " outstanding=" + std::to_string(s.outstanding) +
          " (queued=" + std::to_string(s.queued) + " in-flight=" + std::to_string(s.in_flight) +
          ")" + " timeouts=" + std::to_string(s.timeouts) +
          " queue-full=" + std::to_string(s.queue_full) +
          " reconnects=" + std::to_string(s.reconnects) +
          " connection-failures=" + std::to_string(s.connection_failures) +
          " resent=" + std::to_string(s.resent) +
          " dead-connections=" + std::to_string(s.dead_connections) +
          " heartbeats=" + std::to_string(s.heartbeats);
  if (core_->cluster()) {
    text += " redirects=" + std::to_string(s.redirects) +
            " cluster-retries=" + std::to_string(s.cluster_retries);
  }
  if (config().client_cache) {
    text += " cache=" + std::string(s.cache.active ? "on" : "off");
    if (!s.cache.refusal.empty()) {
      text += s.cache.active ? " (not on every connection: " : " (";
      text += s.cache.refusal + ")";
    }
    text += " cache-entries=" + std::to_string(s.cache.entries) +
            " cache-bytes=" + std::to_string(s.cache.bytes) + "/" +
            std::to_string(config().client_cache_bytes) +
            " cache-hits=" + std::to_string(s.cache.hits) +
            " cache-misses=" + std::to_string(s.cache.misses) +
            " cache-refused=" + std::to_string(s.cache.refused) +
            " cache-invalidations=" + std::to_string(s.cache.invalidations) +
            " cache-evictions=" + std::to_string(s.cache.evictions);
  }
  text +=
      " bytes-out=" + std::to_string(s.bytes_written) + " bytes-in=" + std::to_string(s.bytes_read);
  if (s.hook_errors > 0) text += " hook-errors=" + std::to_string(s.hook_errors);
  if (s.slow_hooks > 0) text += " slow-hooks=" + std::to_string(s.slow_hooks);
  if (config().slow_command_threshold.count() > 0) {
    text += " slow-commands=" + std::to_string(s.slow_commands);
  }
  text += "; " + core_->pool().describe();
  if (config().latency_histograms) {
    // One line per command name and per endpoint: time to reply, and until delivered.
    const Latencies latencies = core_->shared().observer().latencies();
    auto add = [&](const LatencyStats& stats) {
      text += "\n  latency " + stats.name + ": reply " + to_string(summarize(stats.to_reply)) +
              "; delivered " + to_string(summarize(stats.to_delivery));
    };
    for (const LatencyStats& stats : latencies.by_command) add(stats);
    for (const LatencyStats& stats : latencies.by_endpoint) add(stats);
  }
  return text;
}

Latencies Multiplexer::latencies() const {
  return core_->shared().observer().latencies();
}

void Multiplexer::on_command(CommandHook hook) {
  core_->shared().observer().set_command_hook(std::move(hook));
}

void Multiplexer::on_write(WriteHook hook) {
  core_->shared().observer().set_write_hook(std::move(hook));
}

void Multiplexer::on_batch(BatchHook hook) {
  core_->shared().observer().set_batch_hook(std::move(hook));
}

void Multiplexer::on_log(LogLevel level, LogHook hook) {
  core_->shared().observer().set_log_hook(level, std::move(hook));
}

void Multiplexer::on_error(std::function<void(const Error&)> handler) {
  core_->shared().set_error_handler(std::move(handler));
}

void Multiplexer::on_connection_event(std::function<void(const ConnectionEvent&)> handler) {
  core_->shared().set_event_handler(std::move(handler));
}

void Multiplexer::close() {
  if (core_) core_->close();
}

CloseReport Multiplexer::close(std::chrono::steady_clock::time_point deadline) {
  return core_ ? core_->close(deadline) : CloseReport{true, 0, 0};
}

}  // namespace redmux
