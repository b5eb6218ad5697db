// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
// WAIT, WAITAOF) as a mixin for Database. They never run on the shared connection: the
// multiplexer leases each one a dedicated connection for as long as it blocks (see
// docs/blocking.md), so a BLPOP waiting for minutes delays nobody else. Their futures leave
// the per-caller order of the shared connection.
//
// Timeouts: `timeout` is the server-side blocking time; 0 blocks until an element arrives.
// The future's deadline is that time plus the call's timeout (CallOptions::timeout, else
// asyncTimeout); with 0 there is none unless CallOptions::timeout is given. Running out of
// blocking time is not an error: the future completes with nullopt (WAIT: the count reached).
// Seconds-based commands take fractions: 250 ms is sent as 0.25. A time over about 31 years
// (milliseconds::max()) is sent as 0, forever.
//
// Threads: the mixin holds no state; it is as thread-safe as the sink's send() (Database:
// any thread).
#pragma once

#include <charconv>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/commands/lists.hpp"
#include "redmux/commands/sink.hpp"
#include "redmux/types.hpp"

namespace redmux {

/// What BLPOP and BRPOP answer: the list that had an element, and the element.
struct KeyedElement {
  std::string key{};
  std::string element{};
  friend bool operator==(const KeyedElement&, const KeyedElement&) = default;
};

/// What BZPOPMIN and BZPOPMAX answer: the sorted set, the member and its score.
struct KeyedScoredMember {
  std::string key{};
  std::string member{};
  double score = 0;
  friend bool operator==(const KeyedScoredMember&, const KeyedScoredMember&) = default;
};

/// What BZMPOP (and ZMPOP) answer: the sorted set popped from and its members, in order.
struct SortedSetPop {
  std::string key{};
  std::vector<ScoredMember> members{};
};

/// Which end of a sorted set BZMPOP pops from.
enum class ScoreEnd : unsigned char { Min, Max };

template <>
struct ReplyTraits<KeyedElement> {
  static Result<KeyedElement> convert(NodeSpan reply) {
    auto pair = ReplyTraits<std::pair<std::string, std::string>>::convert(reply);
    if (!pair) return std::move(pair).error();
    return KeyedElement{std::move(pair->first), std::move(pair->second)};
  }
};

/// [key, member, score]; the score is a bulk string in RESP2 and a double in RESP3.
template <>
struct ReplyTraits<KeyedScoredMember> {
  static Result<KeyedScoredMember> convert(NodeSpan reply) {
    auto parts = ReplyTraits<std::vector<std::string>>::convert(reply);
    if (!parts) return std::move(parts).error();
    if (parts->size() != 3) {
      return Error(errc::unexpected_reply, "expected [key, member, score], got an array of " +
                                               std::to_string(parts->size()) + " elements");
    }
    const std::string& text = (*parts)[2];
    double score = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), score);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return Error(errc::unexpected_reply, "expected a score, got \"" + text + "\"");
    }
    return KeyedScoredMember{std::move((*parts)[0]), std::move((*parts)[1]), score};
  }
};

template <>
struct ReplyTraits<SortedSetPop> {
  static Result<SortedSetPop> convert(NodeSpan reply) {
    auto pair = ReplyTraits<std::pair<std::string, std::vector<ScoredMember>>>::convert(reply);
    if (!pair) return std::move(pair).error();
    return SortedSetPop{std::move(pair->first), std::move(pair->second)};
  }
};

namespace detail {
/// A blocking time in seconds as the BLPOP family takes it ("0.25"; forever as 0).
inline double blocking_seconds(std::chrono::milliseconds timeout) noexcept {
  return static_cast<double>(server_block_ms(timeout)) / 1000.0;
}
}  // namespace detail

template <class Derived>
class BlockingCommands {
 public:
  using Milliseconds = std::chrono::milliseconds;
  using PoppedElement = Future<std::optional<KeyedElement>>;
  using PoppedMember = Future<std::optional<KeyedScoredMember>>;

  /// Pops the head of the first non-empty list of `keys`, waiting up to `timeout` (0:
  /// forever) for one; nullopt when none arrived in time. BLPOP key… timeout.
  template <detail::StringRange Keys>
  PoppedElement blpop(const Keys& keys, Milliseconds timeout, CallOptions options = {}) {
    return send_blocking<std::optional<KeyedElement>>("BLPOP", keys, timeout, options);
  }
  PoppedElement blpop(detail::StringList keys, Milliseconds timeout, CallOptions options = {}) {
    return blpop<detail::StringList>(keys, timeout, options);
  }
  PoppedElement blpop(std::string_view key, Milliseconds timeout, CallOptions options = {}) {
    return blpop(detail::StringList{key}, timeout, options);
  }
  /// Like blpop(), from the tail. BRPOP key… timeout.
  template <detail::StringRange Keys>
  PoppedElement brpop(const Keys& keys, Milliseconds timeout, CallOptions options = {}) {
    return send_blocking<std::optional<KeyedElement>>("BRPOP", keys, timeout, options);
  }
  PoppedElement brpop(detail::StringList keys, Milliseconds timeout, CallOptions options = {}) {
    return brpop<detail::StringList>(keys, timeout, options);
  }
  PoppedElement brpop(std::string_view key, Milliseconds timeout, CallOptions options = {}) {
    return brpop(detail::StringList{key}, timeout, options);
  }
  /// LMOVE that waits up to `timeout` for `source` to have an element; the element moved,
  /// or nullopt. BLMOVE.
  Future<std::optional<std::string>> blmove(std::string_view source, std::string_view destination,
                                            ListEnd from, ListEnd to, Milliseconds timeout,
                                            CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(
        *this, options,
        {"BLMOVE", source, destination, detail::end_name(from), detail::end_name(to),
         detail::blocking_seconds(timeout)});
  }
  /// BLMOVE source destination RIGHT LEFT, in its older spelling. BRPOPLPUSH.
  Future<std::optional<std::string>> brpoplpush(std::string_view source,
                                                std::string_view destination, Milliseconds timeout,
                                                CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(
        *this, options, {"BRPOPLPUSH", source, destination, detail::blocking_seconds(timeout)});
  }
  /// LMPOP that waits up to `timeout`; nullopt when nothing arrived. BLMPOP timeout
  /// numkeys key… LEFT|RIGHT [COUNT n].
  template <detail::StringRange Keys>
  Future<std::optional<ListPop>> blmpop(const Keys& keys, ListEnd end, Milliseconds timeout,
                                        long long count = 1, CallOptions options = {}) {
    detail::ArgList args({"BLMPOP", detail::blocking_seconds(timeout)},
                         detail::size_hint(keys) + 4);
    args.add_counted(keys);
    args.add(detail::end_name(end));
    if (count != 1) {
      args.add("COUNT");
      args.add(count);
    }
    return detail::send_built<std::optional<ListPop>>(*this, options, args);
  }
  Future<std::optional<ListPop>> blmpop(std::initializer_list<std::string_view> keys, ListEnd end,
                                        Milliseconds timeout, long long count = 1,
                                        CallOptions options = {}) {
    return blmpop<std::initializer_list<std::string_view>>(keys, end, timeout, count, options);
  }
  /// Pops the lowest-scored member of the first non-empty sorted set of `keys`, waiting up
  /// to `timeout`; nullopt when none arrived. BZPOPMIN key… timeout.
  template <detail::StringRange Keys>
  PoppedMember bzpopmin(const Keys& keys, Milliseconds timeout, CallOptions options = {}) {
    return send_blocking<std::optional<KeyedScoredMember>>("BZPOPMIN", keys, timeout, options);
  }
  PoppedMember bzpopmin(detail::StringList keys, Milliseconds timeout, CallOptions options = {}) {
    return bzpopmin<detail::StringList>(keys, timeout, options);
  }
  PoppedMember bzpopmin(std::string_view key, Milliseconds timeout, CallOptions options = {}) {
    return bzpopmin(detail::StringList{key}, timeout, options);
  }
  /// Pops up to `count` members from one end of the first non-empty sorted set of `keys`,
  /// waiting up to `timeout`; nullopt when none arrived. BZMPOP timeout numkeys key…
  /// MIN|MAX [COUNT n].
  template <detail::StringRange Keys>
  Future<std::optional<SortedSetPop>> bzmpop(const Keys& keys, ScoreEnd end, Milliseconds timeout,
                                             long long count = 1, CallOptions options = {}) {
    detail::ArgList args({"BZMPOP", detail::blocking_seconds(timeout)},
                         detail::size_hint(keys) + 4);
    args.add_counted(keys);
    args.add(end == ScoreEnd::Min ? "MIN" : "MAX");
    if (count != 1) {
      args.add("COUNT");
      args.add(count);
    }
    return detail::send_built<std::optional<SortedSetPop>>(*this, options, args);
  }
  Future<std::optional<SortedSetPop>> bzmpop(std::initializer_list<std::string_view> keys,
                                             ScoreEnd end, Milliseconds timeout,
                                             long long count = 1, CallOptions options = {}) {
    return bzmpop<std::initializer_list<std::string_view>>(keys, end, timeout, count, options);
  }
  /// Like bzpopmin(), the highest score. BZPOPMAX key… timeout.
  template <detail::StringRange Keys>
  PoppedMember bzpopmax(const Keys& keys, Milliseconds timeout, CallOptions options = {}) {
    return send_blocking<std::optional<KeyedScoredMember>>("BZPOPMAX", keys, timeout, options);
  }
  PoppedMember bzpopmax(detail::StringList keys, Milliseconds timeout, CallOptions options = {}) {
    return bzpopmax<detail::StringList>(keys, timeout, options);
  }
  PoppedMember bzpopmax(std::string_view key, Milliseconds timeout, CallOptions options = {}) {
    return bzpopmax(detail::StringList{key}, timeout, options);
  }

  /// Waits until `replicas` replicas acknowledged this connection's writes, or `timeout`
  /// (0: forever); how many did. On a dedicated connection, so it covers writes made on
  /// that connection only: call it to wait for replication in general, not for one write
  /// of yours (which went over the shared connection). WAIT numreplicas timeout.
  Future<long long> wait(long long replicas, Milliseconds timeout, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options,
                                           {"WAIT", replicas, detail::server_block_ms(timeout)});
  }
  /// Waits until the writes are fsynced to the AOF of `local` (0 or 1) local and `replicas`
  /// replica servers; how many of each did. WAITAOF numlocal numreplicas timeout.
  Future<std::pair<long long, long long>> waitaof(long long local, long long replicas,
                                                  Milliseconds timeout, CallOptions options = {}) {
    return detail::send_command<std::pair<long long, long long>>(
        *this, options, {"WAITAOF", local, replicas, detail::server_block_ms(timeout)});
  }

 private:
  template <class T, class Keys>
  Future<T> send_blocking(const char* command, const Keys& keys, Milliseconds timeout,
                          const CallOptions& options) {
    detail::ArgList args({command}, detail::size_hint(keys) + 1);
    args.add_all(keys);
    args.add(detail::blocking_seconds(timeout));
    return detail::send_built<T>(*this, options, args);
  }
};

}  // namespace redmux
