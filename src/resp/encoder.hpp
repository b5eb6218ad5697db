// The RESP command encoder: a command is a RESP array of bulk strings,
// `*N\r\n$len\r\narg\r\n…`, appended straight into the caller's output buffer.
//
// No allocation besides growing `out` (at most once per call: the exact size is computed
// first) and no temporary string per argument. Pure functions; safe from any thread on
// distinct buffers.
#pragma once

#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <ranges>
#include <span>
#include <string>
#include <string_view>

#include "redmux/arg.hpp"

namespace redmux::resp {

/// Bytes encode_command(args) appends.
std::size_t encoded_size(std::span<const Arg> args) noexcept;

/// Appends the command `args` (name first) to `out`.
///   encode_command(out, {{"SET", "k", 42}}) → "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n42\r\n"
void encode_command(std::string& out, std::span<const Arg> args);

inline void encode_command(std::string& out, std::initializer_list<Arg> args) {
  encode_command(out, std::span<const Arg>(args.begin(), args.size()));
}

/// Incremental form, for commands whose arguments come from ranges (MSET, HSET with pairs …)
/// without first building an array of Arg:
///   begin_command(out, 1 + 2 * pairs.size());
///   append_arg(out, "MSET");
///   for (auto& [k, v] : pairs) { append_arg(out, k); append_arg(out, v); }
/// REQUIRES: exactly `count` append_arg calls follow begin_command.
void begin_command(std::string& out, std::size_t count);
void append_arg(std::string& out, const Arg& arg);

namespace detail {
/// Writes `*n\r\n` at `at`; returns the end. REQUIRES: room for 23 bytes.
char* write_array_header(char* at, std::size_t n) noexcept;
/// Writes `$len\r\n` + bytes + `\r\n` at `at`; returns the end. REQUIRES: room for
/// arg_size(bytes).
char* write_arg(char* at, std::string_view bytes) noexcept;
std::size_t array_header_size(std::size_t n) noexcept;

template <class T>
concept ArgLike = std::constructible_from<Arg, const T&>;
template <class T>
concept ArgPair = requires(const T& pair) {
  requires ArgLike<std::remove_cvref_t<decltype(pair.first)>>;
  requires ArgLike<std::remove_cvref_t<decltype(pair.second)>>;
};
/// A range of arguments, or of pairs of arguments (a map: key, value, key, value …).
template <class R>
concept ArgRange =
    !ArgLike<R> && std::ranges::forward_range<const R> &&
    (ArgLike<std::ranges::range_value_t<const R>> || ArgPair<std::ranges::range_value_t<const R>>);
template <class T>
concept CommandPart = ArgLike<T> || ArgRange<T>;

template <CommandPart T>
std::size_t part_count(const T& part) {
  if constexpr (ArgLike<T>) {
    return 1;
  } else if constexpr (ArgPair<std::ranges::range_value_t<const T>>) {
    return 2 * static_cast<std::size_t>(std::ranges::distance(part));
  } else {
    return static_cast<std::size_t>(std::ranges::distance(part));
  }
}
/// Bytes one argument takes on the wire: `$len\r\n` + bytes + `\r\n`.
inline std::size_t arg_size(const Arg& arg) noexcept {
  const std::size_t n = arg.bytes().size();
  std::size_t digits = 1;
  for (std::size_t v = n; v >= 10; v /= 10) ++digits;
  return 1 + digits + 2 + n + 2;
}
template <CommandPart T>
std::size_t part_size(const T& part) {
  if constexpr (ArgLike<T>) {
    return arg_size(Arg(part));
  } else {
    std::size_t total = 0;
    for (const auto& element : part) {
      if constexpr (ArgPair<std::ranges::range_value_t<const T>>) {
        total += arg_size(Arg(element.first)) + arg_size(Arg(element.second));
      } else {
        total += arg_size(Arg(element));
      }
    }
    return total;
  }
}
template <CommandPart T>
char* write_part(char* at, const T& part) noexcept {
  if constexpr (ArgLike<T>) {
    return write_arg(at, Arg(part).bytes());
  } else {
    for (const auto& element : part) {
      if constexpr (ArgPair<std::ranges::range_value_t<const T>>) {
        at = write_arg(at, Arg(element.first).bytes());
        at = write_arg(at, Arg(element.second).bytes());
      } else {
        at = write_arg(at, Arg(element).bytes());
      }
    }
    return at;
  }
}
}  // namespace detail

/// Appends a command whose parts are single arguments (strings, integers, doubles) or
/// ranges of them, or ranges of pairs (flattened to key, value …):
///   encode_args(out, "MSET", pairs);                  // std::map or vector of pairs
///   encode_args(out, "DEL", keys);                    // std::vector<std::string>
///   encode_args(out, "ZADD", key, "CH", 1.5, "member");
template <detail::CommandPart... Parts>
void encode_args(std::string& out, const Parts&... parts) {
  // Two passes, like encode_command: exact size, one resize, then plain stores.
  const std::size_t count = (std::size_t{0} + ... + detail::part_count(parts));
  const std::size_t start = out.size();
  out.resize(start + detail::array_header_size(count) +
             (std::size_t{0} + ... + detail::part_size(parts)));
  char* at = detail::write_array_header(out.data() + start, count);
  ((at = detail::write_part(at, parts)), ...);
}

}  // namespace redmux::resp
