#include "resp/parser.hpp"

#include "resp/lexical.hpp"

#include <charconv>
#include <cstring>
#include <limits>
#include <string>

namespace redmux::resp {
namespace {

using namespace lexical;

/// NodeList::offsets entry of a node without text (aggregate, Null, streamed string).
constexpr std::size_t kNoText = std::numeric_limits<std::size_t>::max();

/// The message for the length `text` of a `marker` line that parse_length() did not take
/// (`status` Overflow or Invalid); `$` and `*` lines may also carry -1 and ?.
std::string length_error(LengthStatus status, char marker, std::string_view text) {
  if (status == LengthStatus::Overflow) {
    return std::string(marker_name(marker)) + " length " + quote(text) + " overflows";
  }
  return "invalid " + std::string(marker_name(marker)) + " length " + quote(text) +
         (marker == '$' || marker == '*' ? " (expected digits, -1 or ?)" : " (expected digits)");
}

}  // namespace

Parser::Parser(ParserLimits limits) : limits_(limits) {}

void Parser::begin_reply() {
  nodes_.clear();
  attributes_.clear();
  scratch_refs_.clear();
  stack_.clear();
  scratch_.clear();
  pos_ = 0;
  scan_from_ = 0;
  pending_ = Pending::Element;
  body_length_ = 0;
  stream_start_ = 0;
  seen_ = 0;
  consumed_ = 0;
  complete_ = false;
}

void Parser::reset() {
  begin_reply();
  failed_ = false;
  error_ = Error();
  stream_offset_ = 0;
}

Error Parser::close_error() const {
  if (failed_) return error_;
  if (complete_ || seen_ == 0) return Error();
  return Error(errc::protocol_error,
               "RESP protocol error: input truncated at close: the stream ended inside a reply "
               "after " +
                   std::to_string(seen_) + " of its bytes (reply starts at byte offset " +
                   std::to_string(stream_offset_) + ")");
}

ParseStatus Parser::parse(std::string_view data) {
  if (failed_) return ParseStatus::Failed;
  if (complete_) {
    stream_offset_ += consumed_;
    begin_reply();
  }
  if (data.size() < seen_) {
    fail("parse() was given " + std::to_string(data.size()) + " bytes after " +
             std::to_string(seen_) + " (the unconsumed bytes must be passed again)",
         0);
    return ParseStatus::Failed;
  }
  if (seen_ == 0 && parse_whole_scalar(data)) return ParseStatus::Complete;
  seen_ = data.size();
  return run(data);
}

bool Parser::parse_whole_scalar(std::string_view data) {
  if (data.size() < 3) return false;
  const char* base = data.data();
  const char* end = base + data.size();
  ReplyType type;
  const char* cr;
  std::string_view value;
  std::size_t next;  // the first byte after the reply
  switch (data[0]) {
    case ':': {
      // An optional '-', then 1 to 18 digits (valid_integer() takes those without
      // std::from_chars), checked as they are scanned. Any other integer takes run().
      type = ReplyType::Integer;
      cr = digits_then_crlf(base + 1 + (base[1] == '-'), end, nullptr);
      if (cr == nullptr) return false;
      value = std::string_view(base + 1, static_cast<std::size_t>(cr - base - 1));
      next = static_cast<std::size_t>(cr - base) + 2;
      break;
    }
    case '+':
    case '-': {
      type = data[0] == '+' ? ReplyType::SimpleString : ReplyType::SimpleError;
      const char* lf = find_lf(base + 1, end);
      if (lf == nullptr || lf[-1] != '\r') return false;
      cr = lf - 1;
      value = std::string_view(base + 1, static_cast<std::size_t>(cr - base - 1));
      next = static_cast<std::size_t>(lf - base) + 1;
      break;
    }
    case '$': {
      // A length of plain digits within max_bulk_length, and the whole body with its CRLF
      // in `data`. Null ($-1), streamed ($?), a body still to come and every error: run().
      type = ReplyType::BulkString;
      unsigned long long length;
      cr = digits_then_crlf(base + 1, end, &length);
      if (cr == nullptr || length > limits_.max_bulk_length) return false;
      const auto body = static_cast<std::size_t>(cr - base) + 2;
      if (data.size() - body < length + 2) return false;
      const char* body_end = base + body + length;
      if (body_end[0] != '\r' || body_end[1] != '\n') return false;
      value = std::string_view(base + body, static_cast<std::size_t>(length));
      next = body + static_cast<std::size_t>(length) + 2;
      break;
    }
    default:
      return false;
  }
  // The line, CR excluded, is at most max_line_length bytes (run()'s test, on the LF).
  if (static_cast<std::size_t>(cr - base) > limits_.max_line_length) return false;
  std::size_t index;
  nodes_.add(index) = Node{type, 0, value.size(), value};
  data_ = base;
  pos_ = next;
  seen_ = data.size();
  consumed_ = next;
  complete_ = true;
  return true;
}

ParseStatus Parser::run(std::string_view data) {
  data_ = data.data();
  const char* base = data.data();
  const std::size_t size = data.size();
  for (;;) {
    Step step;
    switch (pending_) {
      case Pending::Element:
      case Pending::ChunkHeader: {
        std::size_t from = scan_from_ > pos_ ? scan_from_ : pos_;
        const char* found = find_lf(base + from, base + size);
        if (found == nullptr) {
          // The line may still end with a '\r' whose '\n' has not arrived.
          if (size - pos_ > limits_.max_line_length + 1) {
            fail_line(line_too_long());
            return ParseStatus::Failed;
          }
          scan_from_ = size;
          return need_more(data);
        }
        std::size_t lf = static_cast<std::size_t>(found - base);
        // Checked in the order a byte-by-byte feed would meet them: too long first.
        if (lf - pos_ > limits_.max_line_length + 1) {
          fail_line(line_too_long());
          return ParseStatus::Failed;
        }
        if (lf == pos_ || base[lf - 1] != '\r') {
          fail_line("line ends with LF without CR");
          return ParseStatus::Failed;
        }
        std::size_t cr = lf - 1;
        step = pending_ == Pending::Element ? parse_line(data, cr) : parse_chunk_header(data, cr);
        break;
      }
      case Pending::Body:
        step = parse_body(data);
        break;
      case Pending::ChunkBody:
        step = parse_chunk_body(data);
        break;
    }
    switch (step) {
      case Step::Continue:
        continue;
      case Step::NeedMore:
        return need_more(data);
      case Step::Done:
        finish(data);
        return ParseStatus::Complete;
      case Step::Fail:
        return ParseStatus::Failed;
    }
  }
}

Parser::Step Parser::parse_line(std::string_view data, std::size_t cr) {
  const std::size_t start = pos_;
  if (cr == start) return fail("empty line where a type byte was expected", start);
  const char marker = data[start];
  const std::size_t text_offset = start + 1;
  const std::string_view text = data.substr(text_offset, cr - text_offset);
  pos_ = cr + 2;
  switch (marker) {
    case '+':
      return emit(ReplyType::SimpleString, text_offset, text.size());
    case '-':
      return emit(ReplyType::SimpleError, text_offset, text.size());
    case ':':
      if (!valid_integer(text)) return fail("invalid integer " + quote(text), start);
      return emit(ReplyType::Integer, text_offset, text.size());
    case ',':
      if (!valid_double(text)) return fail("invalid double " + quote(text), start);
      return emit(ReplyType::Double, text_offset, text.size());
    case '#':
      if (text != "t" && text != "f") {
        return fail("invalid boolean " + quote(text) + " (expected t or f)", start);
      }
      return emit(ReplyType::Boolean, text_offset, text.size());
    case '(':
      if (!valid_big_number(text)) return fail("invalid big number " + quote(text), start);
      return emit(ReplyType::BigNumber, text_offset, text.size());
    case '_':
      if (!text.empty()) return fail("null followed by " + quote(text), start);
      return emit(ReplyType::Null, text_offset, 0);
    case '$':
    case '!':
    case '=': {
      if (marker == '$' && text == "?") {
        pending_ = Pending::ChunkHeader;
        stream_start_ = scratch_.size();
        return Step::Continue;
      }
      if (marker == '$' && text == "-1") return emit(ReplyType::Null, text_offset, 0);
      std::size_t length = 0;
      if (const LengthStatus status = parse_length(text, length); status != LengthStatus::Ok) {
        return fail(length_error(status, marker, text), start);
      }
      if (length > limits_.max_bulk_length) {
        return fail(std::string(marker_name(marker)) + " length " + std::to_string(length) +
                        " exceeds max_bulk_length (" + std::to_string(limits_.max_bulk_length) +
                        ")",
                    start);
      }
      if (marker == '=' && length < 4) {
        return fail("verbatim string length " + std::to_string(length) +
                        " is shorter than its 4-byte format prefix",
                    start);
      }
      body_type_ = marker == '$'   ? ReplyType::BulkString
                   : marker == '!' ? ReplyType::BulkError
                                   : ReplyType::VerbatimString;
      body_length_ = length;
      pending_ = Pending::Body;
      return Step::Continue;
    }
    case '*':
      return open_aggregate(ReplyType::Array, marker, text);
    case '%':
      return open_aggregate(ReplyType::Map, marker, text);
    case '~':
      return open_aggregate(ReplyType::Set, marker, text);
    case '|':
      return open_aggregate(ReplyType::Attribute, marker, text);
    case '>':
      return open_aggregate(ReplyType::Push, marker, text);
    case '.':
      if (!text.empty()) return fail("end marker '.' followed by " + quote(text), start);
      return close_streamed();
    default: {
      auto u = static_cast<unsigned char>(marker);
      std::string shown = (u >= 0x20 && u < 0x7f) ? std::string(" ('") + marker + "')" : "";
      static constexpr char kHex[] = "0123456789abcdef";
      return fail(std::string("unknown type byte 0x") + kHex[u >> 4] + kHex[u & 15] + shown, start);
    }
  }
}

Parser::Step Parser::parse_body(std::string_view data) {
  const std::size_t start = pos_;
  if (data.size() - start < body_length_ + 2) return Step::NeedMore;
  const std::size_t end = start + body_length_;
  if (data[end] != '\r' || data[end + 1] != '\n') {
    return fail(std::string(body_type_ == ReplyType::BulkString  ? "bulk string"
                            : body_type_ == ReplyType::BulkError ? "bulk error"
                                                                 : "verbatim string") +
                    " of length " + std::to_string(body_length_) + " is not followed by CRLF",
                end);
  }
  pos_ = end + 2;
  pending_ = Pending::Element;
  if (body_type_ == ReplyType::VerbatimString) {
    if (data[start + 3] != ':') {
      return fail("verbatim string without its \"fmt:\" prefix: " + quote(data.substr(start, 4)),
                  start);
    }
    return emit(ReplyType::VerbatimString, start + 4, body_length_ - 4);
  }
  return emit(body_type_, start, body_length_);
}

Parser::Step Parser::parse_chunk_header(std::string_view data, std::size_t cr) {
  const std::size_t start = pos_;
  std::string_view line = data.substr(start, cr - start);
  pos_ = cr + 2;
  if (line.empty() || line[0] != ';') {
    return fail("streamed string chunk expected (';<length>'), got " + quote(line), start);
  }
  std::size_t length = 0;
  switch (parse_length(line.substr(1), length)) {
    case LengthStatus::Ok:
      break;
    case LengthStatus::Overflow:
      return fail("streamed string chunk length " + quote(line.substr(1)) + " overflows", start);
    case LengthStatus::Invalid:
      return fail("invalid streamed string chunk length " + quote(line.substr(1)), start);
  }
  const std::size_t so_far = scratch_.size() - stream_start_;
  if (length == 0) {
    pending_ = Pending::Element;
    return emit_streamed_string(stream_start_, so_far);
  }
  if (length > limits_.max_bulk_length || so_far + length > limits_.max_bulk_length) {
    return fail("streamed string of " + std::to_string(so_far) + " bytes plus a chunk of " +
                    std::to_string(length) + " exceeds max_bulk_length (" +
                    std::to_string(limits_.max_bulk_length) + ")",
                start);
  }
  body_length_ = length;
  pending_ = Pending::ChunkBody;
  return Step::Continue;
}

Parser::Step Parser::parse_chunk_body(std::string_view data) {
  const std::size_t start = pos_;
  if (data.size() - start < body_length_ + 2) return Step::NeedMore;
  const std::size_t end = start + body_length_;
  if (data[end] != '\r' || data[end + 1] != '\n') {
    return fail("streamed string chunk of length " + std::to_string(body_length_) +
                    " is not followed by CRLF",
                end);
  }
  scratch_.append(data.data() + start, body_length_);
  pos_ = end + 2;
  pending_ = Pending::ChunkHeader;
  return Step::Continue;
}

Parser::Sink Parser::current_sink() const noexcept {
  return stack_.empty() ? Sink::Reply : stack_.back().sink;
}

std::uint32_t Parser::current_depth() const noexcept {
  return stack_.empty() ? 0 : stack_.back().child_depth;
}

Parser::Step Parser::open_aggregate(ReplyType type, char marker, std::string_view text) {
  const std::size_t start = pos_ - text.size() - 3;  // the line's first byte
  const bool pairs = type == ReplyType::Map || type == ReplyType::Attribute;
  bool streamed = false;
  std::size_t count = 0;
  if (text == "?") {
    if (type == ReplyType::Attribute || type == ReplyType::Push) {
      return fail(std::string("streamed (?) length is not allowed for a ") + marker_name(marker),
                  start);
    }
    streamed = true;
  } else if (marker == '*' && text == "-1") {
    return emit(ReplyType::Null, start + 1, 0);
  } else {
    if (const LengthStatus status = parse_length(text, count); status != LengthStatus::Ok) {
      return fail(length_error(status, marker, text), start);
    }
    const std::size_t limit = limits_.max_aggregate_elements;
    if (count > limit || (pairs && count > limit / 2)) {
      return fail(std::string(marker_name(marker)) + " of " + std::to_string(count) +
                      (pairs ? " pairs" : " elements") + " exceeds max_aggregate_elements (" +
                      std::to_string(limit) + ")",
                  start);
    }
  }
  if (stack_.size() >= limits_.max_depth) {
    return fail(
        "aggregates nested deeper than max_depth (" + std::to_string(limits_.max_depth) + ")",
        start);
  }

  Sink sink = current_sink();
  std::uint32_t depth = current_depth();
  Sink child_sink = sink;
  if (type == ReplyType::Attribute) {
    // An attribute's own tree goes to attributes_, rooted at depth 0; one inside an
    // attribute is dropped, so attributes_ stays a sequence of well-formed trees.
    if (sink == Sink::Reply) {
      sink = child_sink = Sink::Attributes;
      depth = 0;
    } else {
      sink = child_sink = Sink::Drop;
    }
  }
  std::size_t index = 0;
  if (sink != Sink::Drop) {
    (sink == Sink::Reply ? nodes_ : attributes_).add(index) = Node{type, depth, count, {}};
  }
  if (!streamed && count == 0) {
    // Complete at once. An attribute is not an element of its parent: the element it
    // describes follows it.
    return type == ReplyType::Attribute ? Step::Continue : element_done();
  }
  Frame frame;
  frame.node = index;
  frame.remaining = pairs ? count * 2 : count;
  frame.child_depth = depth + 1;
  frame.sink = child_sink;
  frame.streamed = streamed;
  frame.attribute = type == ReplyType::Attribute;
  frame.type = type;
  stack_.push_back(frame);
  return Step::Continue;
}

Parser::Step Parser::close_streamed() {
  const std::size_t start = pos_ - 3;
  if (stack_.empty() || !stack_.back().streamed) {
    return fail("end marker '.' outside a streamed aggregate", start);
  }
  const Frame frame = stack_.back();
  if (frame.type == ReplyType::Map && frame.count % 2 != 0) {
    return fail(
        "streamed map ended after an odd number of elements (" + std::to_string(frame.count) + ")",
        start);
  }
  const std::size_t size = frame.type == ReplyType::Map ? frame.count / 2 : frame.count;
  stack_.pop_back();
  // The aggregate's node sits in the sink of its parent, which is the frame's own sink
  // (streamed attributes are refused).
  if (frame.sink == Sink::Reply) {
    nodes_.nodes[frame.node].size = size;
  } else if (frame.sink == Sink::Attributes) {
    attributes_.nodes[frame.node].size = size;
  }
  return element_done();
}

Parser::Step Parser::emit(ReplyType type, std::size_t offset, std::size_t length) {
  const Sink sink = current_sink();
  if (sink != Sink::Drop) {
    std::size_t index;
    Node& node = (sink == Sink::Reply ? nodes_ : attributes_).add(index);
    node.type = type;
    node.depth = current_depth();
    node.size = length;
    node.value =
        type == ReplyType::Null ? std::string_view() : std::string_view(data_ + offset, length);
  }
  return element_done();
}

Parser::Step Parser::emit_streamed_string(std::size_t scratch_offset, std::size_t length) {
  const Sink sink = current_sink();
  if (sink != Sink::Drop) {
    // No view yet (scratch_ may still reallocate): finish() binds it.
    std::size_t index;
    (sink == Sink::Reply ? nodes_ : attributes_).add(index) =
        Node{ReplyType::BulkString, current_depth(), length, {}};
    scratch_refs_.push_back(ScratchRef{sink == Sink::Attributes, index, scratch_offset});
  }
  return element_done();
}

Parser::Step Parser::element_done() {
  while (!stack_.empty()) {
    Frame& frame = stack_.back();
    if (frame.streamed) {
      if (++frame.count > limits_.max_aggregate_elements) {
        return fail("streamed " + std::string(frame.type == ReplyType::Map ? "map" : "aggregate") +
                        " of more than " + std::to_string(limits_.max_aggregate_elements) +
                        " elements exceeds max_aggregate_elements",
                    pos_);
      }
      return Step::Continue;
    }
    if (--frame.remaining != 0) return Step::Continue;
    const bool attribute = frame.attribute;
    stack_.pop_back();
    if (attribute) return Step::Continue;  // the described element is still to come
  }
  return Step::Done;
}

void Parser::NodeList::grow() {
  nodes.resize(nodes.empty() ? 16 : nodes.size() * 2);
}

void Parser::NodeList::detach(const char* base) {
  if (offsets.size() < count) offsets.resize(nodes.size());
  for (std::size_t i = detached; i < count; ++i) {
    const char* at = nodes[i].value.data();
    offsets[i] = at == nullptr ? kNoText : static_cast<std::size_t>(at - base);
  }
  detached = count;
}

void Parser::NodeList::rebind(const char* base) noexcept {
  for (std::size_t i = 0; i < detached; ++i) {
    if (offsets[i] != kNoText) nodes[i].value = std::string_view(base + offsets[i], nodes[i].size);
  }
}

ParseStatus Parser::need_more(std::string_view data) {
  nodes_.detach(data.data());
  attributes_.detach(data.data());
  return ParseStatus::NeedMore;
}

void Parser::finish(std::string_view data) {
  if (nodes_.detached != 0) nodes_.rebind(data.data());
  if (attributes_.detached != 0) attributes_.rebind(data.data());
  for (const ScratchRef& ref : scratch_refs_) {
    Node& node = (ref.attribute ? attributes_ : nodes_).nodes[ref.index];
    node.value = std::string_view(scratch_.data() + ref.offset, node.size);
  }
  consumed_ = pos_;
  complete_ = true;
}

Parser::Step Parser::fail(std::string message, std::size_t offset_in_reply) {
  failed_ = true;
  error_ = Error(errc::protocol_error, "RESP protocol error: " + message + " at byte offset " +
                                           std::to_string(stream_offset_ + offset_in_reply));
  return Step::Fail;
}

// One message whether the CRLF is missing or comes too late, so that where the input
// happens to be split cannot change the error.
std::string Parser::line_too_long() const {
  return "no CRLF within max_line_length (" + std::to_string(limits_.max_line_length) +
         ") bytes of a line";
}

Parser::Step Parser::fail_line(std::string message) {
  return fail(std::move(message), pos_);
}

}  // namespace redmux::resp
