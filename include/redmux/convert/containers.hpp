// The built-in conversions of one reply to a container: std::optional, std::vector,
// std::pair, and the map-like std::vector<std::pair>, std::map and std::unordered_map (RESP3
// maps and RESP2 flat arrays alike). The rules are listed in convert.hpp. Pure functions of
// their input.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "redmux/convert/description.hpp"
#include "redmux/reply_node.hpp"

namespace redmux {

class Reply;

namespace detail {

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
    return T::from_nodes(element);  // dependent: Reply is complete where this is used
  } else {
    return ReplyTraits<T>::convert(element);
  }
}

inline bool is_sequence(ReplyType type) noexcept {
  return type == ReplyType::Array || type == ReplyType::Set || type == ReplyType::Push;
}

/// Calls `f(key_span, value_span)` for each pair of a Map, a flat even-length sequence, or a
/// sequence of 2-element Arrays (see the rules in convert.hpp).
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

}  // namespace redmux
