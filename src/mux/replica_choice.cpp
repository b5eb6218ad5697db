// MuxCore's choice among a primary and its replicas (standalone endpoints, or Sentinel's
// groups): which server a command's flags and the servers' roles and replica health allow
// (roles(), by the rules of topology/server_roles.hpp), where a command held through a failover
// goes (place_held()), and which connection's queued commands may leave it when it loses its server
// (takes_from()).
#include "mux/core.hpp"

namespace redmux::detail {

static_assert(ServerProfile::kNoServer == ServerView::kNotAmong,
              "a connection's follows() is a ServerView's follows as it is");

ServerView MuxCore::view_of(const Connection& connection) {
  ServerView view;
  view.replica = connection.is_replica();
  view.ready = connection.state() == ConnectionState::Ready;
  const ReplicaHealth health = view.replica ? connection.replica_health() : ReplicaHealth::InSync;
  view.in_sync = health == ReplicaHealth::InSync;
  view.primary_lost = health == ReplicaHealth::PrimaryLost;
  view.in_zone = view.replica && connection.in_zone();
  view.follows = view.replica ? connection.follows() : ServerView::kNotAmong;
  return view;
}

bool MuxCore::group_follows_another_primary(std::size_t group, std::size_t primary) const {
  return follows_another_primary(view_of(*groups_[group].front()), primary, groups_.size(),
                                 [&](std::size_t g) { return view_of(*groups_[g].front()); });
}

std::string MuxCore::follows_text(const Connection& connection) {
  return "it replicates from " + connection.master() +
         ", which says it is a primary but is not the one written to (a failover in progress?)";
}

bool MuxCore::serves_replica_reads(const Connection& connection, bool primary_reachable) {
  return detail::serves_replica_reads(view_of(connection), primary_reachable);
}

Roles MuxCore::roles(bool want_replica, std::size_t exclude) const {
  return choose_roles(
      groups_.size(), [&](std::size_t g) { return view_of(*groups_[g].front()); },
      sentinel_ != nullptr, want_replica, exclude,
      [&] { return replica_cursor_.fetch_add(1, std::memory_order_relaxed); });
}

std::string MuxCore::why_no_primary() const {
  if (sentinel_) {
    const Connection& primary = *groups_.front().front();
    return primary.describe_endpoint() + ", the primary the Sentinels name, " +
           (primary.state() == ConnectionState::Ready ? "is a replica" : "is not connected yet") +
           " (a failover in progress)";
  }
  return "every endpoint is a replica and no primary is known (a failover in progress?)";
}

HeldCommands::Target MuxCore::place_held(const HeldCommands::Entry& entry) {
  HeldCommands::Target target;
  const std::size_t none = groups_.size();
  const ReplicaUse use = entry.command.replica_use;
  const Roles roles = this->roles(use != ReplicaUse::None, entry.from_group);
  const auto at = [&](std::size_t g) {
    const auto& group = groups_[g];
    return group[entry.index % group.size()];
  };
  if ((use == ReplicaUse::Prefer || use == ReplicaUse::Demand) && roles.replica != none) {
    target.connection = at(roles.replica);
  } else if (use == ReplicaUse::Demand) {
    // As route() refuses DemandReplica when no replica is connected: at once, not after the
    // deadline spent queued for a server that cannot be reached.
    const std::string from = entry.from_group < none
                                 ? groups_[entry.from_group].front()->describe_endpoint()
                                 : std::string("its replica");
    target.error =
        Error(errc::not_sent, std::string(entry.command.name) + " was not sent: " + from +
                                  " is not connected and no other replica is in "
                                  "sync (DemandReplica); safe to retry");
  } else if (use == ReplicaUse::Fallback && !roles.primary_ready && roles.replica != none) {
    // A PreferMaster read with nothing waiting ahead of it, while the primary is not known
    // or not connected (as route() places it).
    target.connection = at(roles.replica);
  } else if (roles.primary != none) {
    target.connection = at(roles.primary);
  } else if (use != ReplicaUse::None || !shared_->config().failover_wait) {
    target.connection = at(0);  // where route() sends it while no primary is known
  } else {
    target.wait = true;
  }
  return target;
}

std::shared_ptr<Connection> MuxCore::place_refused_read(std::size_t from, std::size_t index) {
  const std::size_t none = groups_.size();
  const Roles roles = this->roles(/*want_replica=*/true, from);
  std::size_t to = none;
  if (roles.replica != none) {
    to = roles.replica;
  } else if (roles.primary != none && roles.primary_ready) {
    to = roles.primary;
  }
  if (to == none || to == from) return nullptr;
  const auto& group = groups_[to];
  return group[index % group.size()];
}

bool MuxCore::takes_from(const Connection& connection, std::size_t group, bool retargeted) const {
  if (closed() || cluster() || groups_.size() < 2) return false;
  if (retargeted) return true;  // Sentinel moved it: what is queued was meant for another server
  // A replica that cannot be reached: its reads may run on another one. Under Sentinel every
  // group but the first is a replica's (the first, the primary's, keeps its commands).
  if (sentinel_) return group != 0;
  if (connection.is_replica()) return true;
  // A primary that cannot be reached once another server says it is the primary (a replica
  // promoted by hand, or by a failover tool): its queued writes, never sent, go there
  // instead of waiting for a server that is the primary no more.
  return connection.state() != ConnectionState::Ready && group != primary_group();
}

void MuxCore::check_roles() {
  for (const auto& group : groups_) {
    if (group.front()->state() == ConnectionState::Ready) group.front()->check_role();
  }
}

}  // namespace redmux::detail
