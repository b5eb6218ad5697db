// Splitting a typed command line into arguments the way redis-cli does (its sdssplitargs):
// words separated by blanks; "double quotes" understand \" \\ \n \r \t \b \a and \xHH;
// 'single quotes' understand only \'. A closing quote must be followed by a blank or the end
// of the line. Pure functions: safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redmux::cli {

/// The arguments of `line`, or nullopt when its quotes are unbalanced or a closing quote is
/// followed by something other than a blank ("Invalid argument(s)" in redis-cli).
/// Example: split_command_line(R"(SET "a b" '\x41')") → {"SET", "a b", "\\x41"}.
std::optional<std::vector<std::string>> split_command_line(std::string_view line);

/// `text` as the server reads an integer argument (its string2ll): an optional '-', then
/// decimal digits without leading zeros ("0" alone is zero), within long long; nullopt for
/// anything else ("0x5", "3abc", "07", "+1", " 1", "-0", "", an overflow).
std::optional<long long> parse_server_integer(std::string_view text);

/// Whether the command `words` waits on the server by design: a blocking command (BLPOP,
/// BZPOPMIN, BLMOVE …, XREAD/XREADGROUP with BLOCK), WAIT or WAITAOF. A long wait for its
/// reply is what was asked for, not a sign of a busy or frozen server.
bool blocks_by_design(const std::vector<std::string>& words);

/// ASCII case-insensitive equality (command names: "select" = "SELECT").
bool iequals(std::string_view a, std::string_view b);

/// `bytes` quoted the way redis-cli shows a string: "…" with \n \r \t \a \b \\ \" escaped
/// and any other non-printable byte as \xHH.
std::string quote_string(std::string_view bytes);

}  // namespace redmux::cli
