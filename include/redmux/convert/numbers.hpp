// Numbers in reply text: whole decimal integers and doubles, strict (the whole text, no
// spaces), as Redis writes them ('+' accepted, inf/-inf/nan for doubles). Internal to the
// conversions (convert.hpp); pure functions.
#pragma once

#include <charconv>
#include <limits>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace redmux::detail {

enum class NumberStatus { Ok, Invalid, OutOfRange };

/// A whole decimal integer (optional sign, '+' accepted) into I.
template <class I>
NumberStatus parse_integral(std::string_view text, I& out) noexcept {
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
