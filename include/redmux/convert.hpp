// Conversions from a reply (a NodeSpan, root first) to typed results: the built-in
// ReplyTraits<T> specialisations. Header-only and self-contained, so that every layer (and
// future.hpp) can instantiate them without linking the protocol library.
//
// RESP2 and RESP3 shapes convert alike. The rules, by requested type:
//   integral types   Integer; numeric simple/bulk/verbatim strings and big numbers that fit;
//                    Boolean as 0/1. Out of range is an error.
//   double           Double (inf, -inf, nan too), Integer, big numbers, numeric strings
//                    ("3.5", "inf" — RESP2 ZSCORE).
//   bool             Boolean; Integer 0 or 1; simple string "OK" → true; Null → false
//                    (SET … NX answers nil when it did nothing).
//   std::string      simple/bulk/verbatim strings (verbatim without "txt:"), big numbers,
//                    integers and doubles as their text. Null is an error: ask for
//                    std::optional<std::string>.
//   std::optional<T> Null → nullopt, anything else as T.
//   std::vector<T>   Array, Set, Push; a Map flattened to key, value, key, value … (the RESP2
//                    shape of HGETALL). Null is an error: ask for std::optional<std::vector>.
//   std::pair<A,B>   an aggregate of exactly 2 elements, or a Map of one pair.
//   std::vector<std::pair<K,V>>, std::map<K,V>, std::unordered_map<K,V>
//                    a Map, or an even-length flat Array/Set (RESP2), or an Array of
//                    2-element Arrays (RESP3 ZRANGE … WITHSCORES) — chosen when the first
//                    element is an Array of 2. Duplicate keys in maps: the last wins.
//   void             any reply that is not an error.
//   Reply            any reply that is not an error at the root; inside containers
//                    (std::vector<Reply> of an EXEC) error elements are kept as values.
// An error reply (SimpleError, BulkError) where a value was expected gives
// Error(errc::server_error, its message); any other mismatch gives
// Error(errc::unexpected_reply, `expected integer, got bulk string "abc"`), prefixed with the
// element's position inside containers (`element 2: …`).
//
// Thread-safety: pure functions of their input.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "redmux/reply.hpp"

namespace redmux {

namespace detail {

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

/// Adds the position of a failing element to a mismatch message.
inline Error in_element(Error error, std::size_t index) {
  if (error.code() != errc::unexpected_reply) return error;
  return Error(errc::unexpected_reply, "element " + std::to_string(index) + ": " + error.message());
}

enum class NumberStatus { Ok, Invalid, OutOfRange };

/// A whole decimal integer (optional sign, '+' accepted) into I.
template <class I>
NumberStatus parse_integral(std::string_view text, I& out) noexcept {
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

/// Number of child elements of an aggregate node (a map's pairs count twice).
inline std::size_t element_count(const Node& node) noexcept {
  return (node.type == ReplyType::Map || node.type == ReplyType::Attribute) ? node.size * 2
                                                                            : node.size;
}

/// Calls `f(index, child_span)` for each child of the aggregate at reply[0], in order;
/// stops at and returns the first error f returns.
template <class F>
Error for_each_child(NodeSpan reply, F&& f) {
  const std::size_t count = element_count(reply[0]);
  std::size_t at = 1;
  for (std::size_t i = 0; i < count; ++i) {
    if (at >= reply.size()) {
      return Error(errc::unexpected_reply, "reply ends before element " + std::to_string(i));
    }
    const std::size_t end = subtree_end(reply, at);
    Error error = f(i, reply.subspan(at, end - at));
    if (error) return error;
    at = end;
  }
  return Error();
}

/// True when T has a conversion (a complete ReplyTraits<T> with convert()). Containers of a
/// type without one have none either, so `requires { ReplyTraits<T>::convert(…) }` stays an
/// honest test (future.hpp relies on it).
template <class T>
concept Convertible = std::is_same_v<T, Reply> || requires(NodeSpan reply) {
  ReplyTraits<T>::convert(reply);
};

/// Converts an element inside a container. A Reply element keeps an error reply as a value.
template <class T>
Result<T> convert_element(NodeSpan element) {
  if constexpr (std::is_same_v<T, Reply>) {
    return Reply::from_nodes(element);
  } else {
    return ReplyTraits<T>::convert(element);
  }
}

inline bool is_sequence(ReplyType type) noexcept {
  return type == ReplyType::Array || type == ReplyType::Set || type == ReplyType::Push;
}

/// Calls `f(key_span, value_span)` for each pair of a Map, a flat even-length sequence, or a
/// sequence of 2-element Arrays (see the rules at the top of this file).
template <class F>
Error for_each_pair(NodeSpan reply, std::string_view expected, F&& f) {
  const Node& root = reply[0];
  if (root.type == ReplyType::Map) {
    NodeSpan key;
    return for_each_child(reply, [&](std::size_t i, NodeSpan child) -> Error {
      if (i % 2 == 0) {
        key = child;
        return Error();
      }
      return in_element(f(key, child), i / 2);
    });
  }
  if (!is_sequence(root.type)) return mismatch(root, expected);
  const bool nested =
      root.size > 0 && reply.size() > 1 && reply[1].type == ReplyType::Array && reply[1].size == 2;
  if (nested) {
    return for_each_child(reply, [&](std::size_t i, NodeSpan child) -> Error {
      if (child[0].type != ReplyType::Array || child[0].size != 2) {
        return in_element(mismatch(child[0], "array of 2 elements"), i);
      }
      const std::size_t value_at = subtree_end(child, 1);
      return in_element(f(child.subspan(1, value_at - 1), child.subspan(value_at)), i);
    });
  }
  if (root.size % 2 != 0) {
    return Error(errc::unexpected_reply, "expected " + std::string(expected) + ", got " +
                                             describe(root) + " (odd, so not key/value pairs)");
  }
  NodeSpan key;
  return for_each_child(reply, [&](std::size_t i, NodeSpan child) -> Error {
    if (i % 2 == 0) {
      key = child;
      return Error();
    }
    return in_element(f(key, child), i / 2);
  });
}

/// Shared body of the map-like conversions: Container gets `emplace_back(K, V)` or
/// `insert_or_assign(K, V)` through `add`.
template <class Container, class K, class V, class Add>
Result<Container> convert_pairs(NodeSpan reply, std::string_view expected, Add add) {
  if (reply.empty()) return empty_reply();
  Container out;
  Error error = for_each_pair(reply, expected, [&](NodeSpan k, NodeSpan v) -> Error {
    Result<K> key = convert_element<K>(k);
    if (!key) return std::move(key).error();
    Result<V> value = convert_element<V>(v);
    if (!value) return std::move(value).error();
    add(out, std::move(*key), std::move(*value));
    return Error();
  });
  if (error) return error;
  return out;
}

}  // namespace detail

/// Integral types (not bool): see the rules at the top of this file.
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
                         "expected double, got " + detail::describe(node) + ", out of range");
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

template <class T>
requires detail::Convertible<T>
struct ReplyTraits<std::optional<T>> {
  static Result<std::optional<T>> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    if (reply[0].type == ReplyType::Null) return std::optional<T>();
    Result<T> value = ReplyTraits<T>::convert(reply);
    if (!value) return std::move(value).error();
    return std::optional<T>(std::move(*value));
  }
};

template <class T, class Alloc>
requires detail::Convertible<T>
struct ReplyTraits<std::vector<T, Alloc>> {
  static Result<std::vector<T, Alloc>> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    const Node& root = reply[0];
    if (!detail::is_sequence(root.type) && root.type != ReplyType::Map) {
      return detail::mismatch(root, "array");
    }
    std::vector<T, Alloc> out;
    // Bounded by the nodes present, not by the declared size (the span is a whole reply).
    out.reserve(std::min(detail::element_count(root), reply.size() - 1));
    Error error = detail::for_each_child(reply, [&](std::size_t i, NodeSpan child) -> Error {
      Result<T> element = detail::convert_element<T>(child);
      if (!element) return detail::in_element(std::move(element).error(), i);
      out.push_back(std::move(*element));
      return Error();
    });
    if (error) return error;
    return out;
  }
};

template <class A, class B>
requires(detail::Convertible<A>&& detail::Convertible<B>) struct ReplyTraits<std::pair<A, B>> {
  static Result<std::pair<A, B>> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    const Node& root = reply[0];
    const bool fits = (detail::is_sequence(root.type) && root.size == 2) ||
                      (root.type == ReplyType::Map && root.size == 1);
    if (!fits) return detail::mismatch(root, "array of 2 elements");
    const std::size_t second = subtree_end(reply, 1);
    Result<A> first = detail::convert_element<A>(reply.subspan(1, second - 1));
    if (!first) return detail::in_element(std::move(first).error(), 0);
    Result<B> last = detail::convert_element<B>(reply.subspan(second));
    if (!last) return detail::in_element(std::move(last).error(), 1);
    return std::pair<A, B>(std::move(*first), std::move(*last));
  }
};

template <class K, class V, class Alloc>
requires(detail::Convertible<K>&&
             detail::Convertible<V>) struct ReplyTraits<std::vector<std::pair<K, V>, Alloc>> {
  using Container = std::vector<std::pair<K, V>, Alloc>;
  static Result<Container> convert(NodeSpan reply) {
    return detail::convert_pairs<Container, K, V>(reply, "map", [](Container& out, K&& k, V&& v) {
      out.emplace_back(std::move(k), std::move(v));
    });
  }
};

template <class K, class V, class Compare, class Alloc>
requires(detail::Convertible<K>&&
             detail::Convertible<V>) struct ReplyTraits<std::map<K, V, Compare, Alloc>> {
  using Container = std::map<K, V, Compare, Alloc>;
  static Result<Container> convert(NodeSpan reply) {
    return detail::convert_pairs<Container, K, V>(reply, "map", [](Container& out, K&& k, V&& v) {
      out.insert_or_assign(std::move(k), std::move(v));
    });
  }
};

template <class K, class V, class Hash, class Eq, class Alloc>
requires(detail::Convertible<K>&&
             detail::Convertible<V>) struct ReplyTraits<std::unordered_map<K, V, Hash, Eq, Alloc>> {
  using Container = std::unordered_map<K, V, Hash, Eq, Alloc>;
  static Result<Container> convert(NodeSpan reply) {
    return detail::convert_pairs<Container, K, V>(reply, "map", [](Container& out, K&& k, V&& v) {
      out.insert_or_assign(std::move(k), std::move(v));
    });
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

/// The generic owning value. An error at the root is errc::server_error, like every type.
template <>
struct ReplyTraits<Reply> {
  static Result<Reply> convert(NodeSpan reply) {
    if (!reply.empty() && detail::is_error(reply[0])) {
      return Error(errc::server_error, std::string(reply[0].value));
    }
    return Reply::from_nodes(reply);
  }
};

}  // namespace redmux
