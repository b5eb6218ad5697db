// RESP as the server writes it and as a client sends it, for tests that script bytes:
// a bulk string, and a command as an array of bulk strings.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace redmux::test {

/// A bulk string: "$<length>\r\n<text>\r\n".
inline std::string bulk(std::string_view text) {
  return "$" + std::to_string(text.size()) + "\r\n" + std::string(text) + "\r\n";
}

/// A command as a client writes it: an array of bulk strings.
inline std::string command_bytes(std::initializer_list<std::string_view> words) {
  std::string out = "*" + std::to_string(words.size()) + "\r\n";
  for (std::string_view word : words) out += bulk(word);
  return out;
}

}  // namespace redmux::test
