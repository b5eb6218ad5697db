#include "topology/cluster_plan.hpp"

#include <algorithm>
#include <charconv>

#include "topology/slot.hpp"

namespace redmux::detail {

KeySlots key_slots(std::span<const Arg> args, std::span<const std::size_t> keys) noexcept {
  KeySlots out;
  if (keys.empty()) return out;
  out.first = slot_of(args[keys.front()].bytes());
  for (std::size_t i = 1; i < keys.size(); ++i) {
    const std::uint16_t slot = slot_of(args[keys[i]].bytes());
    if (slot != out.first) {
      out.one_slot = false;
      out.other = slot;
      break;
    }
  }
  return out;
}

std::vector<SplitPart> plan_split(std::span<const Arg> args, std::span<const std::size_t> keys,
                                  std::size_t step) {
  std::vector<SplitPart> parts;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::size_t at = keys[k];
    if (at + step > args.size()) break;
    const std::uint16_t slot = slot_of(args[at].bytes());
    auto part = std::find_if(parts.begin(), parts.end(),
                             [&](const SplitPart& p) { return p.slot == slot; });
    if (part == parts.end()) {
      parts.push_back(SplitPart{slot, {0}, {}});
      part = parts.end() - 1;
    }
    for (std::size_t i = 0; i < step; ++i) part->args.push_back(at + i);
    part->positions.push_back(k);
  }
  return parts;
}

std::optional<ScanCursor> unpack_scan_cursor(std::string_view text,
                                             std::size_t primaries) noexcept {
  std::uint64_t cursor = 0;
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), cursor);
  const std::uint64_t node = cursor >> ScanCursor::kNodeShift;
  if (parsed.ec != std::errc() || primaries == 0 || node >= primaries) return std::nullopt;
  return ScanCursor{node, cursor & ScanCursor::kNodeCursorMask};
}

std::uint64_t next_scan_cursor(std::uint64_t node, std::uint64_t primaries,
                               std::uint64_t node_reply) noexcept {
  if (node_reply != 0) {
    return (node << ScanCursor::kNodeShift) | (node_reply & ScanCursor::kNodeCursorMask);
  }
  if (node + 1 < primaries) return (node + 1) << ScanCursor::kNodeShift;
  return 0;
}

ReplicaWish replica_wish(bool read_only, Flags flags) noexcept {
  ReplicaWish wish;
  wish.demand = has_flag(flags, Flags::DemandReplica);
  wish.replica = read_only && (wish.demand || has_flag(flags, Flags::PreferReplica));
  return wish;
}

}  // namespace redmux::detail
