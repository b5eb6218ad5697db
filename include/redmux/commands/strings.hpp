// String commands (GET, SET, INCR …) as a mixin: StringCommands<Self> gives any sink (see
// sink.hpp) the typed methods. Keys and values are binary-safe std::string_views, viewed
// only for the duration of the call. Thread-safety: that of the sink's send().
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/commands/sink.hpp"

namespace redmux {

/// A key's time to live for SET and GETEX. Default-constructed: no expiry option sent.
class Expiry {
 public:
  Expiry() = default;
  /// Expire after `ttl`: EX when whole seconds, else PX. Must be positive (the server
  /// rejects 0 and negative with "invalid expire time").
  static Expiry after(std::chrono::milliseconds ttl) noexcept {
    return ttl.count() % 1000 == 0 ? Expiry(Kind::Seconds, ttl.count() / 1000)
                                   : Expiry(Kind::Milliseconds, ttl.count());
  }
  /// Expire at an absolute time (PXAT, milliseconds since the Unix epoch).
  static Expiry at(std::chrono::system_clock::time_point when) noexcept {
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    return Expiry(Kind::UnixMilliseconds,
                  duration_cast<milliseconds>(when.time_since_epoch()).count());
  }
  /// SET only (GETEX refuses it before sending): keep the TTL the key already has (KEEPTTL).
  static Expiry keep_ttl() noexcept { return Expiry(Kind::KeepTtl, 0); }
  /// GETEX only (SET refuses it before sending): remove the TTL (PERSIST).
  static Expiry persist() noexcept { return Expiry(Kind::Persist, 0); }

  bool empty() const noexcept { return kind_ == Kind::None; }
  /// Why `command` ("SET" or "GETEX") cannot take this option (KEEPTTL is SET's, PERSIST
  /// GETEX's): an errc::invalid_argument, or no error when it can.
  Error refusal(std::string_view command) const {
    if (kind_ == Kind::KeepTtl && command == "GETEX") {
      return Error(errc::invalid_argument,
                   "Expiry::keep_ttl() is SET's KEEPTTL, which GETEX does not take: give GETEX "
                   "no Expiry to leave the TTL as it is");
    }
    if (kind_ == Kind::Persist && command == "SET") {
      return Error(errc::invalid_argument,
                   "Expiry::persist() is GETEX's PERSIST, which SET does not take: SET without "
                   "an Expiry already removes the key's TTL");
    }
    return {};
  }
  /// Appends the option's arguments ("EX", "10" …) to `args`.
  void append_to(detail::ArgList& args) const {
    switch (kind_) {
      case Kind::None:
        return;
      case Kind::Seconds:
        args.add("EX");
        break;
      case Kind::Milliseconds:
        args.add("PX");
        break;
      case Kind::UnixMilliseconds:
        args.add("PXAT");
        break;
      case Kind::KeepTtl:
        args.add("KEEPTTL");
        return;
      case Kind::Persist:
        args.add("PERSIST");
        return;
    }
    args.add(value_);
  }

 private:
  enum class Kind : unsigned char {
    None,
    Seconds,
    Milliseconds,
    UnixMilliseconds,
    KeepTtl,
    Persist
  };
  Expiry(Kind kind, long long value) noexcept : kind_(kind), value_(value) {}
  Kind kind_ = Kind::None;
  long long value_ = 0;
};

/// When a write happens, as far as the key's existence goes.
enum class SetCondition : unsigned char {
  Always,
  IfNotExists,  ///< NX
  IfExists,     ///< XX
};

/// Options of SET: `SetOptions{.expiry = Expiry::after(10s), .condition =
/// SetCondition::IfNotExists}`.
struct SetOptions {
  Expiry expiry{};
  SetCondition condition = SetCondition::Always;
};

template <class Derived>
class StringCommands {
 public:
  /// The value of `key`; nullopt when the key does not exist. GET. A key holding another
  /// type fails with ServerError (WRONGTYPE).
  Future<std::optional<std::string>> get(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"GET", key});
  }

  /// Sets `key` to `value`. SET [NX|XX] [EX|PX|PXAT n|KEEPTTL]. True when set; false when
  /// the NX/XX condition prevented it (the server answered nil).
  Future<bool> set(std::string_view key, std::string_view value, SetOptions set_options = {},
                   CallOptions options = {}) {
    if (Error refused = set_options.expiry.refusal("SET")) {
      return Future<bool>::ready_with(std::move(refused));
    }
    return detail::send_built<bool>(*this, options, set_args(key, value, set_options, false));
  }
  Future<bool> set(std::string_view key, std::string_view value, CallOptions options) {
    return set(key, value, SetOptions{}, options);
  }

  /// Sets `key` and returns its old value (nullopt when it had none). SET … GET. With
  /// SetCondition, nullopt also when there was no old value; whether the write happened
  /// is then unknown — use set() when that matters. Old value of another type: WRONGTYPE.
  Future<std::optional<std::string>> set_get(std::string_view key, std::string_view value,
                                             SetOptions set_options = {},
                                             CallOptions options = {}) {
    if (Error refused = set_options.expiry.refusal("SET")) {
      return Future<std::optional<std::string>>::ready_with(std::move(refused));
    }
    return detail::send_built<std::optional<std::string>>(*this, options,
                                                          set_args(key, value, set_options, true));
  }
  Future<std::optional<std::string>> set_get(std::string_view key, std::string_view value,
                                             CallOptions options) {
    return set_get(key, value, SetOptions{}, options);
  }

  /// The value of `key` (nullopt if missing), changing its TTL as `expiry` says
  /// (Expiry::persist() removes it; default: unchanged). GETEX.
  Future<std::optional<std::string>> getex(std::string_view key, Expiry expiry = {},
                                           CallOptions options = {}) {
    if (Error refused = expiry.refusal("GETEX")) {
      return Future<std::optional<std::string>>::ready_with(std::move(refused));
    }
    detail::ArgList args({"GETEX", key}, 2);
    expiry.append_to(args);
    return detail::send_built<std::optional<std::string>>(*this, options, args);
  }
  Future<std::optional<std::string>> getex(std::string_view key, CallOptions options) {
    return getex(key, Expiry{}, options);
  }

  /// The value of `key` (nullopt if missing), deleting the key. GETDEL.
  Future<std::optional<std::string>> getdel(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"GETDEL", key});
  }

  /// The values of `keys`, in order; nullopt for a missing key or one of another type.
  /// MGET. In a cluster, keys in several slots are split into one MGET per slot, sent to
  /// their nodes in parallel, and the values put back in key order (in a Transaction all
  /// keys must share one slot).
  template <detail::StringRange Keys>
  Future<std::vector<std::optional<std::string>>> mget(const Keys& keys, CallOptions options = {}) {
    detail::ArgList args({"MGET"}, detail::size_hint(keys));
    args.add_all(keys);
    return detail::send_built<std::vector<std::optional<std::string>>>(*this, options, args);
  }
  Future<std::vector<std::optional<std::string>>> mget(std::initializer_list<std::string_view> keys,
                                                       CallOptions options = {}) {
    return mget<std::initializer_list<std::string_view>>(keys, options);
  }

  /// Sets every key to its value, atomically. MSET. In a cluster, pairs in several slots are
  /// split into one MSET per slot, sent to their nodes in parallel: each part is atomic, the
  /// whole is not; OK when every part is, and when one part fails after others ran, the error
  /// says it ran only in part. In a Transaction all keys must share one slot.
  template <detail::StringPairRange Pairs>
  Future<void> mset(const Pairs& pairs, CallOptions options = {}) {
    detail::ArgList args({"MSET"}, 2 * detail::size_hint(pairs));
    args.add_pairs(pairs);
    return detail::send_built<void>(*this, options, args);
  }
  Future<void> mset(detail::StringPairs pairs, CallOptions options = {}) {
    return mset<detail::StringPairs>(pairs, options);
  }

  /// Sets every key only if none exists; true when set. MSETNX.
  template <detail::StringPairRange Pairs>
  Future<bool> msetnx(const Pairs& pairs, CallOptions options = {}) {
    detail::ArgList args({"MSETNX"}, 2 * detail::size_hint(pairs));
    args.add_pairs(pairs);
    return detail::send_built<bool>(*this, options, args);
  }
  Future<bool> msetnx(detail::StringPairs pairs, CallOptions options = {}) {
    return msetnx<detail::StringPairs>(pairs, options);
  }

  /// Adds 1 and returns the new value (a missing key counts as 0). INCR. Not an integer
  /// or out of range: ServerError.
  Future<long long> incr(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"INCR", key});
  }
  /// Adds `by`; the new value. INCRBY.
  Future<long long> incrby(std::string_view key, long long by, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"INCRBY", key, by});
  }
  /// Adds `by` as a float; the new value. INCRBYFLOAT.
  Future<double> incrbyfloat(std::string_view key, double by, CallOptions options = {}) {
    return detail::send_command<double>(*this, options, {"INCRBYFLOAT", key, by});
  }
  /// Subtracts 1; the new value. DECR.
  Future<long long> decr(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"DECR", key});
  }
  /// Subtracts `by`; the new value. DECRBY.
  Future<long long> decrby(std::string_view key, long long by, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"DECRBY", key, by});
  }

  /// Appends `value`; the new length. APPEND.
  Future<long long> append(std::string_view key, std::string_view value, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"APPEND", key, value});
  }
  /// The value's length in bytes; 0 for a missing key. STRLEN.
  Future<long long> strlen(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"STRLEN", key});
  }
  /// Bytes `start`..`end` inclusive (negative counts from the end); "" for a missing key.
  /// GETRANGE.
  Future<std::string> getrange(std::string_view key, long long start, long long end,
                               CallOptions options = {}) {
    return detail::send_command<std::string>(*this, options, {"GETRANGE", key, start, end});
  }
  /// Overwrites from byte `offset` (zero-padding a short value); the new length. SETRANGE.
  Future<long long> setrange(std::string_view key, long long offset, std::string_view value,
                             CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"SETRANGE", key, offset, value});
  }

 private:
  static detail::ArgList set_args(std::string_view key, std::string_view value,
                                  const SetOptions& options, bool get) {
    detail::ArgList args({"SET", key, value}, 4);
    if (options.condition == SetCondition::IfNotExists) args.add("NX");
    if (options.condition == SetCondition::IfExists) args.add("XX");
    if (get) args.add("GET");
    options.expiry.append_to(args);
    return args;
  }
};

}  // namespace redmux
