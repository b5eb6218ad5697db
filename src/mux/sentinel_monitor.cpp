#include "mux/sentinel_monitor.hpp"

#include "conn/callback_state.hpp"
#include "net/io_load.hpp"
#include "resp/classify.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

constexpr std::chrono::seconds kTick{1};
constexpr std::string_view kSentinel = "SENTINEL";
constexpr std::string_view kSubscribe = "SUBSCRIBE";

/// The Sentinels' own connection settings: their credentials, not the data servers', and
/// database 0 (a Sentinel has no SELECT). A Sentinel that does not answer is skipped for the
/// next one rather than retried.
Config sentinel_config(const Config& config) {
  Config sentinel = config;
  sentinel.user = config.sentinel_user;
  sentinel.password = config.sentinel_password;
  sentinel.credentials = config.sentinel_credentials;
  sentinel.sentinel_user.clear();
  sentinel.sentinel_password.clear();
  sentinel.sentinel_credentials = {};
  sentinel.service_name.clear();
  sentinel.default_database = 0;
  sentinel.connect_retry = 0;
  sentinel.connections_per_endpoint = 1;
  sentinel.backlog_policy = BacklogPolicy::Queue;
  return sentinel;
}

/// SUBSCRIBE to each channel of kSentinelChannels, one command per name, in one write.
/// `refused` runs (on the connection's I/O thread) for each one the Sentinel refuses.
void subscribe_channels(Connection& connection, const std::function<void(Error)>& refused) {
  std::string bytes;
  std::vector<PendingCommand> commands;
  for (std::string_view channel : kSentinelChannels) {
    // A refusal (an ACL without the channel: NOPERM) goes to `refused`; a confirmation is
    // not one. The state's one reference goes to the pipeline.
    auto on_reply = [refused, channel](NodeSpan reply) {
      if (!is_error_reply(reply)) return;
      try {
        // "SUBSCRIBE +switch-master: NOPERM this user has no permissions …"
        refused(Error(errc::server_error,
                      "SUBSCRIBE " + std::string(channel) + ": " + std::string(reply[0].value)));
      } catch (...) {  // out of memory building the message: the next reconnect asks again
      }
    };
    PendingCommand pending = pubsub_command(kSubscribe, resp::PushKind::Subscribe, 1,
                                            new CallbackState(std::move(on_reply), nullptr));
    pending.bytes_begin = bytes.size();
    const Arg args[] = {Arg(kSubscribe), Arg(channel)};
    resp::encode_command(bytes, args);
    pending.bytes_end = bytes.size();
    commands.push_back(pending);
  }
  connection.submit_batch(-1, bytes, commands);
}

/// A message on a subscriber connection: a RESP3 push, or a RESP2 array (subscriber mode),
/// ["message", channel, payload]. Nullopt for anything else (confirmations, other services).
std::optional<SentinelEvent> event_of(NodeSpan push, std::string_view service) {
  if (push.size() != 4 || push[0].size != 3 || resp::push_kind(push) != resp::PushKind::Message) {
    return std::nullopt;
  }
  std::optional<SentinelEvent> event = parse_sentinel_event(push[2].value, push[3].value);
  if (!event || event->service != service) return std::nullopt;
  return event;
}

}  // namespace

/// One query to a Sentinel: parses the reply on the connection's I/O thread (the nodes are
/// valid only during deliver()) and hands the result to the monitor's thread.
class SentinelMonitor::Query final : public CommandState {
 public:
  enum class Asks { Primary, Replicas };
  Query(std::weak_ptr<SentinelMonitor> monitor, std::uint64_t attempt, Asks asks,
        std::string service)
      : monitor_(std::move(monitor)),
        attempt_(attempt),
        asks_(asks),
        service_(std::move(service)) {}

  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (asks_ == Asks::Primary) {
      hand_over(parse_master_address(reply, service_), Error());
    } else {
      hand_over(Error(), parse_replicas(reply, service_));
    }
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    hand_over(error, error);
    publish();
  }

 private:
  void hand_over(Result<Endpoint> primary, Result<std::vector<Endpoint>> replicas) {
    auto monitor = monitor_.lock();
    if (!monitor) return;
    const std::uint64_t attempt = attempt_;
    if (asks_ == Asks::Primary) {
      monitor->post([attempt, primary = std::move(primary)](SentinelMonitor& m) mutable {
        m.on_master(attempt, std::move(primary));
      });
    } else {
      monitor->post([attempt, replicas = std::move(replicas)](SentinelMonitor& m) mutable {
        m.on_replicas(attempt, std::move(replicas));
      });
    }
  }

  std::weak_ptr<SentinelMonitor> monitor_;
  std::uint64_t attempt_;
  Asks asks_;
  std::string service_;
};

SentinelMonitor::SentinelMonitor(const Config& config, std::shared_ptr<IoPool> pool,
                                 std::shared_ptr<TlsContext> tls)
    : config_(config),
      sentinel_context_(std::make_shared<SharedContext>(sentinel_config(config), true)),
      pool_(std::move(pool)),
      tls_(std::move(tls)),
      io_(pool_->next_work_context()),
      tick_(io_),
      share_over_(io_) {}

SentinelMonitor::~SentinelMonitor() {
  close(nullptr);
}

Endpoint SentinelMonitor::unresolved(std::string_view service) {
  // A Unix socket "path" that is only ever printed: to_string() shows it as it is.
  Endpoint endpoint;
  endpoint.unix_path =
      "(primary of Sentinel service \"" + std::string(service) + "\": not named by a Sentinel yet)";
  return endpoint;
}

void SentinelMonitor::post(std::function<void(SentinelMonitor&)> task) {
  post_to(io_, [weak = weak_from_this(), task = std::move(task)] {
    if (auto self = weak.lock()) task(*self);
  });
}

// ---------------------------------------------------------------------------------------
// Asking

void SentinelMonitor::resolve(std::function<void(Result<Answer>)> done) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  resolved_ = std::move(done);
  ask_locked();
}

void SentinelMonitor::ask_locked() {
  if (closed_) return;
  if (asking_) {
    ask_again_ = true;
    return;
  }
  asking_ = true;
  ask_again_ = false;
  first_ = preferred_;
  tried_ = 0;
  failures_.clear();
  all_auth_failures_ = true;
  last_ask_ = Clock::now();
  try_sentinel_locked();
}

std::string SentinelMonitor::describe(const Answer& answer) {
  std::string text = "primary " + answer.primary.to_string() + ", replicas ";
  if (answer.replicas.empty()) return text + "none";
  for (std::size_t i = 0; i < answer.replicas.size(); ++i) {
    text += (i == 0 ? "" : ", ") + answer.replicas[i].to_string();
  }
  return text;
}

std::string SentinelMonitor::progress() {
  std::lock_guard lock(mutex_);
  const std::string service = "service \"" + config_.service_name + "\"";
  if (!asking_ && !named_.empty()) {
    return "the Sentinels name " + named_ + " for " + service + "; not all connected yet";
  }
  std::string text = "asking the Sentinels for the primary of " + service;
  for (const std::string& failure : failures_) text += "; " + failure;
  if (!asking_) return text;
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - attempt_started_);
  text += "; " + current_sentinel_locked().to_string() + ": asked " +
          std::to_string(waited.count()) + " ms ago, no answer yet";
  const std::size_t count = config_.endpoints.size();
  for (std::size_t i = tried_ + 1; i < count; ++i) {
    text += (i == tried_ + 1 ? "; not asked yet: " : ", ") +
            config_.endpoints[(first_ + i) % count].to_string();
  }
  return text;
}

const Endpoint& SentinelMonitor::current_sentinel_locked() const {
  return config_.endpoints[(first_ + tried_) % config_.endpoints.size()];
}

void SentinelMonitor::try_sentinel_locked() {
  const Endpoint& sentinel = current_sentinel_locked();
  const std::uint64_t attempt = ++attempt_;
  answered_primary_.reset();
  // Its share: what is left of the round's syncTimeout over the Sentinels not asked yet.
  attempt_started_ = Clock::now();
  const Clock::time_point round_ends = last_ask_ + config_.sync_timeout;
  const auto left = static_cast<Clock::rep>(config_.endpoints.size() - tried_);
  share_over_.wait_until(attempt_started_ + (round_ends - attempt_started_) / left,
                         [weak = weak_from_this(), attempt](bool fired) {
                           if (!fired) return;
                           if (auto self = weak.lock()) self->on_share_over(attempt);
                         });
  asio::io_context& io = pool_->next_context();
  query_ = std::make_shared<Connection>(io, pool_->load_of(io), sentinel_context_, sentinel, tls_);
  query_->start([weak = weak_from_this(), attempt](const Error& error) {
    if (auto self = weak.lock()) {
      self->post([attempt, error](SentinelMonitor& m) { m.on_query_connected(attempt, error); });
    }
  });
}

void SentinelMonitor::on_query_connected(std::uint64_t attempt, const Error& error) {
  After after;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || attempt != attempt_ || !query_) return;
    if (error) {
      attempt_failed_locked(error, after);
    } else {
      const auto deadline = Clock::now() + config_.async_timeout;
      struct Ask {
        std::string_view subcommand;
        Query::Asks asks;
      };
      // The newer name where the Sentinel has it (Valkey 8); REPLICAS is the same in both.
      const Ask asks[] = {{primary_address_subcommand(query_->identity()), Query::Asks::Primary},
                          {"REPLICAS", Query::Asks::Replicas}};
      for (const Ask& ask : asks) {
        const Arg args[] = {Arg(kSentinel), Arg(ask.subcommand), Arg(config_.service_name)};
        PendingCommand command;
        command.name = kSentinel;
        command.kind = PendingKind::Caller;  // a deadline: a Sentinel that stalls is skipped
        command.deadline = deadline;
        command.timeout_ms = static_cast<std::uint32_t>(config_.async_timeout.count());
        command.counted = false;
        command.state = new Query(weak_from_this(), attempt, ask.asks,
                                  config_.service_name);  // its one reference: the connection's
        query_->submit(-1, args, command);
      }
    }
  }
  for (auto& task : after) task();
}

void SentinelMonitor::on_master(std::uint64_t attempt, Result<Endpoint> primary) {
  After after;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || attempt != attempt_) return;
    if (!primary) {
      attempt_failed_locked(primary.error(), after);
    } else {
      answered_primary_ = std::move(*primary);
    }
  }
  for (auto& task : after) task();
}

void SentinelMonitor::on_replicas(std::uint64_t attempt, Result<std::vector<Endpoint>> replicas) {
  After after;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || attempt != attempt_ || !answered_primary_) return;
    // The primary is what matters: a Sentinel that names it but refuses REPLICAS (an ACL that
    // allows only GET-MASTER-ADDR-BY-NAME) still answered.
    Answer answer;
    answer.primary = std::move(*answered_primary_);
    if (replicas) {
      for (Endpoint& replica : *replicas) {
        if (replica != answer.primary) answer.replicas.push_back(std::move(replica));
      }
    }
    preferred_ = (first_ + tried_) % config_.endpoints.size();
    query_->shutdown();
    query_.reset();
    ++attempt_;  // whatever else this connection reports is stale
    end_round_locked(std::move(answer), after);
  }
  for (auto& task : after) task();
}

void SentinelMonitor::on_share_over(std::uint64_t attempt) {
  After after;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || attempt != attempt_ || !asking_) return;
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - attempt_started_);
    attempt_failed_locked(
        Error(errc::timeout, "no answer within " + std::to_string(waited.count()) +
                                 " ms, its share of syncTimeout=" +
                                 std::to_string(config_.sync_timeout.count()) + " ms"),
        after);
  }
  for (auto& task : after) task();
}

void SentinelMonitor::attempt_failed_locked(const Error& error, After& after) {
  const Endpoint& sentinel = current_sentinel_locked();
  std::string why = sentinel.to_string() + ": " + error.message();
  if (error.code() == errc::authentication_failed) {
    // The handshake's hint names the data servers' options; a Sentinel is sent its own.
    static constexpr std::string_view kDataHint = " (check user= and password=)";
    if (const std::size_t at = why.find(kDataHint); at != std::string::npos) {
      why.erase(at, kDataHint.size());
    }
    why +=
        " — check sentinelUser= and sentinelPassword=: Sentinels are sent those, not user= "
        "and password=";
  } else {
    all_auth_failures_ = false;
  }
  failures_.push_back(std::move(why));
  if (query_) query_->shutdown();
  query_.reset();
  ++attempt_;
  if (++tried_ < config_.endpoints.size()) {
    try_sentinel_locked();
    return;
  }
  std::string message = "asked " + std::to_string(config_.endpoints.size()) +
                        " Sentinel(s) for the primary of service \"" + config_.service_name +
                        "\" and none answered";
  for (const std::string& failure : failures_) message += "; " + failure;
  end_round_locked(Error(all_auth_failures_ ? errc::authentication_failed : errc::connection_failed,
                         std::move(message)),
                   after);
}

void SentinelMonitor::end_round_locked(Result<Answer> result, After& after) {
  asking_ = false;
  share_over_.cancel();
  if (result) named_ = describe(*result);
  next_recheck_ = Clock::now() + kRecheck;
  if (resolved_) {
    after.push_back([done = std::move(resolved_), result = std::move(result)]() mutable {
      done(std::move(result));
    });
    resolved_ = nullptr;
  } else if (following_ && result) {
    apply_locked(*result, after);
  } else if (following_ && failed_ && result.error().message() != failure_reported_) {
    failure_reported_ = result.error().message();
    after.push_back([hook = failed_, error = result.error()] { hook(error); });
  }
  if (result) failure_reported_.clear();
  if (ask_again_) ask_locked();
}

// ---------------------------------------------------------------------------------------
// Following

void SentinelMonitor::follow(Groups groups, std::function<void(const Endpoint&)> primary_moved,
                             std::function<void()> start) {
  std::lock_guard lock(mutex_);
  if (closed_ || following_) return;
  following_ = true;
  groups_ = std::move(groups);
  std::vector<Endpoint> targets;
  for (const auto& group : groups_) targets.push_back(group.front()->endpoint());
  follow_ = SentinelFollow(std::move(targets));
  primary_moved_ = std::move(primary_moved);
  start_ = std::move(start);
  next_recheck_ = Clock::now() + kRecheck;
  start_subscribers_locked();
  post([](SentinelMonitor& m) {
    std::lock_guard lock(m.mutex_);
    if (!m.closed_) m.arm_tick_locked();
  });
}

void SentinelMonitor::set_failure_hook(std::function<void(const Error&)> hook) {
  std::lock_guard lock(mutex_);
  failed_ = std::move(hook);
}

void SentinelMonitor::start_subscribers_locked() {
  for (std::size_t i = 0; i < config_.endpoints.size(); ++i) {
    asio::io_context& io = pool_->next_context();
    auto subscriber = std::make_shared<Connection>(io, pool_->load_of(io), sentinel_context_,
                                                   config_.endpoints[i], tls_);
    subscriber->set_subscriber_mode(true);
    std::weak_ptr<SentinelMonitor> weak = weak_from_this();
    subscriber->set_push_handler([weak, service = config_.service_name](NodeSpan push) {
      std::optional<SentinelEvent> event = event_of(push, service);
      if (!event) return;
      if (auto self = weak.lock()) {
        self->post([event = std::move(*event)](SentinelMonitor& m) { m.on_event(event); });
      }
    });
    auto refused = [weak, i](Error error) {
      if (auto self = weak.lock()) {
        self->post([i, error = std::move(error)](SentinelMonitor& m) {
          m.on_subscribe_refused(i, error);
        });
      }
    };
    subscriber->set_ready_hook([weak, i, refused](Connection& ready) {
      // Before anything else is written on the new connection.
      subscribe_channels(ready, refused);
      if (auto self = weak.lock()) {
        self->post([i](SentinelMonitor& m) { m.on_subscriber_ready(i); });
      }
    });
    subscriber->start([](const Error&) {});  // it reconnects in the background
    subscribers_.push_back(std::move(subscriber));
    ready_counts_.push_back(0);
    refused_.push_back(false);
  }
}

void SentinelMonitor::apply_locked(const Answer& answer, After& after) {
  move_locked(follow_.on_answer(answer.primary, answer.replicas, Clock::now()), after);
}

void SentinelMonitor::move_locked(const std::vector<Retarget>& moves, After& after) {
  for (const Retarget& move : moves) {
    for (const auto& connection : groups_[move.group]) connection->retarget(move.to);
    if (move.group == 0 && primary_moved_) {
      after.push_back([hook = primary_moved_, to = move.to] { hook(to); });
    }
  }
  // Posted after the retargets to the same connections, so they connect to the new server.
  if (start_ && follow_.targets().front() != unresolved(config_.service_name)) {
    after.push_back(std::move(start_));
    start_ = nullptr;
  }
}

bool SentinelMonitor::primary_is_replica_locked() const {
  if (groups_.empty() || start_) return false;
  const Connection& primary = *groups_.front().front();
  return primary.state() == ConnectionState::Ready && primary.is_replica();
}

void SentinelMonitor::on_event(const SentinelEvent& event) {
  After after;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || !following_) return;
    const SentinelFollow::Reaction reaction = follow_.on_event(event, Clock::now());
    move_locked(reaction.moves, after);
    if (reaction.ask) ask_locked();
    for (std::size_t g : reaction.check_roles) {
      for (const auto& connection : groups_[g]) connection->check_role();
    }
  }
  for (auto& task : after) task();
}

void SentinelMonitor::on_subscribe_refused(std::size_t index, const Error& error) {
  std::function<void(const Error&)> report;
  Error said;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || refused_[index]) return;  // the first refused channel of this session
    refused_[index] = true;
    if (!failed_) return;
    report = failed_;
    said =
        Error(error.code(),
              "Sentinel " + config_.endpoints[index].to_string() + " refused " + error.message() +
                  ": redmux does not hear of failovers from it, and asks the Sentinels every "
                  "second instead while no Sentinel's subscription is taken; give the "
                  "Sentinel user the channels +selected-slave, +switch-master, "
                  "-failover-abort-slave-timeout and +convert-to-slave (ACL SETUSER <user> "
                  "&* or &<channel>)");
  }
  report(said);
}

void SentinelMonitor::role_changed() {
  post([](SentinelMonitor& m) {
    std::lock_guard lock(m.mutex_);
    if (m.closed_ || !m.following_) return;
    m.watch_until_ = Clock::now() + kWatchAfterRoleChange;
    if (!m.asking_) m.ask_locked();
  });
}

bool SentinelMonitor::hears_events_locked() const {
  for (std::size_t i = 0; i < subscribers_.size(); ++i) {
    if (!refused_[i] && subscribers_[i]->state() == ConnectionState::Ready) return true;
  }
  return false;
}

bool SentinelMonitor::any_refused_locked() const {
  for (bool refused : refused_) {
    if (refused) return true;
  }
  return false;
}

void SentinelMonitor::on_subscriber_ready(std::size_t index) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  // A new session subscribes again: a refusal is reported again if the ACL still says no.
  // The flag is cleared here, after that session's SUBSCRIBEs were written, and a refusal's
  // handler is posted after this one (the replies come later on the same connection).
  refused_[index] = false;
  // After a reconnect: a failover may have been announced while this one was away.
  if (++ready_counts_[index] > 1) ask_locked();
}

void SentinelMonitor::arm_tick_locked() {
  tick_.wait_for(kTick, call_when_fired(weak_from_this(), &SentinelMonitor::on_tick));
}

void SentinelMonitor::on_tick() {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  const Clock::time_point now = Clock::now();
  if (follow_.hold_ended(now)) ask_locked();
  // Every second: while the primary the Sentinels named says it is a replica; for a while
  // after a data server's role changed (a promotion the Sentinels may announce late, or not
  // at all to redmux); while every Sentinel that answers refuses the subscriptions.
  const bool often = primary_is_replica_locked() || now < watch_until_ ||
                     (any_refused_locked() && !hears_events_locked());
  if (!asking_ && (start_ || now >= next_recheck_ || (often && now - last_ask_ >= kTick))) {
    ask_locked();
  }
  arm_tick_locked();
}

std::size_t SentinelMonitor::close(const std::function<void()>& closed) {
  std::vector<std::shared_ptr<Connection>> connections;
  std::function<void(Result<Answer>)> resolved;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return 0;
    closed_ = true;
    tick_.cancel();
    share_over_.cancel();
    connections = std::move(subscribers_);
    if (query_) connections.push_back(std::move(query_));
    resolved = std::move(resolved_);
    resolved_ = nullptr;
    groups_.clear();
    primary_moved_ = nullptr;
    start_ = nullptr;
  }
  for (const auto& connection : connections) connection->shutdown(closed);
  if (resolved) {
    resolved(Error(errc::shut_down, "asking the Sentinels for service \"" + config_.service_name +
                                        "\": the multiplexer was closed"));
  }
  return connections.size();
}

}  // namespace redmux::detail
