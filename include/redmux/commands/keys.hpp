// Key commands (DEL, EXPIRE, TTL, SCAN …) as a mixin for any sink (see sink.hpp). Keys are
// binary-safe std::string_views, viewed only for the duration of the call. Thread-safety:
// that of the sink's send().
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redmux/commands/sink.hpp"
#include "redmux/types.hpp"

namespace redmux {

/// When EXPIRE and friends apply (Redis 7.0+ for anything but Always).
enum class ExpireCondition : unsigned char {
  Always,
  IfNoExpiry,   ///< NX: only when the key has no TTL
  IfHasExpiry,  ///< XX: only when it has one
  IfGreater,    ///< GT: only when the new expiry is later
  IfLess,       ///< LT: only when it is sooner (no TTL counts as infinite)
};

/// Options of COPY.
struct CopyOptions {
  std::optional<int> destination_db{};  ///< DB n: copy into another database
  bool replace = false;                 ///< REPLACE: overwrite an existing destination
};

/// Options of SCAN (and the SCAN family).
struct ScanOptions {
  std::string_view pattern{};  ///< MATCH: glob-style, empty for all
  long long page_size = 0;  ///< COUNT: a hint of work per call; 0 (or less): the server's default
  std::string_view type{};  ///< TYPE (SCAN only): "string", "hash" …; empty for all
};

/// Options of HSCAN, SSCAN and ZSCAN (SCAN's without TYPE).
struct ElementScanOptions {
  std::string_view pattern{};  ///< MATCH: glob-style, against the field or member; empty for all
  long long page_size = 0;  ///< COUNT: a hint of work per call; 0 (or less): the server's default

  /// Appends "[MATCH p] [COUNT n]"; the arguments view `pattern`.
  void append_to(detail::ArgList& args) const {
    if (!pattern.empty()) {
      args.add("MATCH");
      args.add(pattern);
    }
    if (page_size > 0) {
      args.add("COUNT");
      args.add(page_size);
    }
  }
};

template <class Derived>
class KeyCommands {
 public:
  /// Deletes `key`; 1 if it existed, else 0. DEL.
  Future<long long> del(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"DEL", key});
  }
  /// Deletes `keys`; how many existed. DEL. In a cluster, keys in several slots are split
  /// into one DEL per slot, sent to their nodes in parallel, and the counts summed: not
  /// atomic across slots, and when one part fails after others ran, the error says it ran
  /// only in part. In a Transaction all keys must share one slot.
  template <detail::StringRange Keys>
  Future<long long> del(const Keys& keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "DEL", keys, options);
  }
  Future<long long> del(std::initializer_list<std::string_view> keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "DEL", keys, options);
  }

  /// Like del() but reclaims memory in the background. UNLINK. In a cluster, split per slot
  /// and summed as del() is.
  Future<long long> unlink(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"UNLINK", key});
  }
  template <detail::StringRange Keys>
  Future<long long> unlink(const Keys& keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "UNLINK", keys, options);
  }
  Future<long long> unlink(std::initializer_list<std::string_view> keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "UNLINK", keys, options);
  }

  /// True when `key` exists. EXISTS.
  Future<bool> exists(std::string_view key, CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"EXISTS", key});
  }
  /// How many of `keys` exist (a key named twice counts twice). EXISTS. In a cluster, split
  /// per slot and summed as del() is.
  template <detail::StringRange Keys>
  Future<long long> exists(const Keys& keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "EXISTS", keys, options);
  }
  Future<long long> exists(std::initializer_list<std::string_view> keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "EXISTS", keys, options);
  }

  /// Sets a TTL in seconds; false when the key is missing or `condition` prevented it.
  /// EXPIRE [NX|XX|GT|LT]. A TTL of 0 or less deletes the key.
  Future<bool> expire(std::string_view key, std::chrono::seconds ttl,
                      ExpireCondition condition = ExpireCondition::Always,
                      CallOptions options = {}) {
    return send_expire("EXPIRE", key, ttl.count(), condition, options);
  }
  Future<bool> expire(std::string_view key, std::chrono::seconds ttl, CallOptions options) {
    return expire(key, ttl, ExpireCondition::Always, options);
  }
  /// Sets a TTL in milliseconds. PEXPIRE [NX|XX|GT|LT].
  Future<bool> pexpire(std::string_view key, std::chrono::milliseconds ttl,
                       ExpireCondition condition = ExpireCondition::Always,
                       CallOptions options = {}) {
    return send_expire("PEXPIRE", key, ttl.count(), condition, options);
  }
  Future<bool> pexpire(std::string_view key, std::chrono::milliseconds ttl, CallOptions options) {
    return pexpire(key, ttl, ExpireCondition::Always, options);
  }
  /// Expires at `when` (whole seconds, rounded down). EXPIREAT [NX|XX|GT|LT].
  Future<bool> expireat(std::string_view key, std::chrono::system_clock::time_point when,
                        ExpireCondition condition = ExpireCondition::Always,
                        CallOptions options = {}) {
    return send_expire("EXPIREAT", key, since_epoch<std::chrono::seconds>(when), condition,
                       options);
  }
  Future<bool> expireat(std::string_view key, std::chrono::system_clock::time_point when,
                        CallOptions options) {
    return expireat(key, when, ExpireCondition::Always, options);
  }
  /// Expires at `when` in milliseconds. PEXPIREAT [NX|XX|GT|LT].
  Future<bool> pexpireat(std::string_view key, std::chrono::system_clock::time_point when,
                         ExpireCondition condition = ExpireCondition::Always,
                         CallOptions options = {}) {
    return send_expire("PEXPIREAT", key, since_epoch<std::chrono::milliseconds>(when), condition,
                       options);
  }
  Future<bool> pexpireat(std::string_view key, std::chrono::system_clock::time_point when,
                         CallOptions options) {
    return pexpireat(key, when, ExpireCondition::Always, options);
  }

  /// Seconds to live: -1 when the key has no TTL, -2 when it does not exist. TTL.
  Future<long long> ttl(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"TTL", key});
  }
  /// Milliseconds to live: -1 no TTL, -2 no key. PTTL.
  Future<long long> pttl(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"PTTL", key});
  }
  /// Removes the TTL; false when there was none or no key. PERSIST.
  Future<bool> persist(std::string_view key, CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"PERSIST", key});
  }
  /// "string", "list", "set", "zset", "hash", "stream", or "none" for a missing key. TYPE.
  Future<std::string> type(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::string>(*this, options, {"TYPE", key});
  }
  /// Renames, overwriting `to`. RENAME. A missing `from`: ServerError "no such key".
  Future<void> rename(std::string_view from, std::string_view to, CallOptions options = {}) {
    return detail::send_command<void>(*this, options, {"RENAME", from, to});
  }
  /// Renames only if `to` does not exist; true when renamed. RENAMENX.
  Future<bool> renamenx(std::string_view from, std::string_view to, CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"RENAMENX", from, to});
  }
  /// Copies a key's value; false when the source is missing or the destination exists
  /// (without replace). COPY [DB n] [REPLACE].
  Future<bool> copy(std::string_view from, std::string_view to, CopyOptions copy_options = {},
                    CallOptions options = {}) {
    detail::ArgList args({"COPY", from, to}, 3);
    if (copy_options.destination_db) {
      args.add("DB");
      args.add(*copy_options.destination_db);
    }
    if (copy_options.replace) args.add("REPLACE");
    return detail::send_built<bool>(*this, options, args);
  }
  Future<bool> copy(std::string_view from, std::string_view to, CallOptions options) {
    return copy(from, to, CopyOptions{}, options);
  }
  /// Updates the last-access time of `keys`; how many exist. TOUCH. In a cluster, split per
  /// slot and summed as del() is.
  template <detail::StringRange Keys>
  Future<long long> touch(const Keys& keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "TOUCH", keys, options);
  }
  Future<long long> touch(std::initializer_list<std::string_view> keys, CallOptions options = {}) {
    return detail::send_keys<long long>(*this, "TOUCH", keys, options);
  }
  /// The internal encoding ("listpack", "int", "embstr" …); nullopt for a missing key.
  /// OBJECT ENCODING.
  Future<std::optional<std::string>> object_encoding(std::string_view key,
                                                     CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options,
                                                            {"OBJECT", "ENCODING", key});
  }
  /// Bytes the key and its value use; nullopt for a missing key. MEMORY USAGE [SAMPLES n]
  /// (`samples` 0 = all nested values; unset: the server's default of 5).
  Future<std::optional<long long>> memory_usage(std::string_view key,
                                                std::optional<long long> samples = {},
                                                CallOptions options = {}) {
    detail::ArgList args({"MEMORY", "USAGE", key}, 2);
    if (samples) {
      args.add("SAMPLES");
      args.add(*samples);
    }
    return detail::send_built<std::optional<long long>>(*this, options, args);
  }

  /// One page of keys from `cursor` (0 to start); the page's cursor is 0 when the scan is
  /// complete. SCAN cursor [MATCH p] [COUNT n] [TYPE t]. A key may appear on more than
  /// one page; keys that exist throughout are returned at least once. In a cluster that
  /// holds only while no slot moves and no failover happens: the walk scans one primary
  /// after another, so a key that slot migration (resharding) moves from a primary not yet
  /// scanned to one already scanned is never returned, and one moved the other way may be
  /// returned twice. See scan.hpp for an iterator over all pages.
  Future<ScanPage> scan(std::uint64_t cursor, ScanOptions scan_options = {},
                        CallOptions options = {}) {
    detail::ArgList args({"SCAN", cursor}, 6);
    if (!scan_options.pattern.empty()) {
      args.add("MATCH");
      args.add(scan_options.pattern);
    }
    if (scan_options.page_size > 0) {
      args.add("COUNT");
      args.add(scan_options.page_size);
    }
    if (!scan_options.type.empty()) {
      args.add("TYPE");
      args.add(scan_options.type);
    }
    return detail::send_built<ScanPage>(*this, options, args);
  }
  Future<ScanPage> scan(std::uint64_t cursor, CallOptions options) {
    return scan(cursor, ScanOptions{}, options);
  }

 private:
  template <class Unit>
  static long long since_epoch(std::chrono::system_clock::time_point when) noexcept {
    return std::chrono::duration_cast<Unit>(when.time_since_epoch()).count();
  }
  Future<bool> send_expire(const char* command, std::string_view key, long long value,
                           ExpireCondition condition, const CallOptions& options) {
    switch (condition) {
      case ExpireCondition::Always:
        return detail::send_command<bool>(*this, options, {command, key, value});
      case ExpireCondition::IfNoExpiry:
        return detail::send_command<bool>(*this, options, {command, key, value, "NX"});
      case ExpireCondition::IfHasExpiry:
        return detail::send_command<bool>(*this, options, {command, key, value, "XX"});
      case ExpireCondition::IfGreater:
        return detail::send_command<bool>(*this, options, {command, key, value, "GT"});
      case ExpireCondition::IfLess:
        return detail::send_command<bool>(*this, options, {command, key, value, "LT"});
    }
    return detail::send_command<bool>(*this, options, {command, key, value});
  }
};

}  // namespace redmux
