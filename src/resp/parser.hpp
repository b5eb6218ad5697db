// resp::Parser: the sans-IO RESP2/RESP3 reply parser. Feed it the unconsumed bytes of a
// stream, pull one reply at a time as a flat pre-order span of Nodes that view those bytes.
//
// Ownership: the parser owns its node vectors and a scratch buffer (streamed `$?` strings
// only); every other string a Node holds views the caller's buffer. The views stay valid
// until the caller changes that buffer or calls parse() again.
//
// Threads: a Parser is a plain object with no internal synchronisation; one connection's
// I/O thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/error.hpp"
#include "redmux/reply.hpp"

namespace redmux::resp {

/// Bounds on what a server may send; crossing one is a protocol error that names the limit.
struct ParserLimits {
  std::size_t max_bulk_length = std::size_t{512} << 20;  ///< bytes in one bulk/verbatim/error
  /// Elements of one aggregate (a map's pair counts as 2). Nodes are allocated only as
  /// elements arrive, so a huge declared count reserves nothing.
  std::size_t max_aggregate_elements = std::size_t{1} << 30;
  std::size_t max_depth = 128;                          ///< nested aggregates open at once
  std::size_t max_line_length = std::size_t{64} << 10;  ///< a header or simple line, no CRLF
};

enum class ParseStatus { Complete, NeedMore, Failed };

/// Incremental parser: "feed bytes, pull replies".
///
///   Parser p;
///   switch (p.parse(buffer)) {            // buffer starts at the first unconsumed byte
///     case ParseStatus::Complete: use(p.nodes()); buffer.remove_prefix(p.consumed()); …
///     case ParseStatus::NeedMore: read more, call parse() again with the longer buffer
///     case ParseStatus::Failed:   p.error() explains; the stream is unusable until reset()
///   }
class Parser {
 public:
  explicit Parser(ParserLimits limits = {});

  /// Parses one reply from `data`, which starts at the first unconsumed byte of the stream.
  /// After NeedMore, call again with the same bytes plus more (they may have moved to
  /// another address): parsing resumes where it stopped, never re-scanning what it parsed.
  /// After Complete, the next call starts a new reply (the caller has dropped consumed()
  /// bytes). After Failed, every call returns Failed until reset().
  ParseStatus parse(std::string_view data);

  /// After Complete: bytes of this reply, including any attribute before it.
  std::size_t consumed() const noexcept { return consumed_; }
  /// After Complete: the reply, root first. Attributes are not part of it.
  NodeSpan nodes() const noexcept { return nodes_.span(); }
  /// After Complete: the attributes met while parsing this reply (`|` maps before the reply
  /// or before any element inside it), in order, each a tree rooted at depth 0. An
  /// attribute nested inside an attribute is parsed and dropped.
  NodeSpan attributes() const noexcept { return attributes_.span(); }
  /// After NeedMore: how many bytes, counted from the reply's first byte, the reply is known
  /// to span at least — through the end of the bulk, verbatim or bulk error string (or the
  /// streamed string's chunk) whose body is awaited, and its CRLF. 0 when that is not known:
  /// the parser waits for a line, or the last call did not return NeedMore. A reader uses it
  /// to make room for the whole string at once instead of growing its buffer step by step.
  std::size_t known_reply_size() const noexcept {
    const bool body = pending_ == Pending::Body || pending_ == Pending::ChunkBody;
    return body && !complete_ && !failed_ ? pos_ + body_length_ + 2 : 0;
  }
  /// After NeedMore: a guess at the reply's size for a reader making room — known_reply_size()
  /// plus, when the awaited string is an element of a sized aggregate, one string of the same
  /// length for each element of that aggregate still to come (MGET, LRANGE or HGETALL of
  /// like-sized values). Never less than known_reply_size(); 0 when that is 0.
  std::size_t likely_reply_size() const noexcept {
    const std::size_t known = known_reply_size();
    if (pending_ != Pending::Body || known == 0 || stack_.empty() || stack_.back().streamed) {
      return known;
    }
    // remaining counts the awaited string too; a sibling's header is about 16 bytes.
    return known + (stack_.back().remaining - 1) * (body_length_ + 16);
  }
  /// After Failed: errc::protocol_error naming the problem, the limit and the byte offset
  /// (counted from the start of the stream, i.e. since construction or reset()).
  const Error& error() const noexcept { return error_; }
  /// The error to report when the stream ends now: "input truncated at close" if a reply is
  /// partly parsed, the parse error if failed, else an ok Error.
  Error close_error() const;
  /// Forgets everything: a fresh stream (after a reconnect). Keeps allocated capacity.
  void reset();

  const ParserLimits& limits() const noexcept { return limits_; }

 private:
  /// What the parser waits for when it is between two lines.
  enum class Pending : std::uint8_t {
    Element,      ///< a type line
    Body,         ///< the body of a `$`, `!` or `=` whose header is parsed
    ChunkHeader,  ///< a `;len` line of a streamed string
    ChunkBody,    ///< the bytes of one chunk
  };
  enum class Sink : std::uint8_t { Reply, Attributes, Drop };
  enum class Step : std::uint8_t { Continue, NeedMore, Done, Fail };

  struct Frame {
    std::size_t node = 0;       ///< index of the aggregate's node in its sink (if kept)
    std::size_t remaining = 0;  ///< elements still expected (sized aggregates)
    std::size_t count = 0;      ///< elements seen (streamed aggregates)
    std::uint32_t child_depth = 0;
    Sink sink = Sink::Reply;  ///< where this aggregate's children go
    bool streamed = false;    ///< `*?`, `%?`, `~?`: ends with `.`
    bool attribute = false;   ///< does not count as an element of its parent
    ReplyType type = ReplyType::Array;
  };

  ParseStatus run(std::string_view data);
  /// A new reply that is whole in `data` and one of the commonest (a `+`, `-` or `:` line:
  /// SET's, INCR's, most errors; a `$` bulk string: GET's), parsed without run()'s loop:
  /// true when it was. False leaves the parser as it was, for run() to parse the bytes (or
  /// reject them) the same way it would have.
  bool parse_whole_scalar(std::string_view data);
  ParseStatus need_more(std::string_view data);
  void begin_reply();
  Step parse_line(std::string_view data, std::size_t line_end);
  Step parse_body(std::string_view data);
  Step parse_chunk_header(std::string_view data, std::size_t line_end);
  Step parse_chunk_body(std::string_view data);
  Step open_aggregate(ReplyType type, char marker, std::string_view text);
  Step close_streamed();
  Step emit(ReplyType type, std::size_t offset, std::size_t length);
  Step emit_streamed_string(std::size_t scratch_offset, std::size_t length);
  Step element_done();
  Sink current_sink() const noexcept;
  std::uint32_t current_depth() const noexcept;
  void finish(std::string_view data);
  Step fail(std::string message, std::size_t offset_in_reply);
  Step fail_line(std::string message);
  std::string line_too_long() const;

  ParserLimits limits_;

  /// Node storage reused from reply to reply: only `count` is reset, so steady state
  /// allocates nothing.
  ///
  /// Values are views into the data of the parse() call that produced them. The caller may
  /// move its buffer between NeedMore calls, so before returning NeedMore the views not yet
  /// detached become offsets (each node once: linear however the input is split), and
  /// Complete turns those offsets back into views of the final data.
  struct NodeList {
    std::vector<Node> nodes;
    std::vector<std::size_t> offsets;  ///< for [0, detached): offset of value, or kNoText
    std::size_t count = 0;
    std::size_t detached = 0;

    Node& add(std::size_t& index) {
      if (count == nodes.size()) grow();
      index = count;
      return nodes[count++];
    }
    void grow();
    void clear() noexcept { count = detached = 0; }
    NodeSpan span() const noexcept { return NodeSpan(nodes.data(), count); }
    void detach(const char* base);
    void rebind(const char* base) noexcept;
  };
  /// A streamed string's node: its value lives in scratch_, which may still grow.
  struct ScratchRef {
    bool attribute = false;
    std::size_t index = 0;
    std::size_t offset = 0;
  };

  // Per reply (cleared when the next reply starts; capacity kept).
  NodeList nodes_;
  NodeList attributes_;
  std::vector<ScratchRef> scratch_refs_;
  std::vector<Frame> stack_;
  std::string scratch_;  ///< streamed string chunks, joined

  const char* data_ = nullptr;  ///< the current parse() call's data
  std::size_t pos_ = 0;         ///< next unparsed byte, relative to the reply's start
  std::size_t scan_from_ = 0;   ///< a line end is not before this (resume point of memchr)
  Pending pending_ = Pending::Element;
  ReplyType body_type_ = ReplyType::BulkString;
  std::size_t body_length_ = 0;   ///< Body / ChunkBody: bytes expected
  std::size_t stream_start_ = 0;  ///< offset of the streamed string in scratch_
  std::size_t seen_ = 0;          ///< bytes of this reply the parser has been shown

  bool complete_ = false;
  bool failed_ = false;
  std::size_t consumed_ = 0;
  std::size_t stream_offset_ = 0;  ///< stream bytes before this reply
  Error error_;
};

}  // namespace redmux::resp
