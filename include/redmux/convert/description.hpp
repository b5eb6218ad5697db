// How conversions describe what they got: a node in words (`bulk string "abc"`, `array of 3
// elements`) and the errors built from that — a shape mismatch, an empty reply, the position
// of a failing element. Internal to the conversions (convert.hpp); pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "redmux/reply_node.hpp"

namespace redmux::detail {

/// `"text"` with at most 40 bytes, non-printable bytes escaped as \xNN.
inline std::string quote_value(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == kMax) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(text[i]);
    if (u >= 0x20 && u < 0x7f && u != '"' && u != '\\') {
      out += static_cast<char>(u);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  out += '"';
  return out;
}

/// "bulk string \"abc\"", "integer 42", "array of 3 elements", "null" …
inline std::string describe(const Node& node) {
  std::string out(type_name(node.type));
  switch (node.type) {
    case ReplyType::Null:
      break;
    case ReplyType::Array:
    case ReplyType::Set:
    case ReplyType::Push:
      out += " of " + std::to_string(node.size) + (node.size == 1 ? " element" : " elements");
      break;
    case ReplyType::Map:
    case ReplyType::Attribute:
      out += " of " + std::to_string(node.size) + (node.size == 1 ? " pair" : " pairs");
      break;
    case ReplyType::Boolean:
      out += node.value == "t" ? " true" : " false";
      break;
    case ReplyType::Integer:
    case ReplyType::Double:
    case ReplyType::BigNumber:
      out += ' ';
      out += node.value.substr(0, 40);
      break;
    default:
      out += ' ';
      out += quote_value(node.value);
      break;
  }
  return out;
}

inline bool is_error(const Node& node) noexcept {
  return node.type == ReplyType::SimpleError || node.type == ReplyType::BulkError;
}

/// The error for a node that is not what `expected` names: the server's error if it is an
/// error reply, else errc::unexpected_reply.
inline Error mismatch(const Node& node, std::string_view expected) {
  if (is_error(node)) return Error(errc::server_error, std::string(node.value));
  return Error(errc::unexpected_reply,
               "expected " + std::string(expected) + ", got " + describe(node));
}

inline Error empty_reply() {
  return Error(errc::unexpected_reply, "expected a reply, got none");
}

/// Adds the position of a failing element to a mismatch message: before it, or after an
/// error reply's text (which stays first: ServerError::prefix() reads its first word).
inline Error in_element(Error error, std::size_t index) {
  if (error.code() == errc::server_error) {
    return Error::inside_reply(error.message() + " (element " + std::to_string(index) + ")");
  }
  if (error.code() != errc::unexpected_reply) return error;
  return Error(errc::unexpected_reply, "element " + std::to_string(index) + ": " + error.message());
}

}  // namespace redmux::detail
