// Sorted-set commands (ZADD, ZRANGE, ZSCORE …) as a mixin for any sink (see sink.hpp). The
// argument types (ScoreBound, ZRange, ZAddOptions …) are in sorted_set_args.hpp. Members are
// binary-safe std::string_views, viewed only for the duration of the call. Scores arrive as
// strings in RESP2 and doubles in RESP3; both convert. Thread-safety: that of the sink's
// send().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/commands/keys.hpp"  // ElementScanOptions
#include "redmux/commands/sink.hpp"
#include "redmux/commands/sorted_set_args.hpp"
#include "redmux/types.hpp"

namespace redmux {

namespace detail {
/// A range of {score, member} items: anything with `.score` and `.member` (ScoredMember).
template <class R>
concept ScoredMemberRange = std::ranges::input_range<R> &&
    requires(std::ranges::range_reference_t<R> item) {
  { item.score } -> std::convertible_to<double>;
  { item.member } -> std::convertible_to<std::string_view>;
};
using ScorePairs = std::initializer_list<std::pair<double, std::string_view>>;
}  // namespace detail

template <class Derived>
class SortedSetCommands {
 public:
  /// Adds or updates one member; how many were added (changed, with `changed`). ZADD.
  Future<long long> zadd(std::string_view key, double score, std::string_view member,
                         ZAddOptions zadd_options = {}, CallOptions options = {}) {
    detail::ArgList args = zadd_head(key, zadd_options, false, 2);
    args.add(score);
    args.add(member);
    return detail::send_built<long long>(*this, options, args);
  }
  /// Adds or updates members: `db.zadd("board", {{10, "ann"}, {7.5, "bob"}})`. ZADD.
  Future<long long> zadd(std::string_view key, detail::ScorePairs members,
                         ZAddOptions zadd_options = {}, CallOptions options = {}) {
    detail::ArgList args = zadd_head(key, zadd_options, false, 2 * members.size());
    for (const auto& [score, member] : members) {
      args.add(score);
      args.add(member);
    }
    return detail::send_built<long long>(*this, options, args);
  }
  /// Adds or updates members from a range of ScoredMember (or anything with .score and
  /// .member). ZADD.
  template <detail::ScoredMemberRange Members>
  Future<long long> zadd(std::string_view key, const Members& members,
                         ZAddOptions zadd_options = {}, CallOptions options = {}) {
    detail::ArgList args = zadd_head(key, zadd_options, false, 2 * detail::size_hint(members));
    for (auto&& item : members) {
      args.add(static_cast<double>(item.score));
      args.add(std::string_view(item.member));
    }
    return detail::send_built<long long>(*this, options, args);
  }
  /// Adds `increment` to a member's score (ZADD … INCR); the new score, or nullopt when a
  /// condition in `zadd_options` prevented it.
  Future<std::optional<double>> zadd_incr(std::string_view key, double increment,
                                          std::string_view member, ZAddOptions zadd_options = {},
                                          CallOptions options = {}) {
    detail::ArgList args = zadd_head(key, zadd_options, true, 2);
    args.add(increment);
    args.add(member);
    return detail::send_built<std::optional<double>>(*this, options, args);
  }
  /// Removes `member`; 1 if it was there. ZREM.
  Future<long long> zrem(std::string_view key, std::string_view member, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"ZREM", key, member});
  }
  template <detail::StringRange Members>
  Future<long long> zrem(std::string_view key, const Members& members, CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "ZREM", key, members, options);
  }
  Future<long long> zrem(std::string_view key, std::initializer_list<std::string_view> members,
                         CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "ZREM", key, members, options);
  }
  /// A member's score; nullopt when the member or key is missing. ZSCORE.
  Future<std::optional<double>> zscore(std::string_view key, std::string_view member,
                                       CallOptions options = {}) {
    return detail::send_command<std::optional<double>>(*this, options, {"ZSCORE", key, member});
  }
  /// The scores of `members`, in order; nullopt for each missing one. ZMSCORE.
  template <detail::StringRange Members>
  Future<std::vector<std::optional<double>>> zmscore(std::string_view key, const Members& members,
                                                     CallOptions options = {}) {
    return detail::send_with_key<std::vector<std::optional<double>>>(*this, "ZMSCORE", key, members,
                                                                     options);
  }
  Future<std::vector<std::optional<double>>> zmscore(
      std::string_view key, std::initializer_list<std::string_view> members,
      CallOptions options = {}) {
    return detail::send_with_key<std::vector<std::optional<double>>>(*this, "ZMSCORE", key, members,
                                                                     options);
  }
  /// Adds `increment` to a member's score (missing: 0); the new score. ZINCRBY.
  Future<double> zincrby(std::string_view key, double increment, std::string_view member,
                         CallOptions options = {}) {
    return detail::send_command<double>(*this, options, {"ZINCRBY", key, increment, member});
  }
  /// Number of members; 0 for a missing key. ZCARD.
  Future<long long> zcard(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"ZCARD", key});
  }
  /// Number of members with a score in [min, max]. ZCOUNT.
  Future<long long> zcount(std::string_view key, ScoreBound min, ScoreBound max,
                           CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"ZCOUNT", key, min.text(), max.text()});
  }
  /// The members `range` selects, in its order. ZRANGE key start stop [BYSCORE|BYLEX] [REV]
  /// [LIMIT o c].
  Future<std::vector<std::string>> zrange(std::string_view key, const ZRange& range,
                                          CallOptions options = {}) {
    detail::ArgList args({"ZRANGE", key}, 7);
    range.append_to(args);
    return detail::send_built<std::vector<std::string>>(*this, options, args);
  }
  /// Like zrange(), with scores. ZRANGE … WITHSCORES (flat in RESP2, pairs in RESP3).
  Future<std::vector<ScoredMember>> zrange_with_scores(std::string_view key, const ZRange& range,
                                                       CallOptions options = {}) {
    detail::ArgList args({"ZRANGE", key}, 8);
    range.append_to(args);
    args.add("WITHSCORES");
    return detail::send_built<std::vector<ScoredMember>>(*this, options, args);
  }
  /// Stores what `range` selects from `source` into `destination`; its size. ZRANGESTORE.
  Future<long long> zrangestore(std::string_view destination, std::string_view source,
                                const ZRange& range, CallOptions options = {}) {
    detail::ArgList args({"ZRANGESTORE", destination, source}, 7);
    range.append_to(args);
    return detail::send_built<long long>(*this, options, args);
  }
  /// A member's rank, lowest score first (0-based); nullopt when missing. ZRANK.
  Future<std::optional<long long>> zrank(std::string_view key, std::string_view member,
                                         CallOptions options = {}) {
    return detail::send_command<std::optional<long long>>(*this, options, {"ZRANK", key, member});
  }
  /// A member's rank, highest score first; nullopt when missing. ZREVRANK.
  Future<std::optional<long long>> zrevrank(std::string_view key, std::string_view member,
                                            CallOptions options = {}) {
    return detail::send_command<std::optional<long long>>(*this, options,
                                                          {"ZREVRANK", key, member});
  }
  /// Removes and returns up to `count` members with the lowest scores, lowest first; empty
  /// for a missing key. ZPOPMIN key count.
  Future<std::vector<ScoredMember>> zpopmin(std::string_view key, long long count = 1,
                                            CallOptions options = {}) {
    return detail::send_command<std::vector<ScoredMember>>(*this, options, {"ZPOPMIN", key, count});
  }
  /// Removes and returns up to `count` members with the highest scores. ZPOPMAX key count.
  Future<std::vector<ScoredMember>> zpopmax(std::string_view key, long long count = 1,
                                            CallOptions options = {}) {
    return detail::send_command<std::vector<ScoredMember>>(*this, options, {"ZPOPMAX", key, count});
  }
  /// The union of `keys` into `destination`; its size. ZUNIONSTORE dst numkeys key…
  /// [WEIGHTS w…] [AGGREGATE SUM|MIN|MAX].
  template <detail::StringRange Keys>
  Future<long long> zunionstore(std::string_view destination, const Keys& keys,
                                ZStoreOptions store_options = {}, CallOptions options = {}) {
    return send_store("ZUNIONSTORE", destination, keys, store_options, options);
  }
  Future<long long> zunionstore(std::string_view destination,
                                std::initializer_list<std::string_view> keys,
                                ZStoreOptions store_options = {}, CallOptions options = {}) {
    return send_store("ZUNIONSTORE", destination, keys, store_options, options);
  }
  /// The intersection of `keys` into `destination`; its size. ZINTERSTORE.
  template <detail::StringRange Keys>
  Future<long long> zinterstore(std::string_view destination, const Keys& keys,
                                ZStoreOptions store_options = {}, CallOptions options = {}) {
    return send_store("ZINTERSTORE", destination, keys, store_options, options);
  }
  Future<long long> zinterstore(std::string_view destination,
                                std::initializer_list<std::string_view> keys,
                                ZStoreOptions store_options = {}, CallOptions options = {}) {
    return send_store("ZINTERSTORE", destination, keys, store_options, options);
  }
  /// Removes members with a score in [min, max]; how many. ZREMRANGEBYSCORE.
  Future<long long> zremrangebyscore(std::string_view key, ScoreBound min, ScoreBound max,
                                     CallOptions options = {}) {
    return detail::send_command<long long>(*this, options,
                                           {"ZREMRANGEBYSCORE", key, min.text(), max.text()});
  }
  /// Removes members ranked `start`..`stop` (negative from the top); how many.
  /// ZREMRANGEBYRANK.
  Future<long long> zremrangebyrank(std::string_view key, long long start, long long stop,
                                    CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"ZREMRANGEBYRANK", key, start, stop});
  }

  /// One page of members with their scores from `cursor` (0 to start); the page's cursor is 0 when
  /// the walk is complete. ZSCAN key cursor [MATCH p] [COUNT n]. An element may appear on more than
  /// one page; see scan.hpp for a lazy iterator over every page.
  Future<ScanPageOf<ScoredMember>> zscan(std::string_view key, std::uint64_t cursor,
                                         ElementScanOptions scan_options = {},
                                         CallOptions options = {}) {
    detail::ArgList args({"ZSCAN", key, cursor}, 4);
    scan_options.append_to(args);
    return detail::send_built<ScanPageOf<ScoredMember>>(*this, options, args);
  }

  /// Like zscan() with the members only: ZSCAN key cursor [MATCH p] [COUNT n] NOSCORES (the
  /// server sends no scores). Needs Valkey 8; Redis refuses NOSCORES with a ServerError (use
  /// zscan() there).
  Future<ScanPageOf<std::string>> zscan_members(std::string_view key, std::uint64_t cursor,
                                                ElementScanOptions scan_options = {},
                                                CallOptions options = {}) {
    detail::ArgList args({"ZSCAN", key, cursor}, 5);
    scan_options.append_to(args);
    args.add("NOSCORES");
    return detail::send_built<ScanPageOf<std::string>>(*this, options, args);
  }

 private:
  static detail::ArgList zadd_head(std::string_view key, const ZAddOptions& o, bool incr,
                                   std::size_t more) {
    detail::ArgList args({"ZADD", key}, more + 5);
    if (o.condition == SetCondition::IfNotExists) args.add("NX");
    if (o.condition == SetCondition::IfExists) args.add("XX");
    if (o.score_condition == ScoreCondition::IfGreater) args.add("GT");
    if (o.score_condition == ScoreCondition::IfLess) args.add("LT");
    if (o.changed) args.add("CH");
    if (incr) args.add("INCR");
    return args;
  }
  template <class Keys>
  Future<long long> send_store(const char* command, std::string_view destination, const Keys& keys,
                               const ZStoreOptions& o, const CallOptions& options) {
    detail::ArgList args({command, destination}, detail::size_hint(keys) + o.weights.size() + 4);
    args.add_counted(keys);
    if (!o.weights.empty()) {
      args.add("WEIGHTS");
      for (double w : o.weights) args.add(w);
    }
    if (o.aggregate == ZAggregate::Min)
      args.add_all(std::initializer_list<std::string_view>{"AGGREGATE", "MIN"});
    if (o.aggregate == ZAggregate::Max)
      args.add_all(std::initializer_list<std::string_view>{"AGGREGATE", "MAX"});
    return detail::send_built<long long>(*this, options, args);
  }
};

}  // namespace redmux
