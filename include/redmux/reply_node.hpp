// Replies as the parser sees them: `Node`, one element of a flat pre-order view into the read
// buffer, `NodeSpan` a whole reply, root first, and the customisation point `ReplyTraits<T>`
// that converts one to a typed result (`from_nodes<T>`; the built-in conversions are in
// convert.hpp). The owning tree users keep is `Reply` (reply.hpp).
//
// A NodeSpan is valid only until the buffer it points into changes: the connection converts
// it to the caller's type on the I/O thread, at once. Everything here is a pure function of
// its input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>

#include "redmux/result.hpp"

namespace redmux {

/// Every RESP2/RESP3 type. RESP2 nulls (`$-1`, `*-1`) become Null.
enum class ReplyType : std::uint8_t {
  SimpleString,    // +
  SimpleError,     // -
  Integer,         // :
  BulkString,      // $
  Array,           // *
  Null,            // _  ($-1 and *-1 in RESP2)
  Boolean,         // #
  Double,          // ,
  BigNumber,       // (
  BulkError,       // !
  VerbatimString,  // =
  Map,             // %
  Set,             // ~
  Attribute,       // |
  Push,            // >
};

namespace detail {

/// type_name()'s table, one row a ReplyType in declaration order.
inline constexpr std::string_view kReplyTypeNames[] = {
    "simple string", "simple error", "integer",    "bulk string", "array",           "null",
    "boolean",       "double",       "big number", "bulk error",  "verbatim string", "map",
    "set",           "attribute",    "push",
};
static_assert(std::size(kReplyTypeNames) == static_cast<std::size_t>(ReplyType::Push) + 1,
              "one name a ReplyType");

}  // namespace detail

/// "simple string", "bulk error", "map" … (for messages).
constexpr std::string_view type_name(ReplyType type) noexcept {
  const auto at = static_cast<std::size_t>(type);
  return at < std::size(detail::kReplyTypeNames) ? detail::kReplyTypeNames[at] : "unknown type";
}

/// True for Array, Map, Set, Attribute and Push.
constexpr bool is_aggregate(ReplyType type) noexcept {
  return type == ReplyType::Array || type == ReplyType::Map || type == ReplyType::Set ||
         type == ReplyType::Attribute || type == ReplyType::Push;
}

/// One node of a parsed reply, in pre-order. Aggregates are followed by their children.
struct Node {
  ReplyType type = ReplyType::Null;
  std::uint32_t depth = 0;  ///< 0 for the root
  /// Aggregates: element count (Map and Attribute: number of key/value *pairs*).
  /// Strings and other scalars: byte length of `value`.
  std::size_t size = 0;
  /// Scalars: the payload (the text of integers, doubles, booleans "t"/"f", big numbers;
  /// verbatim strings without their "txt:" prefix). Empty for aggregates and Null.
  std::string_view value;
};

using NodeSpan = std::span<const Node>;

/// The 3-byte format of a verbatim string node ("txt", "mkd"). The parser guarantees the
/// 4 bytes before `value` are "fmt:". REQUIRES: node.type == ReplyType::VerbatimString and
/// the node comes from resp::Parser or Reply::nodes().
inline std::string_view verbatim_format(const Node& node) noexcept {
  return std::string_view(node.value.data() - 4, 3);
}

/// Index one past the subtree rooted at `nodes[index]`.
inline std::size_t subtree_end(NodeSpan nodes, std::size_t index) noexcept {
  const std::uint32_t depth = nodes[index].depth;
  std::size_t end = index + 1;
  while (end < nodes.size() && nodes[end].depth > depth) ++end;
  return end;
}

/// Customisation point: `static Result<T> convert(NodeSpan reply)` turns one whole reply
/// (root first; its depth need not be 0, and nodes past its subtree are ignored) into T.
/// Specialised for the built-in result types in convert/*.hpp (see convert.hpp); users may add
/// their own.
template <class T, class Enable = void>
struct ReplyTraits;

/// Converts a whole reply to T; a shape mismatch is an errc::unexpected_reply error such as
/// `expected integer, got bulk string "abc"`, an error reply is errc::server_error.
template <class T>
Result<T> from_nodes(NodeSpan reply) {
  return ReplyTraits<T>::convert(reply);
}

}  // namespace redmux
