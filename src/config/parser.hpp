// The parsing state shared by the configuration-string and URL forms: the Config being
// built, which options were already given (an option given twice is an error, never "last
// one wins"), and where the text came from for error messages. Internal to src/config;
// one Parser per parse call, not shared between threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/options.hpp"
#include "redmux/config.hpp"
#include "redmux/error.hpp"

namespace redmux::config_internal {

class Parser {
 public:
  /// `where` names the source in messages: "configuration string" or "URL".
  explicit Parser(std::string_view where) : where_(where) {}

  /// Adds "host", "host:port", "[v6addr]", "[v6addr]:port" or "/unix/socket/path".
  /// Not trimmed: the string form trims its items, and a URL's spaces are part of it.
  /// `hidden`: an error does not quote `text` (a URL without "@", where it may be user info).
  Error add_endpoint(std::string_view text, bool hidden = false);

  /// Sets option `key` (case-insensitive name or alias) from `value`.
  Error add_option(std::string_view key, std::string_view value);

  Config& config() { return config_; }
  /// The names of the options given so far (OptionSpec::name).
  std::vector<std::string> named() const;
  std::string_view where() const { return where_; }

  /// An errc::invalid_config error whose message is `text`.
  static Error fail(std::string text) { return Error(errc::invalid_config, std::move(text)); }

 private:
  Config config_;
  std::string_view where_;
  std::vector<const OptionSpec*> seen_;
};

/// True when `text` starts with "<scheme>://".
bool looks_like_url(std::string_view text);

/// Parses a redis://, rediss://, valkey://, valkeys:// or unix:// URL (not yet validated).
/// `named`, when given, gets the names of the options it gives (Config::parse()).
Result<Config> parse_url(std::string_view text, std::vector<std::string>* named = nullptr);

/// `value` as the configuration string writes it: as is, or in double quotes (with \" and
/// \\ escaped) when it holds a comma or a quote or starts or ends with whitespace.
std::string quote_if_needed(std::string_view value);

/// `text` without leading and trailing spaces and tabs.
std::string_view trim(std::string_view text);

/// `value` as an error message quotes it: whole, or its first 64 bytes and its length when
/// longer, with control bytes written as \xNN.
std::string shown(std::string_view value);

/// The refusal of the item right after an unquoted secret option (`secret`) in `where`: the
/// separator ("," or "&") most likely cut the secret, so the item, which may be the rest of
/// it, is not shown. `fix` says how to write the separator in a secret.
Error after_secret_error(std::string_view secret, std::string_view where, std::string_view fix);

}  // namespace redmux::config_internal
