// Enumerator names and other per-enumerator facts kept as tables in declaration order, one
// row an enumerator, instead of a switch: `name_of(value, kNames)` looks one up.
#pragma once

#include <cstddef>
#include <string_view>

namespace redmux::detail {

/// The row of enumerator `value` in `rows` (declaration order), `fallback` past the end.
template <typename Enum, typename Row, std::size_t N>
constexpr Row name_of(Enum value, const Row (&rows)[N], Row fallback) noexcept {
  const auto at = static_cast<std::size_t>(value);
  return at < N ? rows[at] : fallback;
}

/// The same for names, "?" past the end.
template <typename Enum, std::size_t N>
constexpr std::string_view name_of(Enum value, const std::string_view (&names)[N]) noexcept {
  return name_of(value, names, std::string_view("?"));
}

}  // namespace redmux::detail
