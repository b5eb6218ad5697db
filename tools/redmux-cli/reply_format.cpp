#include "reply_format.hpp"

#include <cstdio>

#include "command_line.hpp"

namespace redmux::cli {
namespace {

std::string digits_of(std::size_t n) {
  return std::to_string(n);
}

// Mirrors redis-cli's cliFormatReplyTTY: `prefix` is the indentation of nested lines; the
// first line of an aggregate element carries no prefix (its parent printed the index).
void human(const Reply& reply, const std::string& prefix, std::string& out) {
  if (const Reply* attributes = reply.attributes()) {
    human(*attributes, prefix, out);
    out += prefix;
  }
  switch (reply.type()) {
    case ReplyType::SimpleError:
    case ReplyType::BulkError:
      out += "(error) ";
      out += reply.text();
      out += '\n';
      return;
    case ReplyType::SimpleString:
      out += reply.text();
      out += '\n';
      return;
    case ReplyType::Integer:
      out += "(integer) ";
      out += reply.text();
      out += '\n';
      return;
    case ReplyType::Double:
      out += "(double) ";
      out += reply.text();
      out += '\n';
      return;
    case ReplyType::BigNumber:
      out += "(big number) ";
      out += reply.text();
      out += '\n';
      return;
    case ReplyType::BulkString:
      out += quote_string(reply.text());
      out += '\n';
      return;
    case ReplyType::VerbatimString:  // redis-cli prints verbatim text as it is (INFO …)
      out += reply.text();
      out += '\n';
      return;
    case ReplyType::Null:
      out += "(nil)\n";
      return;
    case ReplyType::Boolean:
      out += reply.text() == "t" ? "(true)\n" : "(false)\n";
      return;
    case ReplyType::Array:
    case ReplyType::Set:
    case ReplyType::Map:
    case ReplyType::Push:
    case ReplyType::Attribute:
      break;
  }
  const ReplyType type = reply.type();
  const bool paired = type == ReplyType::Map || type == ReplyType::Attribute;
  const std::size_t count = reply.size();
  if (count == 0) {
    switch (type) {
      case ReplyType::Map:
        out += "(empty hash)\n";
        break;
      case ReplyType::Set:
        out += "(empty set)\n";
        break;
      case ReplyType::Push:
        out += "(empty push)\n";
        break;
      case ReplyType::Attribute:
        out += "(empty attribute)\n";
        break;
      default:
        out += "(empty array)\n";
        break;
    }
    return;
  }
  const std::size_t width = digits_of(count).size();
  const std::string nested = prefix + std::string(width + 2, ' ');
  const char separator = type == ReplyType::Set         ? '~'
                         : type == ReplyType::Map       ? '#'
                         : type == ReplyType::Attribute ? '|'
                                                        : ')';
  const auto elements = reply.elements();
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) out += prefix;
    const std::string index = digits_of(i + 1);
    out.append(width - index.size(), ' ');
    out += index;
    out += separator;
    out += ' ';
    if (paired) {
      human(elements[2 * i], nested, out);
      out.pop_back();  // the key's newline
      const Reply& value = elements[2 * i + 1];
      if (value.is_aggregate() && value.size() > 0) {
        // redis-cli starts a non-empty aggregate value on its own, indented line.
        out += " => \n";
        out += nested;
      } else {
        out += " => ";
      }
      human(value, nested, out);
    } else {
      human(elements[i], nested, out);
    }
  }
}

// Mirrors cliFormatReplyRaw: elements separated by "\n", map pairs by a space.
void raw(const Reply& reply, std::string& out) {
  switch (reply.type()) {
    case ReplyType::Null:
      return;
    case ReplyType::SimpleError:
    case ReplyType::BulkError:
      out += reply.text();
      out += '\n';
      return;
    case ReplyType::Boolean:
      out += reply.text() == "t" ? "(true)" : "(false)";
      return;
    case ReplyType::SimpleString:
    case ReplyType::BulkString:
    case ReplyType::VerbatimString:
    case ReplyType::Integer:
    case ReplyType::Double:
    case ReplyType::BigNumber:
      out += reply.text();
      return;
    case ReplyType::Map:
    case ReplyType::Attribute: {
      const auto elements = reply.elements();
      for (std::size_t i = 0; i < reply.size(); ++i) {
        if (i > 0) out += '\n';
        raw(elements[2 * i], out);
        out += ' ';
        raw(elements[2 * i + 1], out);
      }
      return;
    }
    case ReplyType::Array:
    case ReplyType::Set:
    case ReplyType::Push: {
      bool first = true;
      for (const Reply& element : reply.elements()) {
        if (!first) out += '\n';
        first = false;
        raw(element, out);
      }
      return;
    }
  }
}

bool json_object_key(const Reply& key) {
  return key.is_string() || key.type() == ReplyType::Integer;
}

void json(const Reply& reply, std::string& out) {
  switch (reply.type()) {
    case ReplyType::Null:
      out += "null";
      return;
    case ReplyType::SimpleError:
    case ReplyType::BulkError:
      out += "{\"error\":";
      out += json_string(reply.text());
      out += '}';
      return;
    case ReplyType::Boolean:
      out += reply.text() == "t" ? "true" : "false";
      return;
    case ReplyType::Integer:
      out += reply.text();
      return;
    case ReplyType::Double: {
      const std::string_view text = reply.text();
      // inf, -inf and nan have no JSON number.
      if (text.find_first_of("iInN") != std::string_view::npos) {
        out += json_string(text);
      } else {
        out += text;
      }
      return;
    }
    case ReplyType::BigNumber:  // beyond what most JSON readers hold exactly
    case ReplyType::SimpleString:
    case ReplyType::BulkString:
    case ReplyType::VerbatimString:
      out += json_string(reply.text());
      return;
    case ReplyType::Map:
    case ReplyType::Attribute: {
      const auto elements = reply.elements();
      bool as_object = true;
      for (std::size_t i = 0; i < reply.size(); ++i) {
        if (!json_object_key(elements[2 * i])) as_object = false;
      }
      out += as_object ? '{' : '[';
      for (std::size_t i = 0; i < reply.size(); ++i) {
        if (i > 0) out += ',';
        if (as_object) {
          out += json_string(elements[2 * i].text());
          out += ':';
          json(elements[2 * i + 1], out);
        } else {
          out += '[';
          json(elements[2 * i], out);
          out += ',';
          json(elements[2 * i + 1], out);
          out += ']';
        }
      }
      out += as_object ? '}' : ']';
      return;
    }
    case ReplyType::Array:
    case ReplyType::Set:
    case ReplyType::Push: {
      out += '[';
      bool first = true;
      for (const Reply& element : reply.elements()) {
        if (!first) out += ',';
        first = false;
        json(element, out);
      }
      out += ']';
      return;
    }
  }
}

// Length of the valid UTF-8 sequence starting at `s[i]`, or 0 when it is not one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t length = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return length;
}

}  // namespace

std::string format_human(const Reply& reply) {
  std::string out;
  human(reply, "", out);
  return out;
}

std::string format_raw(const Reply& reply) {
  std::string out;
  raw(reply, out);
  out += '\n';
  return out;
}

std::string format_json(const Reply& reply) {
  std::string out;
  json(reply, out);
  out += '\n';
  return out;
}

std::string format_human_error(std::string_view message) {
  return "(error) " + std::string(message) + "\n";
}
std::string format_raw_error(std::string_view message) {
  return std::string(message) + "\n\n";
}
std::string format_json_error(std::string_view message) {
  return "{\"error\":" + json_string(message) + "}\n";
}

std::string json_string(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      if (const std::size_t length = utf8_length(text, i)) {
        out.append(text.substr(i, length));
        i += length;
        continue;
      }
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

}  // namespace redmux::cli
