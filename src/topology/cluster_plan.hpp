// How one command is laid out over a Redis Cluster, sans-IO: the slots of its keys, the split
// of a multi-key command into one command per slot (MGET, MSET, DEL …: the parts and where
// each key's reply goes back), the SCAN cursor that walks every primary in turn, and the
// replica a read may go to. The router (mux/cluster_send.cpp) sends what these plan; which
// plan a command has is the command table's (commands/command_rules.hpp).
//
// Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "redmux/arg.hpp"
#include "redmux/flags.hpp"

namespace redmux::detail {

/// The slot of the key at `keys.front()`, and whether every key shares it (true when there
/// are no keys). Each key is hashed once, up to the first one in another slot.
struct KeySlots {
  bool one_slot = true;
  std::uint16_t first = 0;  ///< meaningful when keys is not empty
  std::uint16_t other = 0;  ///< when not one_slot: the first slot that differs from `first`
};
KeySlots key_slots(std::span<const Arg> args, std::span<const std::size_t> keys) noexcept;

/// One command of a split: the arguments it carries (indexes into the caller's, the command
/// name first) and the positions among the caller's keys whose replies it brings.
struct SplitPart {
  std::uint16_t slot = 0;
  std::vector<std::size_t> args;
  std::vector<std::size_t> positions;
};
/// Splits a command per slot of its keys (at `keys`; `step` arguments per key, MSET's key and
/// value: 2), parts in the order each slot first appears, keys in the caller's order within
/// each. A key whose `step` arguments are not all there ends the plan.
std::vector<SplitPart> plan_split(std::span<const Arg> args, std::span<const std::size_t> keys,
                                  std::size_t step);

/// SCAN over a whole cluster: the caller's cursor carries the primary (its index among the
/// primaries ordered by address) in its top 16 bits and that node's own cursor below.
struct ScanCursor {
  static constexpr int kNodeShift = 48;
  static constexpr std::uint64_t kNodeCursorMask = (std::uint64_t{1} << kNodeShift) - 1;
  std::uint64_t node = 0;         ///< index among the primaries
  std::uint64_t node_cursor = 0;  ///< the cursor to send that node
};
/// The caller's cursor read for a cluster of `primaries`; nullopt when it is not a number or
/// names no primary (not one redmux gave for this cluster).
std::optional<ScanCursor> unpack_scan_cursor(std::string_view text, std::size_t primaries) noexcept;
/// The cursor the caller gets when primary `node` of `primaries` replied `node_reply`: the
/// same node while it has more, the next primary's start when it is done, 0 after the last.
std::uint64_t next_scan_cursor(std::uint64_t node, std::uint64_t primaries,
                               std::uint64_t node_reply) noexcept;

/// Where a command may run, from its flags: a replica only for a read under PreferReplica or
/// DemandReplica.
struct ReplicaWish {
  bool replica = false;  ///< a replica may serve it
  bool demand = false;   ///< only a replica may (DemandReplica)
};
ReplicaWish replica_wish(bool read_only, Flags flags) noexcept;

/// The one of `count` candidates a command goes to: the `turn()`-th of those `ready(i)` says
/// are up (each asked once), round-robin; nullopt (and `turn` not called) when none is.
template <typename Ready, typename Turn>
std::optional<std::size_t> pick_ready(std::size_t count, Ready&& ready, Turn&& turn) {
  std::vector<std::size_t> up;
  for (std::size_t i = 0; i < count; ++i) {
    if (ready(i)) up.push_back(i);
  }
  if (up.empty()) return std::nullopt;
  return up[turn() % up.size()];
}

}  // namespace redmux::detail
