// SentinelMonitor: redmux's side of Redis Sentinel for one multiplexer (serviceName=). It asks
// the Sentinels where the service's primary and replicas are, then keeps the multiplexer's
// groups of connections (group 0: the primary, the others: replicas) pointed at them across
// failovers, without the user doing anything.
//
// Asking: one Sentinel at a time — in configuration order the first time, then starting with
// the one that answered last — over a short-lived ordinary Connection that authenticates with
// sentinelUser/sentinelPassword: SENTINEL GET-MASTER-ADDR-BY-NAME, then SENTINEL REPLICAS. A
// Sentinel that cannot be reached, refuses, does not know the service or does not answer
// within its share of the round is skipped; when every one fails, the error names each and
// why. A round lasts at most syncTimeout: each Sentinel gets what is left of it divided by
// the Sentinels not asked yet, so one that is frozen (it accepts, never answers) cannot spend
// the whole of connect()'s wait.
//
// Following: one subscriber connection per Sentinel (only the leader of a failover, which can
// be any of them, publishes +selected-slave) listening to the channels of kSentinelChannels.
// What each message and answer moves is decided by SentinelFollow (topology/sentinel_follow.hpp,
// sans-IO); this monitor performs it: retargets the groups' connections, asks again, asks a
// group's server its role. Until the promotion, writes fail as not sent (the new primary is
// still a replica; MuxCore::route()).
//
// Asking again: every kRecheck (a message may be missed while a subscriber reconnects), after
// a subscriber connection reconnects, every second while the primary the Sentinels named says
// it is a replica, every second while no Sentinel has answered yet, every second for
// kWatchAfterRoleChange after a data server's role changed (role_changed()), and every second
// while the Sentinels refuse the subscriptions (an ACL user without the channels: reported
// once per session through the failure hook).
//
// Threads: resolve(), follow() and close() are safe from any thread. The rest runs in handlers
// posted to one I/O thread of the pool: connections' callbacks only parse and post, so none
// runs under mutex_ (which guards the state against close()). Nothing here ever blocks.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conn/shared_context.hpp"
#include "net/connection.hpp"
#include "net/timer.hpp"
#include "redmux/config.hpp"
#include "redmux/io_pool.hpp"
#include "topology/sentinel_follow.hpp"
#include "topology/sentinel_reply.hpp"

namespace redmux::detail {

class SentinelMonitor : public std::enable_shared_from_this<SentinelMonitor> {
 public:
  /// What a Sentinel said about the service.
  struct Answer {
    Endpoint primary;
    std::vector<Endpoint> replicas;  ///< without those it flags down or disconnected
  };
  using Groups = std::vector<std::vector<std::shared_ptr<Connection>>>;

  static constexpr std::chrono::seconds kRecheck{10};
  static constexpr std::chrono::seconds kWatchAfterRoleChange{30};

  /// `config`: the user's (service_name set; the endpoints are the Sentinels). `tls`: the
  /// TLS settings when ssl=true — the Sentinels are reached with TLS too.
  SentinelMonitor(const Config& config, std::shared_ptr<IoPool> pool,
                  std::shared_ptr<TlsContext> tls);
  ~SentinelMonitor();
  SentinelMonitor(const SentinelMonitor&) = delete;
  SentinelMonitor& operator=(const SentinelMonitor&) = delete;

  /// Asks the Sentinels once, each in turn until one answers. `done` runs once, on an I/O
  /// thread, with the answer or an error (errc::connection_failed, or authentication_failed
  /// when every Sentinel refused the credentials) naming each Sentinel and why it failed.
  void resolve(std::function<void(Result<Answer>)> done);

  /// What resolve() has found so far, for an error that cannot wait for it (connect()'s
  /// syncTimeout): each Sentinel asked and why it failed, the one being asked and for how
  /// long, those not asked yet; or, once a Sentinel answered, what it named.
  std::string progress();

  /// From now on moves `groups` (group 0 the primary, connections of one group together) to
  /// follow the service. `primary_moved` runs on an I/O thread each time group 0 moves.
  /// `start`: set when no Sentinel answered resolve() — group 0 points at unresolved() and
  /// the groups are not started; it runs once the first answer has moved group 0.
  void follow(Groups groups, std::function<void(const Endpoint&)> primary_moved,
              std::function<void()> start);
  /// A data server's role changed (a replica promoted, a primary demoted): asks the
  /// Sentinels now and every second for kWatchAfterRoleChange. Any thread.
  void role_changed();
  /// While following: runs (on an I/O thread) when a round of asking ended with no Sentinel
  /// answering, once per distinct failure until a round succeeds; and when a Sentinel refuses
  /// the subscriptions, once per session of its subscriber connection.
  void set_failure_hook(std::function<void(const Error&)> hook);

  /// Shuts the Sentinel connections down (`closed` runs once for each when it has) and stops
  /// asking; a resolve() still waiting gets errc::shut_down. Returns the number of
  /// connections shut down.
  std::size_t close(const std::function<void()>& closed);

  /// The stand-in for the primary while no Sentinel has answered (never connected to).
  static Endpoint unresolved(std::string_view service);
  /// "primary host:port, replicas host:port, …" (or "replicas none").
  static std::string describe(const Answer& answer);

 private:
  class Query;  ///< one SENTINEL command in flight (sentinel.cpp)
  using After = std::vector<std::function<void()>>;  ///< run once mutex_ is released

  /// Runs `task` on io_ if this monitor is still alive then.
  void post(std::function<void(SentinelMonitor&)> task);

  // --- asking (REQUIRES: mutex_) ---
  void ask_locked();
  void try_sentinel_locked();
  void attempt_failed_locked(const Error& error, After& after);
  const Endpoint& current_sentinel_locked() const;
  void end_round_locked(Result<Answer> result, After& after);
  // posted from the query connection
  void on_query_connected(std::uint64_t attempt, const Error& error);
  void on_master(std::uint64_t attempt, Result<Endpoint> primary);
  void on_replicas(std::uint64_t attempt, Result<std::vector<Endpoint>> replicas);
  void on_share_over(std::uint64_t attempt);

  // --- following (REQUIRES: mutex_) ---
  void apply_locked(const Answer& answer, After& after);
  void move_locked(const std::vector<Retarget>& moves, After& after);
  bool primary_is_replica_locked() const;
  void start_subscribers_locked();
  void arm_tick_locked();
  // posted
  void on_event(const SentinelEvent& event);
  void on_subscriber_ready(std::size_t index);
  void on_subscribe_refused(std::size_t index, const Error& error);
  void on_tick();
  bool hears_events_locked() const;  ///< a subscriber is ready and was not refused
  bool any_refused_locked() const;

  const Config config_;                              ///< the user's: endpoints are the Sentinels
  std::shared_ptr<SharedContext> sentinel_context_;  ///< Sentinel credentials, database 0
  std::shared_ptr<IoPool> pool_;
  std::shared_ptr<TlsContext> tls_;
  asio::io_context& io_;

  std::mutex mutex_;
  bool closed_ = false;
  Timer tick_;        ///< touched under mutex_ only
  Timer share_over_;  ///< the current Sentinel's share of the round; under mutex_ only

  // asking
  std::function<void(Result<Answer>)> resolved_;  ///< resolve()'s handler, until called
  bool asking_ = false;
  bool ask_again_ = false;     ///< asked for while a round ran: one more round after it
  std::size_t preferred_ = 0;  ///< the Sentinel that answered last (rounds start there)
  std::size_t first_ = 0;      ///< where the current round started
  std::size_t tried_ = 0;      ///< Sentinels tried in the current round
  std::uint64_t attempt_ = 0;  ///< bumps per Sentinel tried: stale callbacks check it
  std::shared_ptr<Connection> query_;
  std::optional<Endpoint> answered_primary_;  ///< the current attempt's first reply
  std::vector<std::string> failures_;         ///< why each Sentinel of the round failed
  bool all_auth_failures_ = true;
  Clock::time_point last_ask_{};  ///< when the current (or last) round started
  Clock::time_point attempt_started_{};
  std::string named_;  ///< what the last answer named ("primary …, replicas …")
  Clock::time_point next_recheck_{};

  // following
  bool following_ = false;
  Groups groups_;
  SentinelFollow follow_;  ///< where each group points; what answers and events move
  std::function<void(const Endpoint&)> primary_moved_;
  std::function<void()> start_;               ///< set while group 0 points at unresolved()
  std::function<void(const Error&)> failed_;  ///< set_failure_hook()
  std::string failure_reported_;              ///< the last failure given to failed_
  std::vector<std::shared_ptr<Connection>> subscribers_;
  std::vector<std::size_t> ready_counts_;  ///< times each subscriber became ready
  std::vector<bool> refused_;              ///< its current session's SUBSCRIBE was refused
  Clock::time_point watch_until_{};        ///< asks every second until then (role_changed())
};

}  // namespace redmux::detail
