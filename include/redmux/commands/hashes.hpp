// Hash commands (HSET, HGET, HGETALL …) as a mixin for any sink (see sink.hpp). Keys,
// fields and values are binary-safe std::string_views, viewed only for the duration of the
// call. Thread-safety: that of the sink's send().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "redmux/commands/keys.hpp"  // ElementScanOptions
#include "redmux/commands/sink.hpp"
#include "redmux/types.hpp"

namespace redmux {

template <class Derived>
class HashCommands {
 public:
  /// Sets one field; 1 if the field is new, 0 if it was updated. HSET.
  Future<long long> hset(std::string_view key, std::string_view field, std::string_view value,
                         CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"HSET", key, field, value});
  }
  /// Sets every field to its value; how many fields are new. HSET.
  template <detail::StringPairRange Pairs>
  Future<long long> hset(std::string_view key, const Pairs& fields, CallOptions options = {}) {
    detail::ArgList args({"HSET", key}, 2 * detail::size_hint(fields));
    args.add_pairs(fields);
    return detail::send_built<long long>(*this, options, args);
  }
  Future<long long> hset(std::string_view key, detail::StringPairs fields,
                         CallOptions options = {}) {
    return hset<detail::StringPairs>(key, fields, options);
  }
  /// Sets a field only if it does not exist; true when set. HSETNX.
  Future<bool> hsetnx(std::string_view key, std::string_view field, std::string_view value,
                      CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"HSETNX", key, field, value});
  }
  /// A field's value; nullopt when the field or the key is missing. HGET.
  Future<std::optional<std::string>> hget(std::string_view key, std::string_view field,
                                          CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"HGET", key, field});
  }
  /// The values of `fields`, in order; nullopt for each missing one. HMGET.
  template <detail::StringRange Fields>
  Future<std::vector<std::optional<std::string>>> hmget(std::string_view key, const Fields& fields,
                                                        CallOptions options = {}) {
    detail::ArgList args({"HMGET", key}, detail::size_hint(fields));
    args.add_all(fields);
    return detail::send_built<std::vector<std::optional<std::string>>>(*this, options, args);
  }
  Future<std::vector<std::optional<std::string>>> hmget(
      std::string_view key, std::initializer_list<std::string_view> fields,
      CallOptions options = {}) {
    return hmget<std::initializer_list<std::string_view>>(key, fields, options);
  }
  /// Every field and value; empty for a missing key. HGETALL (a flat array in RESP2, a map
  /// in RESP3). For a huge hash, prefer HSCAN.
  Future<std::unordered_map<std::string, std::string>> hgetall(std::string_view key,
                                                               CallOptions options = {}) {
    return detail::send_command<std::unordered_map<std::string, std::string>>(*this, options,
                                                                              {"HGETALL", key});
  }
  /// Deletes one field; 1 if it existed. HDEL.
  Future<long long> hdel(std::string_view key, std::string_view field, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"HDEL", key, field});
  }
  /// Deletes `fields`; how many existed. HDEL.
  template <detail::StringRange Fields>
  Future<long long> hdel(std::string_view key, const Fields& fields, CallOptions options = {}) {
    detail::ArgList args({"HDEL", key}, detail::size_hint(fields));
    args.add_all(fields);
    return detail::send_built<long long>(*this, options, args);
  }
  Future<long long> hdel(std::string_view key, std::initializer_list<std::string_view> fields,
                         CallOptions options = {}) {
    return hdel<std::initializer_list<std::string_view>>(key, fields, options);
  }
  /// True when the field exists. HEXISTS.
  Future<bool> hexists(std::string_view key, std::string_view field, CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"HEXISTS", key, field});
  }
  /// Adds `by` to a field (missing: 0); the new value. HINCRBY.
  Future<long long> hincrby(std::string_view key, std::string_view field, long long by,
                            CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"HINCRBY", key, field, by});
  }
  /// Adds `by` as a float; the new value. HINCRBYFLOAT.
  Future<double> hincrbyfloat(std::string_view key, std::string_view field, double by,
                              CallOptions options = {}) {
    return detail::send_command<double>(*this, options, {"HINCRBYFLOAT", key, field, by});
  }
  /// Every field name; empty for a missing key. HKEYS.
  Future<std::vector<std::string>> hkeys(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::vector<std::string>>(*this, options, {"HKEYS", key});
  }
  /// Every value; empty for a missing key. HVALS.
  Future<std::vector<std::string>> hvals(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::vector<std::string>>(*this, options, {"HVALS", key});
  }
  /// Number of fields; 0 for a missing key. HLEN.
  Future<long long> hlen(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"HLEN", key});
  }
  /// Length of a field's value; 0 when missing. HSTRLEN.
  Future<long long> hstrlen(std::string_view key, std::string_view field,
                            CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"HSTRLEN", key, field});
  }
  /// A random field; nullopt for a missing key. HRANDFIELD.
  Future<std::optional<std::string>> hrandfield(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"HRANDFIELD", key});
  }
  /// Up to `count` distinct random fields (negative: |count| fields, repeats allowed);
  /// empty for a missing key. HRANDFIELD key count.
  Future<std::vector<std::string>> hrandfield(std::string_view key, long long count,
                                              CallOptions options = {}) {
    return detail::send_command<std::vector<std::string>>(*this, options,
                                                          {"HRANDFIELD", key, count});
  }
  /// Like hrandfield(key, count), with each field's value. HRANDFIELD … WITHVALUES.
  Future<std::vector<FieldValue>> hrandfield_with_values(std::string_view key, long long count,
                                                         CallOptions options = {}) {
    return detail::send_command<std::vector<FieldValue>>(*this, options,
                                                         {"HRANDFIELD", key, count, "WITHVALUES"});
  }

  /// One page of fields with their values from `cursor` (0 to start); the page's cursor is 0 when
  /// the walk is complete. HSCAN key cursor [MATCH p] [COUNT n]. An element may appear on more than
  /// one page; see scan.hpp for a lazy iterator over every page.
  Future<ScanPageOf<FieldValue>> hscan(std::string_view key, std::uint64_t cursor,
                                       ElementScanOptions scan_options = {},
                                       CallOptions options = {}) {
    detail::ArgList args({"HSCAN", key, cursor}, 4);
    scan_options.append_to(args);
    return detail::send_built<ScanPageOf<FieldValue>>(*this, options, args);
  }

  /// Like hscan() with the fields only: HSCAN key cursor [MATCH p] [COUNT n] NOVALUES (the
  /// server sends no values). Needs Valkey 8 or Redis 7.4; an older server refuses NOVALUES
  /// with a ServerError (use hscan() there).
  Future<ScanPageOf<std::string>> hscan_fields(std::string_view key, std::uint64_t cursor,
                                               ElementScanOptions scan_options = {},
                                               CallOptions options = {}) {
    detail::ArgList args({"HSCAN", key, cursor}, 5);
    scan_options.append_to(args);
    args.add("NOVALUES");
    return detail::send_built<ScanPageOf<std::string>>(*this, options, args);
  }
};

}  // namespace redmux
