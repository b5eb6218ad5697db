#include <ostream>
#include <stdexcept>

#include "redmux/convert.hpp"
#include "redmux/reply.hpp"

namespace redmux {
namespace {

[[noreturn]] void wrong_type(const Reply& reply, std::string_view expected) {
  std::vector<Node> nodes = reply.nodes();
  detail::mismatch(nodes[0], expected).raise();
}

/// Builds the subtree rooted at nodes[at]; returns one past it.
std::size_t build(NodeSpan nodes, std::size_t at, Reply& out) {
  const Node& node = nodes[at];
  if (!is_aggregate(node.type)) {
    if (node.type == ReplyType::VerbatimString) {
      out = Reply(node.type, std::string(node.value), {}, std::string(verbatim_format(node)));
    } else {
      out = Reply(node.type, std::string(node.value));
    }
    return at + 1;
  }
  std::vector<Reply> elements;
  const std::size_t count = detail::element_count(node);
  elements.reserve(std::min(count, nodes.size() - at - 1));
  std::size_t next = at + 1;
  for (std::size_t i = 0; i < count && next < nodes.size() && nodes[next].depth > node.depth; ++i) {
    elements.emplace_back();
    next = build(nodes, next, elements.back());
  }
  out = Reply(node.type, {}, std::move(elements));
  return next;
}

void append_quoted(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u >= 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

Reply::Reply(ReplyType type, std::string text, std::vector<Reply> elements, std::string format)
    : type_(type), text_(std::move(text)), elements_(std::move(elements)) {
  if (type_ == ReplyType::VerbatimString) {
    format.resize(3, ' ');
    text_.insert(0, format + ':');
  }
}

Reply Reply::from_nodes(NodeSpan nodes, NodeSpan attributes) {
  Reply reply;
  if (nodes.empty()) return reply;
  build(nodes, 0, reply);
  if (!attributes.empty()) {
    // Every attribute tree before the reply merges into one Attribute map.
    std::vector<Reply> pairs;
    for (std::size_t at = 0; at < attributes.size();) {
      Reply one;
      at = build(attributes, at, one);
      for (Reply& element : one.elements_) pairs.push_back(std::move(element));
    }
    reply.attributes_.emplace_back(ReplyType::Attribute, std::string(), std::move(pairs));
  }
  return reply;
}

std::string_view Reply::string() const {
  if (!is_string()) wrong_type(*this, "string");
  return text();
}

std::string_view Reply::error_message() const {
  if (!is_error()) {
    throw UnexpectedReplyError(errc::unexpected_reply,
                               "expected error reply, got " + detail::describe(nodes()[0]));
  }
  return text_;
}

long long Reply::integer() const {
  if (type_ != ReplyType::Integer) wrong_type(*this, "integer");
  return as<long long>();
}

double Reply::double_value() const {
  if (type_ != ReplyType::Double) wrong_type(*this, "double");
  return as<double>();
}

bool Reply::boolean() const {
  if (type_ != ReplyType::Boolean) wrong_type(*this, "boolean");
  return text_ == "t";
}

std::string_view Reply::big_number() const {
  if (type_ != ReplyType::BigNumber) wrong_type(*this, "big number");
  return text_;
}

std::string_view Reply::verbatim_format() const {
  if (type_ != ReplyType::VerbatimString) wrong_type(*this, "verbatim string");
  return std::string_view(text_).substr(0, 3);
}

const Reply* Reply::find(std::string_view key) const noexcept {
  if (type_ != ReplyType::Map && type_ != ReplyType::Attribute) return nullptr;
  for (std::size_t i = 0; i + 1 < elements_.size(); i += 2) {
    if (!elements_[i].is_aggregate() && elements_[i].text() == key) return &elements_[i + 1];
  }
  return nullptr;
}

std::vector<Node> Reply::nodes() const {
  std::vector<Node> out;
  append_nodes(out, 0);
  return out;
}

void Reply::append_nodes(std::vector<Node>& out, std::uint32_t depth) const {
  if (is_aggregate()) {
    out.push_back(Node{type_, depth, size(), {}});
    for (const Reply& element : elements_) element.append_nodes(out, depth + 1);
  } else {
    std::string_view value = text();
    out.push_back(Node{type_, depth, value.size(), value});
  }
}

void Reply::append_text(std::string& out) const {
  switch (type_) {
    case ReplyType::SimpleString:
    case ReplyType::BulkString:
      append_quoted(out, text_);
      break;
    case ReplyType::VerbatimString:
      out += "(verbatim ";
      out += verbatim_format();
      out += ") ";
      append_quoted(out, text());
      break;
    case ReplyType::SimpleError:
    case ReplyType::BulkError:
      out += "(error) ";
      out += text_;
      break;
    case ReplyType::Integer:
    case ReplyType::Double:
      out += text_;
      break;
    case ReplyType::BigNumber:
      out += "(big number) ";
      out += text_;
      break;
    case ReplyType::Null:
      out += "nil";
      break;
    case ReplyType::Boolean:
      out += text_ == "t" ? "true" : "false";
      break;
    case ReplyType::Array:
    case ReplyType::Set:
    case ReplyType::Push: {
      out += type_ == ReplyType::Set ? "~[" : type_ == ReplyType::Push ? ">[" : "[";
      for (std::size_t i = 0; i < elements_.size(); ++i) {
        if (i) out += ", ";
        elements_[i].append_text(out);
      }
      out += ']';
      break;
    }
    case ReplyType::Map:
    case ReplyType::Attribute:
      out += type_ == ReplyType::Attribute ? "|{" : "{";
      for (std::size_t i = 0; i + 1 < elements_.size(); i += 2) {
        if (i) out += ", ";
        elements_[i].append_text(out);
        out += ": ";
        elements_[i + 1].append_text(out);
      }
      out += '}';
      break;
  }
}

std::string Reply::to_string() const {
  std::string out;
  if (const Reply* attributes = this->attributes()) {
    attributes->append_text(out);
    out += ' ';
  }
  append_text(out);
  return out;
}

bool operator==(const Reply& a, const Reply& b) noexcept {
  return a.type_ == b.type_ && a.text_ == b.text_ && a.elements_ == b.elements_ &&
         a.attributes_ == b.attributes_;
}

std::ostream& operator<<(std::ostream& os, const Reply& reply) {
  return os << reply.to_string();
}

}  // namespace redmux
