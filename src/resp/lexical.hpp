// Lexical helpers of the RESP parser: line scanning, length and number validation (all with
// std::from_chars: locale-independent) and quoting for error messages. Inline because they
// sit on the parser's hot path. Pure functions.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

namespace redmux::resp::lexical {

/// Lengths above this are refused as overflow (they could not be buffered anyway).
constexpr std::size_t kMaxLength = std::numeric_limits<std::size_t>::max() / 4;

/// `text` quoted for an error message: at most 32 bytes, non-printable bytes as \xNN.
inline std::string quote(std::string_view text) {
  std::string out = "\"";
  std::size_t n = 0;
  for (char c : text) {
    if (++n > 32) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '"' && c != '\\') {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  out += '"';
  return out;
}

/// The first '\n' in [from, end), or nullptr. Most lines are a few bytes ("+OK", ":1",
/// "$100"): a short inline scan beats a call to memchr, which takes over for long lines.
inline const char* find_lf(const char* from, const char* end) noexcept {
  const char* stop = end - from > 16 ? from + 16 : end;
  for (; from < stop; ++from) {
    if (*from == '\n') return from;
  }
  if (from == end) return nullptr;
  return static_cast<const char*>(std::memchr(from, '\n', static_cast<std::size_t>(end - from)));
}

enum class LengthStatus { Ok, Invalid, Overflow };

/// A non-negative decimal without sign: digits only.
inline LengthStatus parse_length(std::string_view text, std::size_t& out) noexcept {
  if (text.empty() || text[0] < '0' || text[0] > '9') return LengthStatus::Invalid;
  unsigned long long value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) return LengthStatus::Overflow;
  if (ec != std::errc() || ptr != text.data() + text.size()) return LengthStatus::Invalid;
  if (value > static_cast<unsigned long long>(kMaxLength)) return LengthStatus::Overflow;
  out = static_cast<std::size_t>(value);
  return LengthStatus::Ok;
}

/// True when `text` is 1 to 18 decimal digits, which always fit a long long. Most integer
/// replies are such (counters, lengths, 0/1): they skip std::from_chars, whose overflow
/// checks per digit cost about 100 instructions for a 6-digit number.
inline bool short_digits(std::string_view text) noexcept {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text) {
    if (static_cast<unsigned char>(c - '0') > 9) return false;
  }
  return true;
}

/// The parser's short path (Parser::parse_whole_scalar()): 1 to 18 decimal digits from `at`
/// (the digits short_digits() takes) followed by CRLF, scanned once; `value`, if given, gets
/// their number. Returns the position of the CR, or nullptr when the bytes are anything
/// else or not all there.
[[gnu::always_inline]] inline const char* digits_then_crlf(const char* at, const char* end,
                                                           unsigned long long* value) noexcept {
  const char* digits = at;
  unsigned long long sum = 0;
  for (; at < end; ++at) {
    const auto digit = static_cast<unsigned char>(*at - '0');
    if (digit > 9) break;
    if (value) sum = sum * 10 + digit;
  }
  if (value) *value = sum;
  if (at == digits || at - digits > 18 || end - at < 2 || at[0] != '\r' || at[1] != '\n') {
    return nullptr;
  }
  return at;
}

inline bool valid_integer(std::string_view text) noexcept {
  if (short_digits(text)) return true;
  const std::size_t original = text.size();
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+' || (text.size() != original && text[0] == '-') ||
      text[0] == ' ')
    return false;
  long long value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

inline bool valid_double(std::string_view text) noexcept {
  const std::size_t original = text.size();
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+' || (text.size() != original && text[0] == '-')) return false;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // Out of range (1e400) is still a well-formed double; conversion reports it.
  return (ec == std::errc() || ec == std::errc::result_out_of_range) &&
         ptr == text.data() + text.size();
}

inline bool valid_big_number(std::string_view text) noexcept {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

inline const char* marker_name(char marker) noexcept {
  switch (marker) {
    case '$':
      return "bulk string";
    case '!':
      return "bulk error";
    case '=':
      return "verbatim string";
    case '*':
      return "array";
    case '%':
      return "map";
    case '~':
      return "set";
    case '|':
      return "attribute";
    case '>':
      return "push";
    default:
      return "value";
  }
}

}  // namespace redmux::resp::lexical
