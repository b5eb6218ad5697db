#include "reply_format.hpp"

#include "command_line.hpp"

namespace redmux::cli {
namespace {

std::string digits_of(std::size_t n) {
  return std::to_string(n);
}

// Mirrors redis-cli's cliFormatReplyTTY: `prefix` is the indentation of nested lines; the
// first line of an aggregate element carries no prefix (its parent printed the index).
// True when human() prints `reply` on more than one line: an aggregate of several elements
// (a map of several pairs), or of one that does (redis-cli's rule for a map value's line).
bool spans_lines(const Reply& reply) {
  if (!reply.is_aggregate() || reply.size() == 0) return false;
  if (reply.size() > 1) return true;
  const auto elements = reply.elements();
  const bool paired = reply.type() == ReplyType::Map || reply.type() == ReplyType::Attribute;
  return spans_lines(paired ? elements[1] : elements[0]);
}

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
      if (spans_lines(value)) {
        // redis-cli starts a value of several lines on its own, indented line; one of a
        // single line (a one-element aggregate too) follows the "=>".
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

// Length of the well-formed UTF-8 sequence starting at `s[i]`, or 0 when it is not one.
// Exactly the table of well-formed byte sequences (Unicode 15, §3.9, table 3-7): the second
// byte's range depends on the first, which rules out overlong forms (E0 80…9F, F0 80…8F),
// UTF-16 surrogates (ED A0…BF) and code points above U+10FFFF (F4 90…BF, F5…FF); nlohmann-json
// refuses all of these when it writes them.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < low || b1 > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// A number reply's text as a JSON number; text the JSON grammar does not accept (inf, nan,
// "1." …) stays a string.
Json number(std::string_view text) {
  Json value = Json::parse(text, nullptr, false);
  if (value.is_number()) return value;
  return utf8_text(text);
}

}  // namespace

Json to_json(const Reply& reply) {
  switch (reply.type()) {
    case ReplyType::Null:
      return nullptr;
    case ReplyType::SimpleError:
    case ReplyType::BulkError:
      return Json{{"error", utf8_text(reply.text())}};
    case ReplyType::Boolean:
      return reply.text() == "t";
    case ReplyType::Integer:
    case ReplyType::Double:
      return number(reply.text());
    case ReplyType::BigNumber:  // beyond what most JSON readers hold exactly
    case ReplyType::SimpleString:
    case ReplyType::BulkString:
    case ReplyType::VerbatimString:
      return utf8_text(reply.text());
    case ReplyType::Map:
    case ReplyType::Attribute: {
      const auto elements = reply.elements();
      bool as_object = true;
      for (std::size_t i = 0; i < reply.size(); ++i) {
        if (!json_object_key(elements[2 * i])) as_object = false;
      }
      Json out = as_object ? Json::object() : Json::array();
      for (std::size_t i = 0; i < reply.size(); ++i) {
        if (as_object) {
          out[utf8_text(elements[2 * i].text())] = to_json(elements[2 * i + 1]);
        } else {
          out.push_back(Json::array({to_json(elements[2 * i]), to_json(elements[2 * i + 1])}));
        }
      }
      return out;
    }
    case ReplyType::Array:
    case ReplyType::Set:
    case ReplyType::Push: {
      Json out = Json::array();
      for (const Reply& element : reply.elements()) out.push_back(to_json(element));
      return out;
    }
  }
  return nullptr;
}

bool printed_raw_by_redis_cli(const std::vector<std::string>& words) {
  if (words.empty()) return false;
  const std::string_view command = words[0];
  const std::string_view sub = words.size() >= 2 ? std::string_view(words[1]) : "";
  const std::size_t n = words.size();
  if (iequals(command, "info") || iequals(command, "lolwut")) return true;
  if (iequals(command, "debug") && n >= 2) {
    return iequals(sub, "htstats") || iequals(sub, "htstats-key") ||
           iequals(sub, "client-eviction");
  }
  if (iequals(command, "memory") && n >= 2) {
    return iequals(sub, "malloc-stats") || iequals(sub, "doctor");
  }
  if (iequals(command, "cluster") && n == 2) return iequals(sub, "nodes") || iequals(sub, "info");
  if (iequals(command, "client") && n >= 2) return iequals(sub, "list") || iequals(sub, "info");
  if (iequals(command, "latency")) {
    return (n == 3 && iequals(sub, "graph")) || (n == 2 && iequals(sub, "doctor"));
  }
  return false;
}

std::string utf8_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t length = utf8_length(bytes, i)) {
      out.append(bytes.substr(i, length));
      i += length;
    } else {  // U+0080 … U+00FF in UTF-8
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
      ++i;
    }
  }
  return out;
}

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
  return to_json(reply).dump() + "\n";
}

std::string format_human_error(std::string_view message) {
  return "(error) " + std::string(message) + "\n";
}
std::string format_raw_error(std::string_view message) {
  return std::string(message) + "\n\n";
}
std::string format_json_error(std::string_view message) {
  return Json{{"error", utf8_text(message)}}.dump() + "\n";
}

}  // namespace redmux::cli
