// The first eight bytes of a string as one word, byte i at bits 8i, read in at most three
// loads instead of a loop: for the hot paths that look at short texts a word at a time
// (integer replies, command names). Internal; pure functions, also usable in constant
// expressions (the command table's hash index is built from the same function).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace redmux::detail {

/// The first min(size, 8) bytes of `text`, zero above them.
constexpr std::uint64_t load_short(std::string_view text) noexcept {
  const char* p = text.data();
  const std::size_t n = text.size();
  if (std::is_constant_evaluated() || std::endian::native != std::endian::little) {
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < n && i < 8; ++i)
      word |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    return word;
  }
  if (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    return word;
  }
  if (n >= 4) {  // two loads that overlap: the shared bytes are the same bytes
    std::uint32_t low, high;
    std::memcpy(&low, p, 4);
    std::memcpy(&high, p + n - 4, 4);
    return low | (std::uint64_t{high} << (8 * (n - 4)));
  }
  const auto at = [&](std::size_t i) {
    return std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  };
  return n == 0 ? 0 : at(0) | at(n / 2) | at(n - 1);
}

}  // namespace redmux::detail
