#include "topology/slot_table.hpp"

#include <algorithm>

namespace redmux::detail {

SlotTable SlotTable::from_shards(std::span<const ClusterShard> shards) {
  SlotTable table;
  for (const ClusterShard& shard : shards) {
    const std::int16_t primary = table.node(shard.primary);
    table.failed[static_cast<std::size_t>(primary)] = shard.primary_failed;
    for (const Endpoint& replica : shard.replicas) {
      const std::int16_t at = table.node(replica);
      table.replicas[static_cast<std::size_t>(primary)].push_back(at);
    }
    for (auto [start, end] : shard.ranges) {
      for (std::size_t slot = start; slot <= end; ++slot) {
        if (table.primary[slot] < 0) ++table.slots[static_cast<std::size_t>(primary)];
        table.primary[slot] = primary;
      }
    }
  }
  return table;
}

std::optional<std::size_t> SlotTable::find(const Endpoint& endpoint) const {
  auto it = std::find(nodes.begin(), nodes.end(), endpoint);
  if (it == nodes.end()) return std::nullopt;
  return static_cast<std::size_t>(it - nodes.begin());
}

std::int16_t SlotTable::node(const Endpoint& endpoint) {
  if (std::optional<std::size_t> at = find(endpoint)) return static_cast<std::int16_t>(*at);
  nodes.push_back(endpoint);
  replicas.emplace_back();
  failed.push_back(false);
  slots.push_back(0);
  return static_cast<std::int16_t>(nodes.size() - 1);
}

void SlotTable::moved(std::uint16_t slot, const Endpoint& to) {
  primary[slot] = node(to);
}

bool SlotTable::is_replica(std::size_t index) const {
  const auto at = static_cast<std::int16_t>(index);
  return std::any_of(replicas.begin(), replicas.end(), [at](const auto& of) {
    return std::find(of.begin(), of.end(), at) != of.end();
  });
}

std::size_t SlotTable::slots_covered() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(primary.begin(), primary.end(), [](std::int16_t at) { return at >= 0; }));
}

SlotTable::Slots SlotTable::covered() const {
  Slots out;
  for (std::size_t slot = 0; slot < kSlotCount; ++slot) {
    if (primary[slot] >= 0) out.set(slot);
  }
  return out;
}

std::vector<SlotTable::Slots> SlotTable::served() const {
  std::vector<Slots> out(nodes.size());
  for (std::size_t slot = 0; slot < kSlotCount; ++slot) {
    const std::int16_t owner = primary[slot];
    if (owner < 0) continue;
    out[static_cast<std::size_t>(owner)].set(slot);
    for (std::int16_t replica : replicas[static_cast<std::size_t>(owner)]) {
      out[static_cast<std::size_t>(replica)].set(slot);
    }
  }
  return out;
}

}  // namespace redmux::detail
