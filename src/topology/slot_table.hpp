// SlotTable: a Redis Cluster's slot map over node identities, sans-IO. Each node the map names
// has an index (its identity here, in the order first seen) and an endpoint; each of the 16384
// slots has the index of the primary serving it (or none), each primary its replicas. The
// router (mux/cluster.hpp) keeps one connection per index beside it; this table knows none.
//
// Built from CLUSTER SHARDS / SLOTS (from_shards()), changed by a MOVED (moved()). A value:
// the router publishes a new one on each change and never changes a published one.
#pragma once

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "redmux/config.hpp"
#include "topology/cluster_map.hpp"
#include "topology/slot.hpp"

namespace redmux::detail {

struct SlotTable {
  using Slots = std::bitset<kSlotCount>;
  static constexpr std::int16_t kNoNode = -1;

  SlotTable() { primary.fill(kNoNode); }

  /// The map CLUSTER SHARDS / SLOTS describe: nodes in the order the shards name them (each
  /// primary, then its replicas). A slot two shards claim goes to the later one.
  static SlotTable from_shards(std::span<const ClusterShard> shards);

  /// The index of `endpoint`, added (serving nothing) when it is not in the map yet.
  std::int16_t node(const Endpoint& endpoint);
  /// The index of `endpoint`; nullopt when the map does not name it.
  std::optional<std::size_t> find(const Endpoint& endpoint) const;
  /// The primary serving `slot`; kNoNode when none does.
  std::int16_t owner(std::uint16_t slot) const noexcept { return primary[slot]; }
  /// MOVED: `slot` is served by `to` now (added to the map if new). The slot counts are left
  /// as they were: the refresh that follows brings the whole map.
  void moved(std::uint16_t slot, const Endpoint& to);

  /// Whether node `index` is listed as some primary's replica.
  bool is_replica(std::size_t index) const;
  /// How many slots have a primary.
  std::size_t slots_covered() const noexcept;
  /// Every slot that has a primary.
  Slots covered() const;
  /// The slots each node serves, as primary or as a replica, by index.
  std::vector<Slots> served() const;

  std::vector<Endpoint> nodes;                      ///< by index
  std::array<std::int16_t, kSlotCount> primary{};   ///< node index by slot; kNoNode: no node
  std::vector<std::vector<std::int16_t>> replicas;  ///< by node index: its replicas
  std::vector<bool> failed;                         ///< by node index: health "fail"
  std::vector<std::size_t> slots;                   ///< by node index: slots it serves
};

}  // namespace redmux::detail
