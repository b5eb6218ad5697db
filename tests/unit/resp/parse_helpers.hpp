// Test helpers for the RESP parser: parse whole inputs and drive the parser the way a
// connection does (append bytes, parse, drop what was consumed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redmux/reply.hpp"
#include "resp/parser.hpp"

namespace redmux::resp::testing {

/// One parsed reply, kept as an owning Reply plus what the parser said about it.
struct Parsed {
  Reply reply;
  std::size_t consumed = 0;
  std::vector<Node> nodes;  ///< copies; their views are dangling after the next parse
};

/// Drives a Parser over a stream fed in arbitrary pieces, compacting its buffer like a
/// connection does (so data moves between NeedMore calls).
class StreamDriver {
 public:
  explicit StreamDriver(ParserLimits limits = {}) : parser_(limits) {}

  /// Appends bytes and pulls every complete reply. Returns false once the parser failed.
  bool feed(std::string_view bytes) {
    buffer_.append(bytes);
    for (;;) {
      // Parse a fresh copy half of the time so the data's address changes too.
      std::string_view view = buffer_;
      if (copy_toggle_ = !copy_toggle_; copy_toggle_) {
        copy_ = buffer_;
        view = copy_;
      }
      switch (parser_.parse(view)) {
        case ParseStatus::Complete:
          replies_.push_back(Reply::from_nodes(parser_.nodes(), parser_.attributes()));
          buffer_.erase(0, parser_.consumed());
          continue;
        case ParseStatus::NeedMore:
          return true;
        case ParseStatus::Failed:
          return false;
      }
    }
  }

  Parser& parser() { return parser_; }
  const std::vector<Reply>& replies() const { return replies_; }
  std::vector<std::string> rendered() const {
    std::vector<std::string> out;
    for (const Reply& r : replies_) out.push_back(r.to_string());
    return out;
  }

 private:
  Parser parser_;
  std::string buffer_;
  std::string copy_;
  bool copy_toggle_ = false;
  std::vector<Reply> replies_;
};

/// Parses exactly one reply from `input` (all of it at once).
inline ParseStatus parse_one(Parser& parser, std::string_view input, Parsed* out = nullptr) {
  ParseStatus status = parser.parse(input);
  if (status == ParseStatus::Complete && out != nullptr) {
    out->reply = Reply::from_nodes(parser.nodes(), parser.attributes());
    out->consumed = parser.consumed();
    out->nodes.assign(parser.nodes().begin(), parser.nodes().end());
  }
  return status;
}

/// The debug form of the single reply in `input`, or "FAILED: <message>" / "NEEDMORE".
inline std::string render(std::string_view input, ParserLimits limits = {}) {
  Parser parser(limits);
  Parsed parsed;
  switch (parse_one(parser, input, &parsed)) {
    case ParseStatus::Complete:
      return parsed.reply.to_string();
    case ParseStatus::NeedMore:
      return "NEEDMORE";
    case ParseStatus::Failed:
      return "FAILED: " + parser.error().message();
  }
  return "?";
}

}  // namespace redmux::resp::testing
