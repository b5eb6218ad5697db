// Replies as users keep them: `Reply`, an owning tree of a RESP2/RESP3 value, with its typed
// accessors and the conversions to typed results (`Reply::to<T>()`, `Reply::as<T>()`; the
// rules are in convert.hpp). The parser's view, `Node` and `NodeSpan`, is in reply_node.hpp.
//
// Reply owns its data and is a plain value: copy it, move it, read it from any thread (no
// internal synchronisation).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "redmux/convert/containers.hpp"
#include "redmux/convert/description.hpp"
#include "redmux/convert/scalars.hpp"
#include "redmux/reply_node.hpp"
#include "redmux/result.hpp"

namespace redmux {

/// An owning RESP value: a tree that outlives the read buffer. Build one from parsed nodes
/// (`Reply::from_nodes`) or ask a command for `Reply` as its result type. Accessors that
/// name a type (`integer()`, `boolean()` …) throw UnexpectedReplyError on another type;
/// `to<T>()` converts like any typed command result, `as<T>()` throws instead.
class Reply {
 public:
  /// A Null reply.
  Reply() = default;
  /// A scalar (`text` is its payload as the parser gives it) or, with `elements`, an
  /// aggregate (Map and Attribute: keys and values alternate). `format` is a verbatim
  /// string's 3-byte format.
  Reply(ReplyType type, std::string text, std::vector<Reply> elements = {},
        std::string format = {});

  /// Copies a parsed reply into an owning tree; empty `nodes` gives Null. `attributes`
  /// (resp::Parser::attributes(): zero or more attribute trees) are merged into one
  /// Attribute map reachable through attributes(), whether they preceded the reply or one
  /// of its elements.
  static Reply from_nodes(NodeSpan nodes, NodeSpan attributes = {});

  ReplyType type() const noexcept { return type_; }
  bool is_null() const noexcept { return type_ == ReplyType::Null; }
  bool is_error() const noexcept {
    return type_ == ReplyType::SimpleError || type_ == ReplyType::BulkError;
  }
  bool is_aggregate() const noexcept { return redmux::is_aggregate(type_); }
  /// Simple, bulk or verbatim string.
  bool is_string() const noexcept {
    return type_ == ReplyType::SimpleString || type_ == ReplyType::BulkString ||
           type_ == ReplyType::VerbatimString;
  }

  /// The payload of any scalar, as received: string bytes, error message, the text of an
  /// integer, double, big number, "t"/"f" for booleans. Empty for Null and aggregates.
  std::string_view text() const noexcept {
    return type_ == ReplyType::VerbatimString ? std::string_view(text_).substr(4)
                                              : std::string_view(text_);
  }
  /// A simple, bulk or verbatim string's bytes (verbatim without its format prefix).
  std::string_view string() const;
  /// An error reply's message ("ERR unknown command …").
  std::string_view error_message() const;
  long long integer() const;
  /// A Double ("inf", "-inf" and "nan" included).
  double double_value() const;
  bool boolean() const;
  /// A big number's decimal digits (with its sign).
  std::string_view big_number() const;
  /// A verbatim string's format: "txt", "mkd" …
  std::string_view verbatim_format() const;

  /// Aggregates: number of elements (Map and Attribute: of pairs). 0 for scalars.
  std::size_t size() const noexcept {
    return (type_ == ReplyType::Map || type_ == ReplyType::Attribute) ? elements_.size() / 2
                                                                      : elements_.size();
  }
  /// An aggregate's elements; for Map and Attribute, keys and values alternate.
  std::span<const Reply> elements() const noexcept { return elements_; }
  /// Element `i` of an aggregate (flat for maps). Throws std::out_of_range.
  const Reply& operator[](std::size_t i) const { return elements_.at(i); }
  /// Key and value of pair `i` of a Map or Attribute. Throws std::out_of_range.
  const Reply& key(std::size_t i) const { return elements_.at(2 * i); }
  const Reply& value(std::size_t i) const { return elements_.at(2 * i + 1); }
  /// A Map's value for the first key whose text() equals `key`, or nullptr.
  const Reply* find(std::string_view key) const noexcept;

  /// The attribute map (type Attribute) that preceded this reply, or nullptr.
  const Reply* attributes() const noexcept {
    return attributes_.empty() ? nullptr : &attributes_.front();
  }

  /// Converts like a typed command result: see convert.hpp for the rules.
  template <class T>
  Result<T> to() const {
    const std::vector<Node> flat = nodes();
    return ReplyTraits<T>::convert(flat);
  }
  /// to<T>(), throwing the error (UnexpectedReplyError, ServerError) instead of returning it.
  template <class T>
  T as() const {
    if constexpr (std::is_void_v<T>) {
      to<T>().value();
    } else {
      return std::move(to<T>()).value();
    }
  }

  /// The reply as parser nodes (pre-order, root depth 0) viewing this Reply's strings:
  /// valid while this Reply lives unchanged.
  std::vector<Node> nodes() const;

  /// A one-line debug form: `[1, "two", {"k": 3.5}, nil, true, (error) ERR x]`.
  std::string to_string() const;

  friend bool operator==(const Reply& a, const Reply& b) noexcept;

 private:
  void append_nodes(std::vector<Node>& out, std::uint32_t depth) const;
  void append_text(std::string& out) const;

  ReplyType type_ = ReplyType::Null;
  /// Scalars' payload. Verbatim strings keep their "fmt:" prefix here, so that nodes()
  /// gives nodes that verbatim_format(const Node&) can read.
  std::string text_;
  std::vector<Reply> elements_;    ///< aggregates; maps alternate key, value
  std::vector<Reply> attributes_;  ///< 0 or 1 Attribute reply
};

std::ostream& operator<<(std::ostream& os, const Reply& reply);

/// The generic owning value. An error at the root is errc::server_error, like every type.
template <>
struct ReplyTraits<Reply> {
  static Result<Reply> convert(NodeSpan reply) { return convert(reply, {}); }
  /// The same, keeping the RESP3 attributes that came with the reply.
  static Result<Reply> convert(NodeSpan reply, NodeSpan attributes) {
    if (!reply.empty() && detail::is_error(reply[0])) {
      return Error(errc::server_error, std::string(reply[0].value));
    }
    return Reply::from_nodes(reply, attributes);
  }
};

}  // namespace redmux
