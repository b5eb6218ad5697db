// The built-in conversions of one reply to a scalar: integral types, double, bool,
// std::string, and void (success for any reply that is not an error). The rules are listed
// in convert.hpp. Pure functions of their input.
#pragma once

#include <string>
#include <type_traits>

#include "redmux/convert/description.hpp"
#include "redmux/convert/numbers.hpp"
#include "redmux/reply_node.hpp"

namespace redmux {

/// Integral types (not bool): see the rules in convert.hpp.
template <class T>
struct ReplyTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static Result<T> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    const Node& node = reply[0];
    switch (node.type) {
      case ReplyType::Integer:
      case ReplyType::BigNumber:
      case ReplyType::SimpleString:
      case ReplyType::BulkString:
      case ReplyType::VerbatimString: {
        T value{};
        switch (detail::parse_integral(node.value, value)) {
          case detail::NumberStatus::Ok:
            return value;
          case detail::NumberStatus::OutOfRange:
            return Error(errc::unexpected_reply,
                         "expected integer, got " + detail::describe(node) +
                             ", out of range for a " + std::to_string(sizeof(T) * 8) + "-bit " +
                             (std::is_signed_v<T> ? "signed" : "unsigned") + " integer");
          case detail::NumberStatus::Invalid:
            break;
        }
        return detail::mismatch(node, "integer");
      }
      case ReplyType::Boolean:
        return static_cast<T>(node.value == "t" ? 1 : 0);
      default:
        return detail::mismatch(node, "integer");
    }
  }
};

template <>
struct ReplyTraits<double> {
  static Result<double> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    const Node& node = reply[0];
    switch (node.type) {
      case ReplyType::Double:
      case ReplyType::Integer:
      case ReplyType::BigNumber:
      case ReplyType::SimpleString:
      case ReplyType::BulkString:
      case ReplyType::VerbatimString: {
        double value = 0;
        switch (detail::parse_double(node.value, value)) {
          case detail::NumberStatus::Ok:
            return value;
          case detail::NumberStatus::OutOfRange:
            return Error(errc::unexpected_reply,
                         "expected double, got " + detail::describe(node) +
                             ", out of range for a double; ask for std::string to read it whole");
          case detail::NumberStatus::Invalid:
            break;
        }
        return detail::mismatch(node, "double");
      }
      default:
        return detail::mismatch(node, "double");
    }
  }
};

template <>
struct ReplyTraits<bool> {
  static Result<bool> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    const Node& node = reply[0];
    switch (node.type) {
      case ReplyType::Boolean:
        return node.value == "t";
      case ReplyType::Integer:
        if (node.value == "1") return true;
        if (node.value == "0") return false;
        break;
      case ReplyType::SimpleString:
        if (node.value == "OK") return true;
        break;
      case ReplyType::Null:
        return false;
      default:
        break;
    }
    return detail::mismatch(node, "boolean");
  }
};

template <>
struct ReplyTraits<std::string> {
  static Result<std::string> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    const Node& node = reply[0];
    switch (node.type) {
      case ReplyType::SimpleString:
      case ReplyType::BulkString:
      case ReplyType::VerbatimString:
      case ReplyType::BigNumber:
      case ReplyType::Integer:
      case ReplyType::Double:
        return std::string(node.value);
      default:
        return detail::mismatch(node, "string");
    }
  }
};

/// Success for any reply that is not an error.
template <>
struct ReplyTraits<void> {
  static Result<void> convert(NodeSpan reply) {
    if (!reply.empty() && detail::is_error(reply[0])) {
      return Error(errc::server_error, std::string(reply[0].value));
    }
    return Result<void>();
  }
};

}  // namespace redmux
