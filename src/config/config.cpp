// Config::parse for the configuration-string form, validation, and printing back.
// The URL form is in url.cpp; the option table in options.cpp.
#include "redmux/config.hpp"

#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

#include "config/options.hpp"
#include "config/parser.hpp"

namespace redmux {
namespace config_internal {
namespace {

constexpr std::string_view kExampleEndpoint = "e.g. \"localhost:6379\"";
// The longest Unix socket path: sockaddr_un's sun_path less its terminating NUL.
constexpr std::size_t kMaxUnixPath = sizeof(sockaddr_un{}.sun_path) - 1;
// An endpoint of a URL without "@", in place of its text: it may be user info.
constexpr std::string_view kHiddenEndpoint =
    "(not shown: a URL without \"@\" reads \"user:password\" as \"host:port\"; user info goes "
    "before \"@host\", e.g. \"redis://user:password@localhost:6379\")";

bool is_host_char(char c) {
  // Refused: whitespace and the characters that delimit the string and URL forms.
  return static_cast<unsigned char>(c) > ' ' && c != ',' && c != '/' && c != '@' && c != '?' &&
         c != '#' && c != '[' && c != ']' && c != '=' && c != 0x7f;
}

// What makes two endpoints the same: a socket path as it is, a host in any case with its port.
std::string endpoint_identity(const Endpoint& endpoint) {
  if (endpoint.is_unix()) return "/" + endpoint.unix_path;
  std::string identity = std::to_string(endpoint.port) + " ";
  for (const char c : endpoint.host) {
    identity += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return identity;
}

// How an error names `endpoint`: quoted, or (`hidden`) not at all.
std::string quoted_endpoint(std::string_view endpoint, bool hidden) {
  return hidden ? std::string(kHiddenEndpoint) : "\"" + shown(endpoint) + "\"";
}

Error check_host(std::string_view host, std::string_view endpoint, std::string_view where,
                 bool hidden = false) {
  const std::string quoted = quoted_endpoint(endpoint, hidden);
  if (host.empty()) {
    return Parser::fail("endpoint " + quoted + " in " + std::string(where) + " has no host; " +
                        std::string(kExampleEndpoint));
  }
  // ':' passes: IPv6 hosts hold it (the string form needs them bracketed, checked earlier).
  // '%' only in an IPv6 address, before its zone: a name is never percent-encoded.
  const bool stray_percent =
      host.find('%') != std::string_view::npos && host.find(':') == std::string_view::npos;
  if (!std::all_of(host.begin(), host.end(), is_host_char) || stray_percent) {
    return Parser::fail(
        (hidden ? std::string("invalid host") : "invalid host \"" + shown(host) + "\"") +
        " in endpoint " + quoted + " in " + std::string(where) +
        (stray_percent ? "; a host name is not percent-decoded: write it as it is" : ""));
  }
  constexpr std::size_t kMaxHostName = 253;  // a DNS name, dots included
  if (host.size() > kMaxHostName) {
    return Parser::fail("host " + (hidden ? std::string() : "\"" + shown(host) + "\" ") +
                        "in endpoint " + quoted + " in " + std::string(where) + " is " +
                        std::to_string(host.size()) + " bytes long; a host name has at most " +
                        std::to_string(kMaxHostName));
  }
  return {};
}

// One item of the configuration string: an endpoint, or an option's key and value.
struct Item {
  std::string_view key;  ///< empty for an endpoint
  std::string value;     ///< the option's value (unquoted), or the endpoint's text
  bool option = false;
  bool quoted = false;
};

// Reads a quoted value starting at text[at] == '"': up to the closing quote, where \" is
// a quote and \\ a backslash; then only spaces until the next comma or the end. `at`
// ends after the comma. Never echoes the value: it may be a password.
Error read_quoted(std::string_view text, std::size_t& at, std::string_view key, Item& item) {
  const std::string name(key);
  item.quoted = true;
  for (++at; at < text.size(); ++at) {
    const char c = text[at];
    if (c == '\\' && at + 1 < text.size() && (text[at + 1] == '"' || text[at + 1] == '\\')) {
      item.value += text[++at];
    } else if (c == '"') {
      ++at;
      while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
      if (at < text.size() && text[at] != ',') {
        return Parser::fail("option \"" + name +
                            "\" in configuration string has text after its closing quote; "
                            "a quoted value ends at the quote, e.g. " +
                            name + "=\"a,b\"");
      }
      ++at;
      return {};
    } else {
      item.value += c;
    }
  }
  return Parser::fail("option \"" + name +
                      "\" in configuration string has a quoted value with no closing quote "
                      "(the value is not shown)");
}

// Splits the string into items. A value runs from the first '=' to the next comma, or is
// quoted ("…") to hold commas, surrounding spaces or quotes.
Result<std::vector<Item>> split_items(std::string_view text) {
  std::vector<Item> items;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::size_t equals = text.substr(at, comma - at).find('=');
    Item item;
    if (equals == std::string_view::npos) {
      item.value = std::string(trim(text.substr(at, comma - at)));
      at = comma + 1;
      if (!item.value.empty()) items.push_back(std::move(item));
      continue;
    }
    item.option = true;
    item.key = trim(text.substr(at, equals));
    std::size_t value_at = at + equals + 1;
    while (value_at < text.size() && (text[value_at] == ' ' || text[value_at] == '\t')) {
      ++value_at;
    }
    if (value_at < text.size() && text[value_at] == '"') {
      at = value_at;
      if (Error error = read_quoted(text, at, item.key, item)) return error;
    } else {
      item.value = std::string(trim(text.substr(value_at, comma - value_at)));
      at = comma + 1;
    }
    items.push_back(std::move(item));
  }
  return items;
}

Result<Config> parse_string(std::string_view text, std::vector<std::string>* named) {
  Parser parser("configuration string");
  Result<std::vector<Item>> items = split_items(text);
  if (!items) return std::move(items).error();
  const OptionSpec* after_secret = nullptr;  // the unquoted secret option just before
  for (const Item& item : *items) {
    const OptionSpec* option = item.option ? find_option(item.key) : nullptr;
    // "password=ab,cd" reads as the password "ab" and an endpoint "cd": the text after an
    // unquoted secret that is not a valid option is most likely the rest of the secret, so
    // it is refused, and never printed.
    const OptionSpec* const secret = after_secret;
    const auto refuse_after_secret = [secret] {
      return after_secret_error(
          secret->name, "configuration string",
          "if the value contains a comma, quote it: " + std::string(secret->name) + "=\"…\"");
    };
    if (secret && (!item.option || !option)) return refuse_after_secret();
    after_secret = option && option->secret && !item.quoted ? option : nullptr;
    Error error;
    if (!item.option) {
      // A bare option name ("ssl") is a forgotten value, not a host called "ssl".
      if (const OptionSpec* bare = find_option(item.value)) {
        return Parser::fail("option \"" + std::string(bare->name) +
                            "\" in configuration string has no value; write " +
                            std::string(bare->name) + "=…");
      }
      error = parser.add_endpoint(item.value);
    } else {
      if (item.key.empty()) {
        return Parser::fail("an option in configuration string has a value but no name (\"=…\")");
      }
      error = parser.add_option(item.key, item.value);
    }
    if (error && secret) return refuse_after_secret();  // "password=ab,db=cd": "cd" not shown
    if (error) return error;
  }
  if (named) *named = parser.named();
  return std::move(parser.config());
}

std::string value_problem(const OptionSpec& option, const Config& config, std::string_view problem,
                          std::string_view where) {
  std::string message = "invalid value ";
  if (!option.secret) message += "\"" + shown(option.print(config)) + "\" ";
  message += "for option \"" + std::string(option.name) + "\" in " + std::string(where) + ": " +
             std::string(problem);
  return message;
}

Result<void> validate_config(const Config& config, std::string_view where) {
  const std::string in = " in " + std::string(where);
  if (config.endpoints.empty()) {
    return Parser::fail("no endpoint" + in + "; give at least one host:port, " +
                        std::string(kExampleEndpoint));
  }
  std::unordered_set<std::string> listed;  // a set, not a scan: 20,000 endpoints took 1.4 s
  for (const Endpoint& endpoint : config.endpoints) {
    const std::string named = endpoint.to_string();
    if (endpoint.is_unix()) {
      if (!endpoint.host.empty()) {
        return Parser::fail("endpoint \"" + shown(named) + "\"" + in +
                            " has both a host and a Unix socket path; set one");
      }
      // The string form splits on ',', reads '=' as an option and trims spaces; the system
      // takes a path of up to 107 bytes, NUL-terminated (sockaddr_un).
      const std::string& path = endpoint.unix_path;
      const bool control = std::any_of(path.begin(), path.end(), [](char c) {
        return static_cast<unsigned char>(c) < ' ' || c == 0x7f;
      });
      if (path.front() != '/' || path.find_first_of(",=") != std::string::npos ||
          trim(path) != path || control) {
        return Parser::fail("invalid Unix socket path \"" + shown(path) + "\"" + in +
                            "; expected an absolute path without commas, \"=\", control "
                            "characters or surrounding spaces");
      }
      if (path.size() > kMaxUnixPath) {
        return Parser::fail("Unix socket path \"" + shown(path) + "\"" + in + " is " +
                            std::to_string(path.size()) + " bytes long; the system takes at most " +
                            std::to_string(kMaxUnixPath) +
                            " (sockaddr_un): use a shorter path, e.g. a symbolic link to it");
      }
    } else {
      if (endpoint.host.find('@') != std::string::npos) {
        // "user:password@host" set in code: what comes before "@" may be a password.
        return Parser::fail("endpoint" + in +
                            " has a host containing \"@\" (not shown: what comes before it may "
                            "be a password); set Config::user and Config::password instead");
      }
      if (Error error = check_host(endpoint.host, named, where)) return error;
      if (endpoint.port == 0) {
        return Parser::fail("endpoint \"" + shown(named) + "\"" + in +
                            " has port 0; expected 1 … 65535");
      }
    }
    if (!listed.insert(endpoint_identity(endpoint)).second) {
      return Parser::fail("endpoint \"" + shown(named) + "\" is listed twice" + in);
    }
  }

  const Config defaults;
  for (const OptionSpec& option : option_table()) {
    const std::string problem = option.check(config);
    if (!problem.empty()) return Parser::fail(value_problem(option, config, problem, where));
    // TLS settings without TLS would be silently ignored: refuse them instead.
    if (option.name.size() > 3 && option.name.starts_with("ssl") && !config.ssl &&
        option.print(config) != option.print(defaults)) {
      return Parser::fail("option \"" + std::string(option.name) + "\"" + in +
                          " needs ssl=true (or a rediss:// URL)");
    }
  }

  // The options of a user/password pair that are set, as the subject of the sentence:
  // "option \"password\" … is" or "options \"user\" and \"password\" … are".
  const auto set_options = [&in](const std::string& user, const std::string& password,
                                 std::string_view user_name, std::string_view password_name) {
    if (!user.empty() && !password.empty()) {
      return "options \"" + std::string(user_name) + "\" and \"" + std::string(password_name) +
             "\"" + in + " are";
    }
    return "option \"" + std::string(user.empty() ? password_name : user_name) + "\"" + in + " is";
  };
  if (config.credentials && (!config.user.empty() || !config.password.empty())) {
    return Parser::fail(set_options(config.user, config.password, "user", "password") +
                        " set together with a credential provider (Config::credentials); "
                        "the provider gives the user and password: set one or the other");
  }
  if (config.sentinel_credentials &&
      (!config.sentinel_user.empty() || !config.sentinel_password.empty())) {
    return Parser::fail(set_options(config.sentinel_user, config.sentinel_password, "sentinelUser",
                                    "sentinelPassword") +
                        " set together with a Sentinel credential provider "
                        "(Config::sentinel_credentials): set one or the other");
  }
  // After the provider conflicts: with a provider, user= is the mistake, not the missing
  // password.
  if (!config.user.empty() && config.password.empty()) {
    return Parser::fail("option \"user\"" + in +
                        " is set without \"password\"; ACL authentication needs both (a nopass "
                        "user accepts any password)");
  }
  if (config.sentinel_credentials && config.service_name.empty()) {
    return Parser::fail(std::string("Config::sentinel_credentials") + in +
                        " needs \"serviceName\" (Sentinel credentials are used only with "
                        "Sentinel)");
  }
  if (!config.sentinel_user.empty() && config.sentinel_password.empty()) {
    return Parser::fail("option \"sentinelUser\"" + in +
                        " is set without \"sentinelPassword\"; ACL authentication needs both");
  }
  if (config.service_name.empty()) {
    for (const char* name : {"sentinelUser", "sentinelPassword"}) {
      const OptionSpec* option = find_option(name);
      if (option->print(config) != option->print(defaults)) {
        return Parser::fail("option \"" + std::string(name) + "\"" + in +
                            " needs \"serviceName\" (Sentinel credentials are used only with "
                            "Sentinel)");
      }
    }
  }
  if (config.ssl_cert.empty() != config.ssl_key.empty()) {
    return Parser::fail(std::string("option \"") +
                        (config.ssl_cert.empty() ? "sslKey" : "sslCert") + "\"" + in + " needs \"" +
                        (config.ssl_cert.empty() ? "sslCert" : "sslKey") +
                        "\" too: a client certificate goes with its private key");
  }
  if (config.client_cache && config.protocol == Protocol::Resp2) {
    // RESP2 has no pushes: invalidations would need a second connection (REDIRECT) whose
    // loss goes unseen between pings. Refused rather than served possibly stale.
    return Parser::fail("option \"clientCache\"" + in +
                        " needs protocol=resp3: invalidations arrive as RESP3 pushes on the "
                        "connection that read the keys (docs/caching.md)");
  }
  if (!config.client_cache) {
    for (const char* name : {"clientCacheBytes", "clientCacheMaxTtl", "clientCacheMode",
                             "clientCachePrefixes", "clientCacheReads"}) {
      const OptionSpec* option = find_option(name);
      if (option->print(config) != option->print(defaults)) {
        return Parser::fail("option \"" + std::string(name) + "\"" + in +
                            " needs clientCache=true");
      }
    }
  }
  if (!config.client_cache_prefixes.empty() &&
      config.client_cache_mode != ClientCacheMode::Broadcast) {
    return Parser::fail("option \"clientCachePrefixes\"" + in +
                        " needs clientCacheMode=bcast (prefixes are what BCAST tracks)");
  }
  if (config.reconnect_base_delay > config.reconnect_max_delay) {
    return Parser::fail(
        "reconnectBaseDelay=" + std::to_string(config.reconnect_base_delay.count()) +
        " is greater than reconnectMaxDelay=" + std::to_string(config.reconnect_max_delay.count()) +
        in);
  }
  return {};
}

}  // namespace

// A 5 MB value must not make a 5 MB message, and a NUL or an escape sequence printed raw
// would cut or garble the message on a terminal or in a log.
std::string shown(std::string_view value) {
  constexpr std::size_t kShown = 64;
  std::string text;
  for (const char c : value.substr(0, kShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= ' ' && byte != 0x7f) {
      text += c;
      continue;
    }
    constexpr std::string_view kHex = "0123456789abcdef";
    text += "\\x";
    text += kHex[byte >> 4];
    text += kHex[byte & 0xf];
  }
  if (value.size() > kShown) text += "… (" + std::to_string(value.size()) + " bytes)";
  return text;
}

Error after_secret_error(std::string_view secret, std::string_view where, std::string_view fix) {
  return Parser::fail("the item after option \"" + std::string(secret) + "\" in " +
                      std::string(where) + " is not a valid option (name=value); " +
                      std::string(fix) + " (the item is not shown: it may be part of the secret)");
}

std::string quote_if_needed(std::string_view value) {
  const bool plain = value.find_first_of(",\"") == std::string_view::npos &&
                     (value.empty() || (value.front() != ' ' && value.front() != '\t' &&
                                        value.back() != ' ' && value.back() != '\t'));
  if (plain) return std::string(value);
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + '"';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool looks_like_url(std::string_view text) {
  const std::size_t colon = text.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view scheme = text.substr(0, colon);
  const auto scheme_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '-' || c == '.';
  };
  return std::all_of(scheme.begin(), scheme.end(), scheme_char);
}

Error Parser::add_endpoint(std::string_view text, bool hidden) {
  const std::string in = " in " + std::string(where_);
  const std::string quoted = quoted_endpoint(text, hidden);
  if (text.empty()) return fail("empty endpoint" + in + "; " + std::string(kExampleEndpoint));
  Endpoint endpoint;
  if (text.front() == '/') {
    endpoint.unix_path = std::string(text);
    config_.endpoints.push_back(std::move(endpoint));
    return {};
  }
  if (text.find('@') != std::string_view::npos) {
    // "user:password@host:port" without its "redis://": what comes before "@" is user info.
    return fail("endpoint" + in +
                " contains \"@\" (not shown: what comes before it may be a password); an "
                "endpoint is \"host:port\": give user= and password= as options, or write a "
                "URL, e.g. \"redis://user:password@localhost:6379\"");
  }

  std::string_view host = text;
  std::string_view port;
  bool has_port = false;
  if (text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return fail("endpoint " + quoted + in + " has no closing \"]\"");
    }
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    // An IPv6 address, perhaps with a zone ("fe80::1%eth0"): checked here, not found out as
    // a host name nobody can resolve.
    const std::string address(host.substr(0, host.find('%')));
    in6_addr parsed{};
    if (host.find(':') == std::string_view::npos ||
        ::inet_pton(AF_INET6, address.c_str(), &parsed) != 1) {
      return fail("endpoint " + quoted + in + ": brackets are only for IPv6 addresses");
    }
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return fail("endpoint " + quoted + in + ": expected \":port\" after \"]\"");
      }
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    const std::size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
      if (text.find(':', colon + 1) != std::string_view::npos) {
        return fail("endpoint " + quoted + in +
                    ": an IPv6 address must be in brackets, e.g. \"[::1]:6379\"");
      }
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      has_port = true;
    }
  }
  if (Error error = check_host(host, text, where_, hidden)) return error;
  if (has_port) {
    unsigned long long number = 0;
    if (!parse_unsigned(port, number) || number == 0 || number > 65535) {
      if (hidden) return fail("invalid port in endpoint " + quoted + in + "; expected 1 … 65535");
      if (!all_digits(port)) {
        // Not a number: perhaps a password written as "user:password". Not quoted.
        return fail("invalid port in endpoint \"" + shown(host) + ":…\"" + in +
                    ": not a number (not shown, in case it is a password; a password goes in "
                    "password=); expected 1 … 65535");
      }
      return fail("invalid port \"" + shown(port) + "\" in endpoint \"" + shown(text) + "\"" + in +
                  "; expected 1 … 65535");
    }
    endpoint.port = static_cast<std::uint16_t>(number);
  }
  endpoint.host = std::string(host);
  config_.endpoints.push_back(std::move(endpoint));
  return {};
}

std::vector<std::string> Parser::named() const {
  std::vector<std::string> names;
  names.reserve(seen_.size());
  for (const OptionSpec* option : seen_) names.emplace_back(option->name);
  return names;
}

Error Parser::add_option(std::string_view key, std::string_view value) {
  const OptionSpec* option = find_option(key);
  if (option == nullptr) return fail(unknown_option_message(key, where_));
  if (std::find(seen_.begin(), seen_.end(), option) != seen_.end()) {
    return fail("option \"" + std::string(option->name) + "\" is given twice in " +
                std::string(where_));
  }
  seen_.push_back(option);
  const std::string problem = option->set(config_, value);
  if (problem.empty()) return {};
  std::string message = "invalid value ";
  if (!option->secret) message += "\"" + shown(value) + "\" ";
  message +=
      "for option \"" + std::string(option->name) + "\" in " + std::string(where_) + ": " + problem;
  return fail(std::move(message));
}

}  // namespace config_internal

std::string Endpoint::to_string() const {
  if (is_unix()) return unix_path;
  const std::string port_text = std::to_string(port);
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + port_text;
  return host + ":" + port_text;
}

Result<Config> Config::parse(std::string_view text) {
  std::vector<std::string> named;
  return parse(text, named);
}

Result<Config> Config::parse(std::string_view text, std::vector<std::string>& named) {
  using namespace config_internal;
  named.clear();
  text = trim(text);
  if (text.empty()) {
    return Parser::fail("empty configuration string; give at least one endpoint, " +
                        std::string(kExampleEndpoint));
  }
  const bool url = looks_like_url(text);
  if (!url) {
    // "redis:/h" or "unix:/run/redis.sock" would read as host "redis" with a bad port. (A
    // host named like a scheme, "redis:6379", is fine: a port never starts with '/'.)
    const std::size_t colon = text.find(':');
    if (colon != std::string_view::npos && colon + 1 < text.size() && text[colon + 1] == '/') {
      const std::string scheme = to_lower(text.substr(0, colon));
      for (const std::string_view known : {"redis", "rediss", "valkey", "valkeys", "unix"}) {
        if (scheme != known) continue;
        return Parser::fail("configuration string starts with \"" + scheme +
                            ":/\": a URL has \"//\" after its scheme, e.g. \"" + scheme +
                            (scheme == "unix" ? ":///run/redis/redis.sock" : "://localhost:6379") +
                            "\" (the rest is not shown: it may hold a password)");
      }
    }
  }
  Result<Config> parsed = url ? parse_url(text, &named) : parse_string(text, &named);
  if (!parsed) return parsed;
  if (Result<void> valid = validate_config(*parsed, url ? "URL" : "configuration string"); !valid) {
    return std::move(valid).error();
  }
  return parsed;
}

Config Config::from_string(std::string_view text) {
  Result<Config> parsed = parse(text);
  if (!parsed) parsed.error().raise();
  return std::move(*parsed);
}

Result<void> Config::validate() const {
  return config_internal::validate_config(*this, "configuration");
}

std::string Config::to_string() const {
  std::string text;
  for (const Endpoint& endpoint : endpoints) {
    if (!text.empty()) text += ',';
    text += endpoint.to_string();
  }
  const Config defaults;
  for (const config_internal::OptionSpec& option : config_internal::option_table()) {
    std::string value = option.print(*this);
    if (value == option.print(defaults)) continue;
    if (!text.empty()) text += ',';
    text.append(option.name).append("=").append(config_internal::quote_if_needed(value));
  }
  return text;
}

}  // namespace redmux
