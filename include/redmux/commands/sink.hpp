// What every command group shares: how a typed command reaches the object that sends it
// (the "sink": Database, Batch, Transaction …) and how variable-length argument lists are
// built: the send helpers every group uses, and the FireAndForget policy every sink's send()
// shares (send_through). Include a group header (strings.hpp …) or commands.hpp rather
// than this one.
//
// The sink contract. A class that mixes in Commands<Self> (or any single group) provides
//
//   template <class T> Future<T> send(const CallOptions& options, std::span<const Arg> args);
//
// public, where args[0] is the command name. It must copy what it needs from `args` before
// returning (the views die at the end of the caller's full expression) and complete the
// future with the reply converted by ReplyTraits<T>.
//
// Threads: the mixins hold no state; they are as thread-safe as the sink's send().
#pragma once

#include <chrono>
#include <concepts>
#include <initializer_list>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "redmux/arg.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"

namespace redmux::detail {

/// A blocking time longer than this (about 31 years) is as good as forever. The typed
/// commands send it as 0, the server's "no limit": the server refuses a time that overflows
/// once added to its clock, such as std::chrono::milliseconds::max().
inline constexpr long long kForeverBlockMs = 1'000'000'000'000;

/// The blocking time in milliseconds as a typed command sends it (see kForeverBlockMs).
inline long long server_block_ms(std::chrono::milliseconds time) noexcept {
  return time.count() > kForeverBlockMs ? 0 : time.count();
}

/// A range of things that view as strings: vector<string>, span<const string_view>, ….
template <class R>
concept StringRange = std::ranges::input_range<R> &&
    std::convertible_to<std::ranges::range_reference_t<R>, std::string_view>;

/// A range of pairs of strings: map<string, string>, vector<pair<string_view, string_view>> ….
template <class R>
concept StringPairRange = std::ranges::input_range<R> &&
    requires(std::ranges::range_reference_t<R> p) {
  { p.first } -> std::convertible_to<std::string_view>;
  { p.second } -> std::convertible_to<std::string_view>;
};

using StringPairs = std::initializer_list<std::pair<std::string_view, std::string_view>>;
/// A braced list of strings: `{"a", "b"}`.
using StringList = std::initializer_list<std::string_view>;

/// Arguments of a variable-length command. A vector: one allocation on the calling thread,
/// never on the I/O thread.
class ArgList {
 public:
  ArgList(std::initializer_list<Arg> head, std::size_t more = 0) {
    args_.reserve(head.size() + more);
    args_.insert(args_.end(), head.begin(), head.end());
  }
  void add(Arg arg) { args_.push_back(arg); }
  template <StringRange R>
  void add_all(const R& items) {
    for (auto&& item : items) args_.emplace_back(std::string_view(item));
  }
  /// Adds the number of `items`, then the items (numkeys-style commands: LMPOP, ZUNION …).
  template <StringRange R>
  void add_counted(const R& items) {
    const std::size_t at = args_.size();
    args_.emplace_back(0);
    long long count = 0;
    for (auto&& item : items) {
      args_.emplace_back(std::string_view(item));
      ++count;
    }
    args_[at] = Arg(count);
  }
  template <StringPairRange R>
  void add_pairs(const R& pairs) {
    for (auto&& p : pairs) {
      args_.emplace_back(std::string_view(p.first));
      args_.emplace_back(std::string_view(p.second));
    }
  }
  std::span<const Arg> span() const noexcept { return args_; }

 private:
  std::vector<Arg> args_;
};

/// The number of elements of a sized range, or 0 (a reserve hint only).
template <class R>
std::size_t size_hint(const R& range) {
  if constexpr (std::ranges::sized_range<R>) {
    return static_cast<std::size_t>(std::ranges::size(range));
  } else {
    return 0;
  }
}

/// The one sink policy for FireAndForget, shared by every sink's send(): `submit(state)`
/// hands the command over and returns its refusal, if any. A FireAndForget command is handed
/// over without a state, and its future is complete at once: with T{} (no reply is awaited),
/// or with the refusal (queue full, admin gate, a connection-state command …). Any other
/// command gets a state whose future completes with its reply (or is failed by `submit`).
template <class T, class Submit>
Future<T> send_through(const CallOptions& options, Submit&& submit) {
  if (has_flag(options.flags, Flags::FireAndForget)) {
    if (Error refused = submit(nullptr)) return Future<T>::ready_with(std::move(refused));
    if constexpr (std::is_void_v<T>) {
      return Future<T>::ready_with(Result<void>());
    } else {
      return Future<T>::ready_with(T{});
    }
  }
  auto* state = new FutureState<T>();  // the Future's reference
  submit(static_cast<CommandState*>(state));
  return Future<T>(state);
}

// How every command group reaches its sink: a group `G<Sink>` (StringCommands<Database> …)
// passes itself, `*this`, and these helpers send through the sink it is mixed into. One
// set for every group, and unambiguous although a sink mixes in many groups.

/// The sink a command group is mixed into.
template <template <class> class Group, class Sink>
Sink& sink_of(Group<Sink>& group) noexcept {
  return static_cast<Sink&>(group);
}
/// Sends a fixed argument list.
template <class T, template <class> class Group, class Sink>
Future<T> send_command(Group<Sink>& group, const CallOptions& options,
                       std::initializer_list<Arg> args) {
  return sink_of(group).template send<T>(options, std::span<const Arg>(args.begin(), args.size()));
}
/// Sends a built argument list.
template <class T, template <class> class Group, class Sink>
Future<T> send_built(Group<Sink>& group, const CallOptions& options, const ArgList& args) {
  return sink_of(group).template send<T>(options, args.span());
}
/// Sends `command key item…`.
template <class T, template <class> class Group, class Sink, class Items>
Future<T> send_with_key(Group<Sink>& group, const char* command, std::string_view key,
                        const Items& items, const CallOptions& options) {
  ArgList args({command, key}, size_hint(items));
  args.add_all(items);
  return send_built<T>(group, options, args);
}
/// Sends `command key…`.
template <class T, template <class> class Group, class Sink, class Keys>
Future<T> send_keys(Group<Sink>& group, const char* command, const Keys& keys,
                    const CallOptions& options) {
  ArgList args({command}, size_hint(keys));
  args.add_all(keys);
  return send_built<T>(group, options, args);
}

}  // namespace redmux::detail
