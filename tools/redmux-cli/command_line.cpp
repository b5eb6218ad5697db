#include "command_line.hpp"

#include <cctype>
#include <charconv>

namespace redmux::cli {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::vector<std::string>> split_command_line(std::string_view line) {
  std::vector<std::string> args;
  std::size_t i = 0;
  const std::size_t n = line.size();
  for (;;) {
    while (i < n && is_blank(line[i])) ++i;
    if (i >= n) return args;
    std::string current;
    enum class Quote { None, Double, Single } quote = Quote::None;
    bool done = false;
    while (!done) {
      if (quote == Quote::Double) {
        if (i >= n) return std::nullopt;  // unterminated "
        if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' && hex_value(line[i + 2]) >= 0 &&
            hex_value(line[i + 3]) >= 0) {
          current += static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3]));
          i += 4;
        } else if (line[i] == '\\' && i + 1 < n) {
          switch (line[i + 1]) {
            case 'n':
              current += '\n';
              break;
            case 'r':
              current += '\r';
              break;
            case 't':
              current += '\t';
              break;
            case 'b':
              current += '\b';
              break;
            case 'a':
              current += '\a';
              break;
            default:
              current += line[i + 1];
              break;
          }
          i += 2;
        } else if (line[i] == '"') {
          // The closing quote must end the word.
          if (i + 1 < n && !is_blank(line[i + 1])) return std::nullopt;
          ++i;
          done = true;
        } else {
          current += line[i++];
        }
      } else if (quote == Quote::Single) {
        if (i >= n) return std::nullopt;  // unterminated '
        if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
          current += '\'';
          i += 2;
        } else if (line[i] == '\'') {
          if (i + 1 < n && !is_blank(line[i + 1])) return std::nullopt;
          ++i;
          done = true;
        } else {
          current += line[i++];
        }
      } else {
        if (i >= n || is_blank(line[i])) {
          done = true;
        } else if (line[i] == '"') {
          quote = Quote::Double;
          ++i;
        } else if (line[i] == '\'') {
          quote = Quote::Single;
          ++i;
        } else {
          current += line[i++];
        }
      }
    }
    args.push_back(std::move(current));
  }
}

std::string quote_string(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() + 2);
  out += '"';
  for (const char c : bytes) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
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
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (std::isprint(static_cast<unsigned char>(c))) {
          out += c;
        } else {
          const auto byte = static_cast<unsigned char>(c);
          out += "\\x";
          out += kHex[byte >> 4];
          out += kHex[byte & 0xf];
        }
    }
  }
  out += '"';
  return out;
}

std::optional<long long> parse_server_integer(std::string_view text) {
  if (text == "0") return 0;
  const std::string_view digits = text.starts_with('-') ? text.substr(1) : text;
  // from_chars alone would take "07", and stop at the 'x' of "0x5" or the 'a' of "3abc".
  if (digits.empty() || digits[0] < '1' || digits[0] > '9') return std::nullopt;
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

bool blocks_by_design(const std::vector<std::string>& words) {
  if (words.empty()) return false;
  const std::string_view command = words[0];
  for (const std::string_view blocking : {"blpop", "brpop", "brpoplpush", "blmove", "blmpop",
                                          "bzpopmin", "bzpopmax", "bzmpop", "wait", "waitaof"}) {
    if (iequals(command, blocking)) return true;
  }
  if (iequals(command, "xread") || iequals(command, "xreadgroup")) {
    for (const std::string& word : words) {
      if (iequals(word, "block")) return true;
    }
  }
  return false;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace redmux::cli
