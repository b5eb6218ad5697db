// ClusterRouter's choice of a node for a command (mux/cluster.hpp): by the slot of its keys,
// a primary or, for a read its flags allow, a connected replica (the wish and the pick:
// topology/cluster_plan.hpp); any primary for a keyless command; the views status() and the
// server handle read.
#include <algorithm>

#include "mux/cluster.hpp"
#include "mux/core.hpp"
#include "topology/cluster_plan.hpp"

namespace redmux::detail {

Result<Connection*> ClusterRouter::for_slot(std::uint16_t slot, bool replica, bool demand_replica) {
  const SlotMap* current = current_map();  // no lock: for_slot() runs for every command
  if (!current || current->table.owner(slot) < 0) {
    return Error(errc::not_sent, "no cluster node is known for slot " + std::to_string(slot) +
                                     " (the slot map is being loaded or the slot is not "
                                     "served); retry shortly");
  }
  const std::int16_t primary = current->table.owner(slot);
  const std::vector<std::int16_t>& replicas =
      current->table.replicas[static_cast<std::size_t>(primary)];
  if (replica && replicas.empty()) {
    // No replica known for this slot: a map loaded while the cluster was forming, or during
    // a failover, may lack them. Ask again now and then: once a second when other slots have
    // replicas, every 5 s in a cluster without any (not on every read there).
    const bool elsewhere =
        std::any_of(current->table.replicas.begin(), current->table.replicas.end(),
                    [](const auto& others) { return !others.empty(); });
    if (schedule_.older_than(Clock::now(),
                             elsewhere ? std::chrono::seconds(1) : std::chrono::seconds(5))) {
      refresh();
    }
  }
  if (replica) {
    const auto node = [&](std::size_t i) {
      return current->nodes[static_cast<std::size_t>(replicas[i])];
    };
    // A replica whose connection is down, or that is not in sync with its primary (it
    // restarted and is loading or resynchronising: it would answer from an empty or old data
    // set), is skipped, as outside a cluster; one in the client's availability zone
    // (availabilityZone=) is preferred.
    const auto turn = [&] { return cursor_.fetch_add(1, std::memory_order_relaxed); };
    const bool primary_ready =
        current->nodes[static_cast<std::size_t>(primary)]->state() == ConnectionState::Ready;
    const auto ready = [&](std::size_t i) {
      return MuxCore::serves_replica_reads(*node(i), primary_ready);
    };
    std::optional<std::size_t> chosen;
    if (!shared_->config().availability_zone.empty()) {
      chosen = pick_ready(
          replicas.size(), [&](std::size_t i) { return ready(i) && node(i)->in_zone(); }, turn);
    }
    if (!chosen) chosen = pick_ready(replicas.size(), ready, turn);
    if (chosen) return node(*chosen);
    // None serves reads: the map may be behind a graceful failover (the replica it lists
    // is the primary now, and the demoted primary, which it lists as the primary, is a
    // replica that no write has told of). Ask again, at most once a second (a slot with
    // no replica at all is asked about above).
    if (!replicas.empty() && schedule_.older_than(Clock::now(), std::chrono::seconds(1))) {
      refresh();
    }
    if (demand_replica) {
      // Never sent, and a replica may connect or catch up: safe to retry.
      return Error::never_ran(
          errc::not_allowed,
          "slot " + std::to_string(slot) +
              " has no connected replica in sync with its primary (DemandReplica)");
    }
  }
  return current->nodes[static_cast<std::size_t>(primary)];
}

std::vector<Connection*> ClusterRouter::primaries() {
  std::shared_ptr<const SlotMap> current = map();
  std::vector<Connection*> out;
  if (!current) return out;
  for (std::size_t i = 0; i < current->nodes.size(); ++i) {
    if (current->table.slots[i] > 0) out.push_back(current->nodes[i]);
  }
  return out;
}

Connection* ClusterRouter::any_primary() {
  std::vector<Connection*> all = primaries();
  if (all.empty()) return nullptr;
  // A keyless command needs no particular node: not one that is down.
  std::vector<Connection*> ready;
  for (Connection* node : all) {
    if (node->state() == ConnectionState::Ready) ready.push_back(node);
  }
  const std::vector<Connection*>& from = ready.empty() ? all : ready;
  return from[cursor_.fetch_add(1, std::memory_order_relaxed) % from.size()];
}

std::size_t ClusterRouter::slots_covered() const {
  std::shared_ptr<const SlotMap> current = map();
  return current ? current->table.slots_covered() : 0;
}

std::size_t ClusterRouter::primary_count() const {
  return const_cast<ClusterRouter*>(this)->primaries().size();
}

std::vector<ClusterRouter::NodeView> ClusterRouter::nodes() const {
  std::shared_ptr<const SlotMap> current = map();
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(mutex_);
    all = connections_;
  }
  std::vector<NodeView> out;
  out.reserve(all.size());
  for (const auto& connection : all) {
    NodeView view;
    view.connection = connection;
    if (current) {
      auto it = std::find(current->nodes.begin(), current->nodes.end(), connection.get());
      if (it != current->nodes.end()) {
        const auto at = static_cast<std::size_t>(it - current->nodes.begin());
        view.slots = current->table.slots[at];
        view.primary = view.slots > 0;
        view.failed = current->table.failed[at];
        view.replica = current->table.is_replica(at);
      }
    }
    out.push_back(std::move(view));
  }
  return out;
}

Result<Connection*> ClusterRouter::route(const CommandInfo& info, std::span<const Arg> args,
                                         Flags flags) {
  const KeyIndexes keys(info, args);
  return route_keys(info, keys.get().size(), key_slots(args, keys.get()), flags);
}

Result<Connection*> ClusterRouter::route_keys(const CommandInfo& info, std::size_t keys,
                                              const KeySlots& slots, Flags flags) {
  if (demands_both(flags)) [[unlikely]]
    return demands_both_error(info.name);
  const bool read_only = info.is(CommandFlag::ReadOnly);
  const ReplicaWish wish = replica_wish(read_only, flags);
  if (wish.demand) {
    if (Error error = replica_demand_refused(info, keys == 0)) return error;
  }
  if (keys == 0) {
    if (Connection* node = any_primary()) return node;
    return Error(errc::not_sent,
                 std::string(info.name) + " not sent: the cluster's slot map is not loaded yet");
  }
  if (!slots.one_slot) {
    return Error(errc::invalid_argument,
                 std::string(info.name) + " refused: its keys map to different cluster slots (" +
                     std::to_string(slots.first) + " and " + std::to_string(slots.other) +
                     "; CROSSSLOT). Give keys that go together a common {hash tag}, e.g. "
                     "{user:42}:name and {user:42}:email");
  }
  return for_slot(slots.first, wish.replica, wish.demand);
}

Error replica_demand_refused(const CommandInfo& info, bool keyless) {
  if (!info.is(CommandFlag::ReadOnly)) {
    return Error(errc::not_allowed,
                 std::string(info.name) +
                     (info.is(CommandFlag::Write) ? " writes" : " is not a read-only command") +
                     " and cannot run on a replica (DemandReplica)");
  }
  if (keyless) {
    return Error(errc::not_allowed,
                 std::string(info.name) +
                     " has no key, and in a Redis Cluster such a command runs on primaries: "
                     "DemandReplica cannot be met. Send it to a replica through a server handle "
                     "(Multiplexer::server())");
  }
  return Error();
}

}  // namespace redmux::detail
