#include "conn/server_profile.hpp"

#include <utility>

namespace redmux::detail {
namespace {

constexpr std::string_view kRole = "ROLE";
constexpr std::string_view kInfo = "INFO";
const Arg kRoleArgs[] = {Arg(kRole)};
const Arg kInfoArgs[] = {Arg(kInfo), Arg("replication")};

bool names_replica(std::string_view role) noexcept {
  return role == "replica" || role == "slave";
}

}  // namespace

/// The reply to a probe: ROLE's ["master" | "slave" | "sentinel", …], or INFO replication's
/// text. Its one reference is the pipeline's.
class ServerProfile::Probe final : public CommandState {
 public:
  Probe(std::weak_ptr<ServerProfile> server, bool info) : server_(std::move(server)), info_(info) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (auto server = server_.lock()) {
      server->probe_pending_ = false;
      if (info_) {
        server->note_replication(reply);
      } else if (!is_error_reply(reply) && reply.size() > 1) {
        server->note(reply[1].value);
      }
    }
    publish();
  }
  void fail(Error) noexcept override {
    if (!claim()) return;
    if (auto server = server_.lock()) server->probe_pending_ = false;
    publish();
  }

 private:
  std::weak_ptr<ServerProfile> server_;
  bool info_;
};

ServerIdentity ServerProfile::identity() const {
  std::lock_guard lock(identity_mutex_);
  return identity_;
}

std::string ServerProfile::replication_state() const {
  std::lock_guard lock(identity_mutex_);
  return replication_state_;
}

std::string ServerProfile::master() const {
  std::lock_guard lock(identity_mutex_);
  return master_;
}

void ServerProfile::set_health(ReplicaHealth health, std::string reason) {
  {
    std::lock_guard lock(identity_mutex_);
    replication_state_ = std::move(reason);
  }
  health_.store(health, std::memory_order_release);
}

bool ServerProfile::adopt(const ServerIdentity& identity) {
  const bool replica = names_replica(identity.role);
  {
    std::lock_guard lock(identity_mutex_);
    identity_ = identity;
  }
  databases_.store(identity.databases, std::memory_order_release);
  select_.store(identity.select_refusal.empty() ? SelectAnswer::Accepted : SelectAnswer::Refused,
                std::memory_order_release);
  in_zone_.store(
      !config_.availability_zone.empty() && identity.availability_zone == config_.availability_zone,
      std::memory_order_release);
  // A replica serves reads only once its INFO replication says it is in sync (a server that
  // restarts and resynchronises answers from its old data set meanwhile).
  awaiting_ = replica && asks_info();
  stalled_ = false;  // a new session's answers are its own
  if (awaiting_) {
    set_health(ReplicaHealth::Unfit, "its first INFO replication is not answered yet");
  } else {
    set_health(ReplicaHealth::InSync, "");
  }
  return is_replica_.exchange(replica, std::memory_order_acq_rel) != replica;
}

void ServerProfile::retargeted() {
  // Another server: not known to be a primary (nor a replica in sync) until it answers.
  is_replica_.store(true, std::memory_order_release);
  refuses_stale_reads_.store(false, std::memory_order_relaxed);
  follows_.store(kNoServer, std::memory_order_release);
  {
    std::lock_guard lock(identity_mutex_);
    identity_.role.clear();  // status() must not give it the role of the server left behind
    master_.clear();         // nor its primary
  }
  set_health(ReplicaHealth::Unfit, "not connected to this server yet");
}

void ServerProfile::note(std::string_view role) {
  const bool replica = names_replica(role);
  const bool was_replica = is_replica_.exchange(replica, std::memory_order_acq_rel);
  {
    std::lock_guard lock(identity_mutex_);
    identity_.role = replica ? "replica" : std::string(role);
  }
  if (was_replica != replica && changed_) changed_();
}

void ServerProfile::note_replication(NodeSpan reply) {
  awaiting_ = false;
  if (reply.empty() || is_error_reply(reply)) {
    // Refused (an ACL without INFO): the role comes from ROLE from now on, and a replica is
    // trusted as before the check existed.
    info_refused_ = true;
    set_health(ReplicaHealth::InSync, "");
    if (answered_) answered_(/*ask_again=*/true);
    return;
  }
  if (const std::optional<ReplicationInfo> info = parse_replication_info(reply[0].value)) {
    ReplicaVerdict verdict;
    if (info->role == "slave") verdict = judge_replica(*info, config_.replica_max_lag);
    if (std::exchange(stalled_, false) && info->role == "slave" &&
        verdict.health != ReplicaHealth::Unfit) {
      // A replica that was stopped answers from what it had when it stopped, its link to the
      // primary reported up, until it has read the primary's backlog: it serves reads again
      // from its next answer on (a second later), not from this one.
      verdict.health = ReplicaHealth::Unfit;
      verdict.reason =
          "answering again after a stall; it serves reads from its next INFO replication on";
    }
    const bool replica = info->role == "slave" && !info->master_host.empty();
    {
      std::lock_guard lock(identity_mutex_);
      master_ = replica ? info->master_host + ":" + std::to_string(info->master_port) : "";
    }
    follows_.store(replica && locate_ ? locate_(info->master_host, info->master_port) : kNoServer,
                   std::memory_order_release);
    // Before the role: a changed hook that routes (a replica promoted) sees the new health.
    set_health(verdict.health, std::move(verdict.reason));
    note(info->role);
  }
  if (answered_) answered_(/*ask_again=*/false);
}

std::optional<OwnCommand> ServerProfile::begin_probe(Clock::time_point now) {
  if (probe_pending_) {
    if (asks_info() && is_replica() && now - probe_sent_ >= kProbeOverdue &&
        health() != ReplicaHealth::Unfit) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - probe_sent_);
      set_health(ReplicaHealth::Unfit, "its INFO replication has gone unanswered for " +
                                           std::to_string(waited.count()) + " ms");
      stalled_ = true;
    }
    return std::nullopt;
  }
  probe_pending_ = true;
  probe_sent_ = now;
  const bool info = asks_info();
  OwnCommand probe;
  probe.command =
      own_command(info ? kInfo : kRole, PendingKind::Internal, new Probe(weak_from_this(), info));
  probe.args = info ? std::span<const Arg>(kInfoArgs) : std::span<const Arg>(kRoleArgs);
  return probe;
}

}  // namespace redmux::detail
