// Set commands (SADD, SMEMBERS, SINTER …) as a mixin for any sink (see sink.hpp). Keys and
// members are binary-safe std::string_views, viewed only for the duration of the call. In
// a cluster, commands over several keys need them in one slot. Thread-safety: that of the
// sink's send().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/commands/keys.hpp"  // ElementScanOptions
#include "redmux/commands/sink.hpp"

namespace redmux {

template <class Derived>
class SetCommands {
 public:
  /// Adds `member`; 1 if it is new. SADD.
  Future<long long> sadd(std::string_view key, std::string_view member, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"SADD", key, member});
  }
  /// Adds `members`; how many are new. SADD.
  template <detail::StringRange Members>
  Future<long long> sadd(std::string_view key, const Members& members, CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SADD", key, members, options);
  }
  Future<long long> sadd(std::string_view key, std::initializer_list<std::string_view> members,
                         CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SADD", key, members, options);
  }
  /// Removes `member`; 1 if it was there. SREM.
  Future<long long> srem(std::string_view key, std::string_view member, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"SREM", key, member});
  }
  template <detail::StringRange Members>
  Future<long long> srem(std::string_view key, const Members& members, CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SREM", key, members, options);
  }
  Future<long long> srem(std::string_view key, std::initializer_list<std::string_view> members,
                         CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SREM", key, members, options);
  }
  /// Every member, in no particular order; empty for a missing key. SMEMBERS.
  Future<std::vector<std::string>> smembers(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::vector<std::string>>(*this, options, {"SMEMBERS", key});
  }
  /// True when `member` is in the set. SISMEMBER.
  Future<bool> sismember(std::string_view key, std::string_view member, CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"SISMEMBER", key, member});
  }
  /// For each of `members`, whether it is in the set. SMISMEMBER.
  template <detail::StringRange Members>
  Future<std::vector<bool>> smismember(std::string_view key, const Members& members,
                                       CallOptions options = {}) {
    return detail::send_with_key<std::vector<bool>>(*this, "SMISMEMBER", key, members, options);
  }
  Future<std::vector<bool>> smismember(std::string_view key,
                                       std::initializer_list<std::string_view> members,
                                       CallOptions options = {}) {
    return detail::send_with_key<std::vector<bool>>(*this, "SMISMEMBER", key, members, options);
  }
  /// Number of members; 0 for a missing key. SCARD.
  Future<long long> scard(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"SCARD", key});
  }
  /// Removes and returns a random member; nullopt for a missing key. SPOP.
  Future<std::optional<std::string>> spop(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"SPOP", key});
  }
  /// Removes and returns up to `count` random members. SPOP key count.
  Future<std::vector<std::string>> spop(std::string_view key, long long count,
                                        CallOptions options = {}) {
    return detail::send_command<std::vector<std::string>>(*this, options, {"SPOP", key, count});
  }
  /// A random member, not removed; nullopt for a missing key. SRANDMEMBER.
  Future<std::optional<std::string>> srandmember(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"SRANDMEMBER", key});
  }
  /// Up to `count` distinct random members (negative: |count|, repeats allowed).
  /// SRANDMEMBER key count.
  Future<std::vector<std::string>> srandmember(std::string_view key, long long count,
                                               CallOptions options = {}) {
    return detail::send_command<std::vector<std::string>>(*this, options,
                                                          {"SRANDMEMBER", key, count});
  }
  /// Members in every one of `keys` (a missing key is empty). SINTER.
  template <detail::StringRange Keys>
  Future<std::vector<std::string>> sinter(const Keys& keys, CallOptions options = {}) {
    return detail::send_keys<std::vector<std::string>>(*this, "SINTER", keys, options);
  }
  Future<std::vector<std::string>> sinter(std::initializer_list<std::string_view> keys,
                                          CallOptions options = {}) {
    return detail::send_keys<std::vector<std::string>>(*this, "SINTER", keys, options);
  }
  /// Members in any of `keys`. SUNION.
  template <detail::StringRange Keys>
  Future<std::vector<std::string>> sunion(const Keys& keys, CallOptions options = {}) {
    return detail::send_keys<std::vector<std::string>>(*this, "SUNION", keys, options);
  }
  Future<std::vector<std::string>> sunion(std::initializer_list<std::string_view> keys,
                                          CallOptions options = {}) {
    return detail::send_keys<std::vector<std::string>>(*this, "SUNION", keys, options);
  }
  /// Members of the first key that are in none of the others. SDIFF.
  template <detail::StringRange Keys>
  Future<std::vector<std::string>> sdiff(const Keys& keys, CallOptions options = {}) {
    return detail::send_keys<std::vector<std::string>>(*this, "SDIFF", keys, options);
  }
  Future<std::vector<std::string>> sdiff(std::initializer_list<std::string_view> keys,
                                         CallOptions options = {}) {
    return detail::send_keys<std::vector<std::string>>(*this, "SDIFF", keys, options);
  }
  /// SINTER into `destination` (overwritten); its size. SINTERSTORE.
  template <detail::StringRange Keys>
  Future<long long> sinterstore(std::string_view destination, const Keys& keys,
                                CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SINTERSTORE", destination, keys, options);
  }
  Future<long long> sinterstore(std::string_view destination,
                                std::initializer_list<std::string_view> keys,
                                CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SINTERSTORE", destination, keys, options);
  }
  /// SUNION into `destination`; its size. SUNIONSTORE.
  template <detail::StringRange Keys>
  Future<long long> sunionstore(std::string_view destination, const Keys& keys,
                                CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SUNIONSTORE", destination, keys, options);
  }
  Future<long long> sunionstore(std::string_view destination,
                                std::initializer_list<std::string_view> keys,
                                CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SUNIONSTORE", destination, keys, options);
  }
  /// SDIFF into `destination`; its size. SDIFFSTORE.
  template <detail::StringRange Keys>
  Future<long long> sdiffstore(std::string_view destination, const Keys& keys,
                               CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SDIFFSTORE", destination, keys, options);
  }
  Future<long long> sdiffstore(std::string_view destination,
                               std::initializer_list<std::string_view> keys,
                               CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "SDIFFSTORE", destination, keys, options);
  }
  /// Moves `member` from `source` to `destination`; false when it was not in `source`.
  /// SMOVE.
  Future<bool> smove(std::string_view source, std::string_view destination, std::string_view member,
                     CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"SMOVE", source, destination, member});
  }
  /// The size of the intersection, counting at most `limit` (0: no limit). SINTERCARD
  /// numkeys key… [LIMIT n].
  template <detail::StringRange Keys>
  Future<long long> sintercard(const Keys& keys, long long limit = 0, CallOptions options = {}) {
    detail::ArgList args({"SINTERCARD"}, detail::size_hint(keys) + 3);
    args.add_counted(keys);
    if (limit > 0) {
      args.add("LIMIT");
      args.add(limit);
    }
    return detail::send_built<long long>(*this, options, args);
  }
  Future<long long> sintercard(std::initializer_list<std::string_view> keys, long long limit = 0,
                               CallOptions options = {}) {
    return sintercard<std::initializer_list<std::string_view>>(keys, limit, options);
  }

  /// One page of members from `cursor` (0 to start); the page's cursor is 0 when the walk
  /// is complete. SSCAN key cursor [MATCH p] [COUNT n]. An element may appear on more than one
  /// page; see scan.hpp for a lazy iterator over every page.
  Future<ScanPageOf<std::string>> sscan(std::string_view key, std::uint64_t cursor,
                                        ElementScanOptions scan_options = {},
                                        CallOptions options = {}) {
    detail::ArgList args({"SSCAN", key, cursor}, 4);
    scan_options.append_to(args);
    return detail::send_built<ScanPageOf<std::string>>(*this, options, args);
  }
};

}  // namespace redmux
