// json_quote: a string as a JSON string literal (quotes included), for the tools' and the
// examples' small JSON outputs. Header-only; no state.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace redmux::tools {

/// `text` quoted and escaped for JSON: `"`, `\` and control characters escaped; other bytes
/// (UTF-8 included) copied as they are.
inline std::string json_quote(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (const char c : text) {
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
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace redmux::tools
