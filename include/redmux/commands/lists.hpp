// List commands (LPUSH, LRANGE, LMOVE …) as a mixin for any sink (see sink.hpp). Only the
// non-blocking ones: BLPOP and friends hold a connection and come with the dedicated
// blocking-connection pool. Keys and elements are binary-safe std::string_views, viewed
// only for the duration of the call. Thread-safety: that of the sink's send().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/commands/sink.hpp"
#include "redmux/types.hpp"

namespace redmux {

/// An end of a list: Left is the head (index 0), Right the tail.
enum class ListEnd : unsigned char { Left, Right };

/// Where LINSERT puts the new element relative to the pivot.
enum class InsertPosition : unsigned char { Before, After };

/// Options of LPOS.
struct LposOptions {
  std::optional<long long> rank{};    ///< RANK: the n-th match (negative: from the tail)
  std::optional<long long> maxlen{};  ///< MAXLEN: compare at most this many elements
};

namespace detail {
inline const char* end_name(ListEnd end) noexcept {
  return end == ListEnd::Left ? "LEFT" : "RIGHT";
}
}  // namespace detail

template <class Derived>
class ListCommands {
 public:
  /// Pushes `element` at the head; the new length. LPUSH.
  Future<long long> lpush(std::string_view key, std::string_view element,
                          CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"LPUSH", key, element});
  }
  /// Pushes `elements` at the head one by one (so the last ends up first). LPUSH.
  template <detail::StringRange Elements>
  Future<long long> lpush(std::string_view key, const Elements& elements,
                          CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "LPUSH", key, elements, options);
  }
  Future<long long> lpush(std::string_view key, std::initializer_list<std::string_view> elements,
                          CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "LPUSH", key, elements, options);
  }
  /// Pushes `elements` at the tail, in order; the new length. RPUSH.
  template <detail::StringRange Elements>
  Future<long long> rpush(std::string_view key, const Elements& elements,
                          CallOptions options = {}) {
    return detail::send_with_key<long long>(*this, "RPUSH", key, elements, options);
  }
  Future<long long> rpush(std::string_view key, detail::StringList elements,
                          CallOptions options = {}) {
    return rpush<detail::StringList>(key, elements, options);
  }
  /// Pushes one element at the tail; the new length. RPUSH.
  Future<long long> rpush(std::string_view key, std::string_view element,
                          CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"RPUSH", key, element});
  }
  /// LPUSH only if the list exists; the new length, 0 when it does not. LPUSHX.
  Future<long long> lpushx(std::string_view key, std::string_view element,
                           CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"LPUSHX", key, element});
  }
  /// RPUSH only if the list exists; the new length, 0 when it does not. RPUSHX.
  Future<long long> rpushx(std::string_view key, std::string_view element,
                           CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"RPUSHX", key, element});
  }
  /// Removes and returns the head; nullopt for a missing key. LPOP.
  Future<std::optional<std::string>> lpop(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"LPOP", key});
  }
  /// Removes and returns up to `count` elements from the head; nullopt for a missing key.
  /// LPOP key count.
  Future<std::optional<std::vector<std::string>>> lpop(std::string_view key, long long count,
                                                       CallOptions options = {}) {
    return detail::send_command<std::optional<std::vector<std::string>>>(*this, options,
                                                                         {"LPOP", key, count});
  }
  /// Removes and returns the tail; nullopt for a missing key. RPOP.
  Future<std::optional<std::string>> rpop(std::string_view key, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"RPOP", key});
  }
  /// Up to `count` elements from the tail, tail first; nullopt for a missing key. RPOP.
  Future<std::optional<std::vector<std::string>>> rpop(std::string_view key, long long count,
                                                       CallOptions options = {}) {
    return detail::send_command<std::optional<std::vector<std::string>>>(*this, options,
                                                                         {"RPOP", key, count});
  }
  /// Elements `start`..`stop` inclusive (negative counts from the tail: 0, -1 is all).
  /// LRANGE.
  Future<std::vector<std::string>> lrange(std::string_view key, long long start, long long stop,
                                          CallOptions options = {}) {
    return detail::send_command<std::vector<std::string>>(*this, options,
                                                          {"LRANGE", key, start, stop});
  }
  /// Length; 0 for a missing key. LLEN.
  Future<long long> llen(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"LLEN", key});
  }
  /// The element at `index` (negative from the tail); nullopt when out of range. LINDEX.
  Future<std::optional<std::string>> lindex(std::string_view key, long long index,
                                            CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"LINDEX", key, index});
  }
  /// Replaces the element at `index`. LSET. Out of range or no key: ServerError.
  Future<void> lset(std::string_view key, long long index, std::string_view element,
                    CallOptions options = {}) {
    return detail::send_command<void>(*this, options, {"LSET", key, index, element});
  }
  /// Inserts `element` before or after the first `pivot`; the new length, -1 when the
  /// pivot is not found, 0 for a missing key. LINSERT.
  Future<long long> linsert(std::string_view key, InsertPosition position, std::string_view pivot,
                            std::string_view element, CallOptions options = {}) {
    return detail::send_command<long long>(
        *this, options,
        {"LINSERT", key, position == InsertPosition::Before ? "BEFORE" : "AFTER", pivot, element});
  }
  /// Removes occurrences of `element`: the first `count` from the head (count > 0), from
  /// the tail (count < 0), or all (0); how many were removed. LREM.
  Future<long long> lrem(std::string_view key, long long count, std::string_view element,
                         CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"LREM", key, count, element});
  }
  /// Keeps only `start`..`stop` inclusive. LTRIM.
  Future<void> ltrim(std::string_view key, long long start, long long stop,
                     CallOptions options = {}) {
    return detail::send_command<void>(*this, options, {"LTRIM", key, start, stop});
  }
  /// The index of the first match (per `lpos_options.rank`); nullopt when none. LPOS.
  Future<std::optional<long long>> lpos(std::string_view key, std::string_view element,
                                        LposOptions lpos_options = {}, CallOptions options = {}) {
    detail::ArgList args({"LPOS", key, element}, 4);
    add_lpos_options(args, lpos_options);
    return detail::send_built<std::optional<long long>>(*this, options, args);
  }
  Future<std::optional<long long>> lpos(std::string_view key, std::string_view element,
                                        CallOptions options) {
    return lpos(key, element, LposOptions{}, options);
  }
  /// The indexes of up to `count` matches (0: all). LPOS … COUNT n.
  Future<std::vector<long long>> lpos(std::string_view key, std::string_view element,
                                      long long count, LposOptions lpos_options = {},
                                      CallOptions options = {}) {
    detail::ArgList args({"LPOS", key, element, "COUNT", count}, 4);
    add_lpos_options(args, lpos_options);
    return detail::send_built<std::vector<long long>>(*this, options, args);
  }
  /// Moves an element from one end of `source` to one end of `destination` (which may be
  /// the same list); the element, or nullopt when `source` is missing. LMOVE.
  Future<std::optional<std::string>> lmove(std::string_view source, std::string_view destination,
                                           ListEnd from, ListEnd to, CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(
        *this, options,
        {"LMOVE", source, destination, detail::end_name(from), detail::end_name(to)});
  }
  /// Pops up to `count` elements from the first non-empty list of `keys`; nullopt when
  /// all are empty. LMPOP numkeys key… LEFT|RIGHT [COUNT n] (never blocks).
  template <detail::StringRange Keys>
  Future<std::optional<ListPop>> lmpop(const Keys& keys, ListEnd end, long long count = 1,
                                       CallOptions options = {}) {
    detail::ArgList args({"LMPOP"}, detail::size_hint(keys) + 4);
    args.add_counted(keys);
    args.add(detail::end_name(end));
    if (count != 1) {
      args.add("COUNT");
      args.add(count);
    }
    return detail::send_built<std::optional<ListPop>>(*this, options, args);
  }
  Future<std::optional<ListPop>> lmpop(std::initializer_list<std::string_view> keys, ListEnd end,
                                       long long count = 1, CallOptions options = {}) {
    return lmpop<std::initializer_list<std::string_view>>(keys, end, count, options);
  }

 private:
  static void add_lpos_options(detail::ArgList& args, const LposOptions& lpos_options) {
    if (lpos_options.rank) {
      args.add("RANK");
      args.add(*lpos_options.rank);
    }
    if (lpos_options.maxlen) {
      args.add("MAXLEN");
      args.add(*lpos_options.maxlen);
    }
  }
};

}  // namespace redmux
