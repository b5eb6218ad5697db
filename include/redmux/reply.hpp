// Replies as the parser sees them (`Node`, a flat pre-order view into the read buffer) and
// as users keep them (`Reply`, an owning tree), plus the conversions from both to typed
// results (`from_nodes<T>`, `Reply::as<T>()`).
//
// A NodeSpan is valid only until the buffer it points into changes: the connection converts
// it to the caller's type on the I/O thread, at once. Reply owns its data and is a plain
// value: copy it, move it, read it from any thread (no internal synchronisation).
//
// [protocol helper: extend freely, but keep Node, NodeSpan, ReplyTraits<T>::convert and
//  from_nodes<T> with these shapes; other layers depend on them.]
#pragma once

#include <cstddef>
#include <cstdint>
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

/// One node of a parsed reply, in pre-order. Aggregates are followed by their children.
struct Node {
  ReplyType type = ReplyType::Null;
  std::uint32_t depth = 0;  ///< 0 for the root
  /// Aggregates: element count (Map and Attribute: number of key/value *pairs*).
  /// Strings: byte length of `value`.
  std::size_t size = 0;
  /// Scalars: the payload (the text of integers, doubles, booleans "t"/"f", big numbers;
  /// verbatim strings without their "txt:" prefix). Empty for aggregates and Null.
  std::string_view value;
};

using NodeSpan = std::span<const Node>;

/// Customisation point: `static Result<T> convert(NodeSpan reply)` turns one whole reply
/// (root first) into T. Specialised for the built-in result types; users may add their own.
template <class T, class Enable = void>
struct ReplyTraits;

/// Converts a whole reply to T; a shape mismatch is an errc::unexpected_reply error such as
/// `expected integer, got bulk string "abc"`, an error reply is errc::server_error.
template <class T>
Result<T> from_nodes(NodeSpan reply) {
  return ReplyTraits<T>::convert(reply);
}

}  // namespace redmux
