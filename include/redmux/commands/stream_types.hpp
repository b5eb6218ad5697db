// Result types of the stream commands — an entry (id and fields), what XREAD/XREADGROUP
// return per stream, XPENDING's summary and entries, XAUTOCLAIM's answer, XINFO's reports —
// and their ReplyTraits, which accept the RESP2 shape (flat arrays of name, value) and the
// RESP3 one (maps) alike. Fields the server does not send (older versions) keep their
// defaults. Plain values that own their data; no synchronisation. Included by streams.hpp.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/commands/reply_fields.hpp"
#include "redmux/types.hpp"

namespace redmux {

/// One stream entry: its id ("1700000000000-0") and its fields in insertion order. An entry
/// deleted while pending (XREADGROUP of history, XCLAIM on Redis < 7) has no fields.
struct StreamEntry {
  std::string id{};
  std::vector<FieldValue> fields{};
  /// The value of the first field named `name`, or nullopt.
  std::optional<std::string_view> get(std::string_view name) const {
    for (const FieldValue& f : fields)
      if (f.field == name) return std::string_view(f.value);
    return std::nullopt;
  }
  friend bool operator==(const StreamEntry&, const StreamEntry&) = default;
};

/// What XREAD / XREADGROUP return for one stream.
struct StreamMessages {
  std::string stream{};
  std::vector<StreamEntry> entries{};
};

/// XPENDING key group: how many entries are pending, the smallest and largest pending id,
/// and how many each consumer holds (consumers with none are not listed).
struct StreamPendingSummary {
  long long count = 0;
  std::optional<std::string> smallest_id{};
  std::optional<std::string> largest_id{};
  std::vector<std::pair<std::string, long long>> consumers{};
};

/// One entry of XPENDING's extended form.
struct PendingEntry {
  std::string id{};
  std::string consumer{};
  long long idle_ms = 0;     ///< milliseconds since it was last delivered
  long long deliveries = 0;  ///< times it was delivered
};

/// XAUTOCLAIM's answer: the id to pass as `start` next ("0-0" when the scan is complete), the
/// claimed entries, and the ids of pending entries that no longer exist (Redis 7.0+; they
/// were removed from the pending list).
struct StreamAutoClaim {
  std::string next_id{};
  std::vector<StreamEntry> entries{};
  std::vector<std::string> deleted_ids{};
};

/// XAUTOCLAIM … JUSTID: the same, ids only.
struct StreamAutoClaimIds {
  std::string next_id{};
  std::vector<std::string> ids{};
  std::vector<std::string> deleted_ids{};
};

/// XINFO STREAM key.
struct StreamInfo {
  long long length = 0;
  long long radix_tree_keys = 0;
  long long radix_tree_nodes = 0;
  long long groups = 0;
  std::string last_generated_id{};
  std::string max_deleted_entry_id{};        ///< 7.0+
  long long entries_added = 0;               ///< 7.0+
  std::string recorded_first_entry_id{};     ///< 7.0+
  std::optional<StreamEntry> first_entry{};  ///< nullopt for an empty stream
  std::optional<StreamEntry> last_entry{};
};

/// One consumer group (XINFO GROUPS).
struct StreamGroupInfo {
  std::string name{};
  long long consumers = 0;
  long long pending = 0;
  std::string last_delivered_id{};
  std::optional<long long> entries_read{};  ///< 7.0+; nullopt when unknown
  std::optional<long long> lag{};           ///< 7.0+; nullopt when it cannot be computed
};

/// One consumer of a group (XINFO CONSUMERS).
struct StreamConsumerInfo {
  std::string name{};
  long long pending = 0;
  long long idle_ms = 0;                   ///< since its last attempted interaction
  std::optional<long long> inactive_ms{};  ///< 7.2+: since its last successful one
};

/// [id, [field, value …]] — or [id, nil] for an entry deleted while pending.
template <>
struct ReplyTraits<StreamEntry> {
  static Result<StreamEntry> convert(NodeSpan reply) {
    auto parts = detail::children_of(reply, 2, "stream entry [id, fields]");
    if (!parts) return std::move(parts).error();
    StreamEntry entry;
    if (Error e = detail::read_into((*parts)[0], entry.id)) return detail::in_element(e, 0);
    const NodeSpan fields = (*parts)[1];
    if (fields[0].type == ReplyType::Null) return entry;
    if (Error e = detail::read_into(fields, entry.fields)) return detail::in_element(e, 1);
    return entry;
  }
};

/// RESP3 {stream: [entries]}, RESP2 [[stream, [entries]] …]; nil (nothing new) → empty.
template <>
struct ReplyTraits<std::vector<StreamMessages>> {
  static Result<std::vector<StreamMessages>> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    using Container = std::vector<StreamMessages>;
    if (reply[0].type == ReplyType::Null) return Container{};
    return detail::convert_pairs<Container, std::string, std::vector<StreamEntry>>(
        reply, "streams with entries",
        [](Container& out, std::string&& stream, std::vector<StreamEntry>&& entries) {
          out.push_back(StreamMessages{std::move(stream), std::move(entries)});
        });
  }
};

/// [count, smallest|nil, largest|nil, [[consumer, count] …]|nil].
template <>
struct ReplyTraits<StreamPendingSummary> {
  static Result<StreamPendingSummary> convert(NodeSpan reply) {
    auto parts = detail::children_of(reply, 4, "XPENDING summary of 4 elements");
    if (!parts) return std::move(parts).error();
    StreamPendingSummary out;
    const auto& p = *parts;
    if (Error e = detail::read_into(p[0], out.count)) return detail::in_element(e, 0);
    if (Error e = detail::read_into(p[1], out.smallest_id)) return detail::in_element(e, 1);
    if (Error e = detail::read_into(p[2], out.largest_id)) return detail::in_element(e, 2);
    if (p[3][0].type == ReplyType::Null) return out;
    if (Error e = detail::read_into(p[3], out.consumers)) return detail::in_element(e, 3);
    return out;
  }
};

/// [id, consumer, idle ms, deliveries].
template <>
struct ReplyTraits<PendingEntry> {
  static Result<PendingEntry> convert(NodeSpan reply) {
    using P = PendingEntry;
    return detail::read_elements<P>(reply, "pending entry of 4 elements", &P::id, &P::consumer,
                                    &P::idle_ms, &P::deliveries);
  }
};

namespace detail {
/// [next id, [items], [deleted ids]] (7.0+) or [next id, [items]] (6.2).
template <class Out, class Items>
Result<Out> convert_autoclaim(NodeSpan reply) {
  auto parts = children_of(reply, 2, "XAUTOCLAIM reply [next id, entries, deleted ids]");
  if (!parts) return std::move(parts).error();
  Out out;
  const auto& p = *parts;
  if (Error e = read_into(p[0], out.next_id)) return in_element(e, 0);
  Items items;
  if (Error e = read_into(p[1], items)) return in_element(e, 1);
  if constexpr (requires { out.entries; }) {
    out.entries = std::move(items);
  } else {
    out.ids = std::move(items);
  }
  if (p.size() > 2) {
    if (Error e = read_into(p[2], out.deleted_ids)) return in_element(e, 2);
  }
  return out;
}
}  // namespace detail

template <>
struct ReplyTraits<StreamAutoClaim> {
  static Result<StreamAutoClaim> convert(NodeSpan reply) {
    return detail::convert_autoclaim<StreamAutoClaim, std::vector<StreamEntry>>(reply);
  }
};

template <>
struct ReplyTraits<StreamAutoClaimIds> {
  static Result<StreamAutoClaimIds> convert(NodeSpan reply) {
    return detail::convert_autoclaim<StreamAutoClaimIds, std::vector<std::string>>(reply);
  }
};

/// XINFO replies are a map (RESP3) or flat name/value array (RESP2); unknown names are skipped.
template <>
struct ReplyTraits<StreamInfo> {
  static Result<StreamInfo> convert(NodeSpan reply) {
    using S = StreamInfo;
    return detail::read_fields<S>(
        reply, "XINFO STREAM fields", detail::field("length", &S::length),
        detail::field("radix-tree-keys", &S::radix_tree_keys),
        detail::field("radix-tree-nodes", &S::radix_tree_nodes),
        detail::field("groups", &S::groups),
        detail::field("last-generated-id", &S::last_generated_id),
        detail::field("max-deleted-entry-id", &S::max_deleted_entry_id),
        detail::field("entries-added", &S::entries_added),
        detail::field("recorded-first-entry-id", &S::recorded_first_entry_id),
        detail::field("first-entry", &S::first_entry), detail::field("last-entry", &S::last_entry));
  }
};

template <>
struct ReplyTraits<StreamGroupInfo> {
  static Result<StreamGroupInfo> convert(NodeSpan reply) {
    using G = StreamGroupInfo;
    return detail::read_fields<G>(
        reply, "XINFO GROUPS fields", detail::field("name", &G::name),
        detail::field("consumers", &G::consumers), detail::field("pending", &G::pending),
        detail::field("last-delivered-id", &G::last_delivered_id),
        detail::field("entries-read", &G::entries_read), detail::field("lag", &G::lag));
  }
};

template <>
struct ReplyTraits<StreamConsumerInfo> {
  static Result<StreamConsumerInfo> convert(NodeSpan reply) {
    using C = StreamConsumerInfo;
    return detail::read_fields<C>(reply, "XINFO CONSUMERS fields", detail::field("name", &C::name),
                                  detail::field("pending", &C::pending),
                                  detail::field("idle", &C::idle_ms),
                                  detail::field("inactive", &C::inactive_ms));
  }
};

}  // namespace redmux
