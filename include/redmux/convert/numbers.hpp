// Numbers in reply text: whole decimal integers and doubles, strict (the whole text, no
// spaces), as Redis writes them ('+' accepted, inf/-inf/nan for doubles). Internal to the
// conversions (convert.hpp); pure functions.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "redmux/convert/short_bytes.hpp"

namespace redmux::detail {

enum class NumberStatus { Ok, Invalid, OutOfRange };

/// A whole decimal integer (optional sign, '+' accepted) into I.
/// 1 to 8 plain digits as a number, checked and summed a word at a time; false when a byte
/// is not a digit. REQUIRES: 1 <= text.size() <= 8.
inline bool parse_short_digits(std::string_view text, std::uint64_t& out) noexcept {
  constexpr std::uint64_t kZeros = 0x3030303030303030u;  // "00000000"
  const std::size_t n = text.size();
  // Left-padded with '0' to eight digits: the first digit is the lowest byte.
  std::uint64_t word = load_short(text) << (8 * (8 - n));
  if (n < 8) word |= kZeros >> (8 * n);
  // Each byte '0'..'9': its high nibble is 3, and adding 6 keeps it 3.
  constexpr std::uint64_t kHigh = 0xF0F0F0F0F0F0F0F0u;
  if (((word & kHigh) | (((word + 0x0606060606060606u) & kHigh) >> 4)) != 0x3333333333333333u)
    return false;
  word -= kZeros;                                            // eight digits 0..9
  word = (word * 10 + (word >> 8)) & 0x00FF00FF00FF00FFu;    // four two-digit numbers
  word = (word * 100 + (word >> 16)) & 0x0000FFFF0000FFFFu;  // two four-digit numbers
  out = (word * 10000 + (word >> 32)) & 0xFFFFFFFFu;
  return true;
}

template <class I>
NumberStatus parse_integral(std::string_view text, I& out) noexcept {
  if (!text.empty() && text.size() <= 8) {
    std::uint64_t value;
    if (parse_short_digits(text, value)) {
      if (value > static_cast<unsigned long long>(std::numeric_limits<I>::max()))
        return NumberStatus::OutOfRange;
      out = static_cast<I>(value);
      return NumberStatus::Ok;
    }
  }
  // 1 to 18 plain digits (most integer replies: counters, lengths, 0/1) cannot overflow an
  // unsigned long long: summed directly, they skip std::from_chars's checks per digit.
  if (!text.empty() && text.size() <= 18) {
    unsigned long long value = 0;
    bool digits = true;
    for (char c : text) {
      const auto digit = static_cast<unsigned char>(c - '0');
      if (digit > 9) {
        digits = false;
        break;
      }
      value = value * 10 + digit;
    }
    if (digits) {
      if (value > static_cast<unsigned long long>(std::numeric_limits<I>::max()))
        return NumberStatus::OutOfRange;
      out = static_cast<I>(value);
      return NumberStatus::Ok;
    }
  }
  const std::size_t original = text.size();
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+' || (text.size() != original && text[0] == '-'))
    return NumberStatus::Invalid;
  const char* end = text.data() + text.size();
  if constexpr (std::is_unsigned_v<I>) {
    if (text[0] == '-') {  // "-0" is zero; any other negative is out of range
      long long negative = 0;
      auto [p, e] = std::from_chars(text.data(), end, negative);
      if (p != end || (e != std::errc() && e != std::errc::result_out_of_range)) {
        return NumberStatus::Invalid;
      }
      if (e == std::errc() && negative == 0) {
        out = 0;
        return NumberStatus::Ok;
      }
      return NumberStatus::OutOfRange;
    }
  }
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  if (ptr != end) return NumberStatus::Invalid;
  if (ec == std::errc::result_out_of_range) return NumberStatus::OutOfRange;
  return ec == std::errc() ? NumberStatus::Ok : NumberStatus::Invalid;
}

/// A whole double: decimal or exponent form, '+' accepted, inf/-inf/nan in any case.
inline NumberStatus parse_double(std::string_view text, double& out) noexcept {
  const std::size_t original = text.size();
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+' || (text.size() != original && text[0] == '-'))
    return NumberStatus::Invalid;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out, std::chars_format::general);
  if (ptr != end) return NumberStatus::Invalid;
  if (ec == std::errc::result_out_of_range) return NumberStatus::OutOfRange;
  return ec == std::errc() ? NumberStatus::Ok : NumberStatus::Invalid;
}

}  // namespace redmux::detail
