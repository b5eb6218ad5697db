// The option table behind Config: one row per configuration-string option, with the code
// that parses its value, prints it back and range-checks it. Both the string parser and
// the URL parser look options up here, so an option exists in both forms or in neither.
// Internal to src/config; no state, safe from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "redmux/config.hpp"

namespace redmux::config_internal {

/// One option. `set` and `check` return an empty string on success, otherwise the problem
/// ("expected a whole number", "out of range; expected 1 … 65535"); the caller adds the
/// option's name and where it came from, and echoes the value only when !secret.
struct OptionSpec {
  std::string_view name;   ///< canonical camelCase name, as printed by to_string()
  std::string_view alias;  ///< a second accepted name ("db"), or empty
  bool secret;             ///< value is a password: never echoed, printed masked
  std::string (*set)(Config& config, std::string_view value);
  std::string (*print)(const Config& config);
  std::string (*check)(const Config& config);
};

/// Every option, in the order of docs/configuration.md (to_string() prints in this order).
std::span<const OptionSpec> option_table();

/// The option called `key` (its name or alias, compared case-insensitively), or nullptr.
const OptionSpec* find_option(std::string_view key);

/// The message for an unknown key: names it, suggests the closest valid name when one is
/// close, and lists every valid name. `where` is "configuration string" or "URL".
std::string unknown_option_message(std::string_view key, std::string_view where);

/// Parses a boolean: true/false, yes/no, 1/0, case-insensitive.
bool parse_bool(std::string_view text, bool& out);

/// Parses a decimal number with no sign; false on anything else or on overflow.
bool parse_unsigned(std::string_view text, unsigned long long& out);

/// True when `text` is one or more of 0-9 and nothing else.
bool all_digits(std::string_view text);

/// How many of 0-9 `text` starts with.
std::size_t leading_digits(std::string_view text);

/// ASCII lower-case copy.
std::string to_lower(std::string_view text);

/// True when a and b are equal ignoring ASCII case.
bool iequals(std::string_view a, std::string_view b);

}  // namespace redmux::config_internal
