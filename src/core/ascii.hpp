// ASCII case, independent of the locale: command names, subcommand words, option names and
// INFO section names compare case-insensitively the way the server compares them.
#pragma once

#include <string>
#include <string_view>

namespace redmux::detail::ascii {

constexpr char upper(char c) noexcept {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}

constexpr char lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

inline std::string upper_copy(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = upper(c);
  return out;
}

inline std::string lower_copy(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lower(c);
  return out;
}

/// True when `text`, in any case, is `upper_word` (which is upper case already).
constexpr bool equals_upper(std::string_view text, std::string_view upper_word) noexcept {
  if (text.size() != upper_word.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i)
    if (upper(text[i]) != upper_word[i]) return false;
  return true;
}

}  // namespace redmux::detail::ascii
