// Helpers for the ReplyTraits of the command groups' result types: reading named fields
// from a RESP3 map or a RESP2 flat name/value array (XINFO …), converting one element into a
// member, splitting an array into its elements. Pure functions; header-only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/convert.hpp"

namespace redmux {

namespace detail {

/// Calls `f(name, value_span)` for each name/value pair of a RESP3 map or a RESP2 flat
/// array of alternating names and values (XINFO …). Names that are not strings are errors.
template <class F>
Error for_each_field(NodeSpan reply, std::string_view expected, F&& f) {
  if (reply.empty()) return empty_reply();
  return for_each_pair(reply, expected, [&](NodeSpan key, NodeSpan value) -> Error {
    Result<std::string> name = ReplyTraits<std::string>::convert(key);
    if (!name) return std::move(name).error();
    return f(std::string_view(*name), value);
  });
}

/// Converts `value` into `out`, returning the conversion's error.
template <class T>
Error read_into(NodeSpan value, T& out) {
  Result<T> converted = ReplyTraits<T>::convert(value);
  if (!converted) return std::move(converted).error();
  out = std::move(*converted);
  return Error();
}

/// The element spans of the aggregate at reply[0] (its direct children), or an error when
/// it is not a sequence of at least `min_size` elements.
inline Result<std::vector<NodeSpan>> children_of(NodeSpan reply, std::size_t min_size,
                                                 std::string_view expected) {
  if (reply.empty()) return empty_reply();
  if (!is_sequence(reply[0].type) || reply[0].size < min_size) return mismatch(reply[0], expected);
  std::vector<NodeSpan> out;
  Error error = for_each_child(reply, [&](std::size_t, NodeSpan child) -> Error {
    out.push_back(child);
    return Error();
  });
  if (error) return error;
  return out;
}

/// One named field of a reply struct and the member it is read into (read_fields()).
template <class Out, class Member>
struct Field {
  std::string_view name;
  Member Out::*member;
};
template <class Out, class Member>
Field<Out, Member> field(std::string_view name, Member Out::*member) noexcept {
  return {name, member};
}

/// Reads a map (RESP3) or flat name/value array (RESP2) into an Out, each named field into
/// its member; names without a field are skipped.
template <class Out, class... Members>
Result<Out> read_fields(NodeSpan reply, std::string_view expected,
                        const Field<Out, Members>&... fields) {
  Out out;
  Error error = for_each_field(reply, expected, [&](std::string_view name, NodeSpan value) {
    Error read;
    ((name == fields.name ? (read = read_into(value, out.*fields.member), true) : false) || ...);
    return read;
  });
  if (error) return error;
  return out;
}

/// Reads the elements of a sequence of at least sizeof...(members) elements into Out's
/// members, in order; a failing element's error names its position.
template <class Out, class... Members>
Result<Out> read_elements(NodeSpan reply, std::string_view expected, Members Out::*... members) {
  Result<std::vector<NodeSpan>> parts = children_of(reply, sizeof...(Members), expected);
  if (!parts) return std::move(parts).error();
  Out out;
  Error error;
  std::size_t at = 0;
  auto read = [&](auto member) {
    if (!error) error = in_element(read_into((*parts)[at], out.*member), at);
    ++at;
  };
  (read(members), ...);
  if (error) return error;
  return out;
}

}  // namespace detail

}  // namespace redmux
