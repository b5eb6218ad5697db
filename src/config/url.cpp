// The URL forms of the configuration:
//   redis://[user[:password]@]host[:port][,host[:port]…][/db][?option=value&…]
//   rediss://…   (the same, with ssl=true; valkey:// and valkeys:// are aliases)
//   unix://[user[:password]@]/path/to/socket[?db=N&option=value…]
// User, password, socket path and query keys and values are percent-decoded. Query options
// are the configuration-string options under the same names.
#include <algorithm>
#include <string>

#include "config/options.hpp"
#include "config/parser.hpp"

namespace redmux::config_internal {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%41b" → "Ab". False on a '%' not followed by two hex digits. '+' stays '+': these are
// not HTML form fields, and a '+' in a password must survive.
bool percent_decode(std::string_view text, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return false;
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return false;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return true;
}

// Never echoes the user info: it may hold the password.
Error add_user_info(Parser& parser, std::string_view user_info) {
  const std::size_t colon = user_info.find(':');
  std::string user;
  if (!percent_decode(user_info.substr(0, colon), user)) {
    return Parser::fail("malformed percent-encoding in the user name of URL");
  }
  if (!user.empty()) {
    if (Error error = parser.add_option("user", user)) return error;
  }
  if (colon == std::string_view::npos) return {};
  std::string password;
  if (!percent_decode(user_info.substr(colon + 1), password)) {
    return Parser::fail("malformed percent-encoding in the password of URL");
  }
  if (password.empty()) return {};
  return parser.add_option("password", password);
}

// One item of a URL's query, "key=value". `option`: the option it names, once known.
Error add_query_item(Parser& parser, std::string_view item, bool tls_scheme,
                     const OptionSpec*& option) {
  const std::size_t equals = item.find('=');
  std::string key;
  if (!percent_decode(item.substr(0, equals), key)) {
    return Parser::fail("malformed percent-encoding in an option name of URL");
  }
  if (key.empty()) return Parser::fail("an option in URL has a value but no name (\"=…\")");
  option = find_option(key);
  if (option == nullptr) return Parser::fail(unknown_option_message(key, "URL"));
  if (equals == std::string_view::npos) {
    return Parser::fail("option \"" + std::string(option->name) + "\" in URL has no value; write " +
                        std::string(option->name) + "=…");
  }
  std::string value;
  if (!percent_decode(item.substr(equals + 1), value)) {
    return Parser::fail("malformed percent-encoding in the value of option \"" +
                        std::string(option->name) + "\" of URL");
  }
  if (tls_scheme && option->name == "ssl") {
    // rediss:// already means ssl=true; saying so again is fine, contradicting it is not.
    bool ssl = false;
    if (parse_bool(value, ssl) && ssl) return {};
    return Parser::fail(
        "option \"ssl\" in URL contradicts its rediss:// scheme, which "
        "means ssl=true; use redis:// for a plain connection");
  }
  return parser.add_option(key, value);
}

Error add_query(Parser& parser, std::string_view query, bool tls_scheme) {
  const OptionSpec* after_secret = nullptr;  // the secret option just before, if any
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view item = query.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const OptionSpec* option = nullptr;
    if (Error error = add_query_item(parser, item, tls_scheme, option)) {
      // "password=ab&cd" reads as the password "ab" and an item "cd": what follows a secret
      // and does not parse is most likely the rest of it, so it is not shown.
      if (after_secret) {
        return after_secret_error(after_secret->name, "URL",
                                  "percent-encode a \"&\" in the value as %26");
      }
      return error;
    }
    after_secret = option && option->secret ? option : nullptr;
  }
  return {};
}

Error add_unix_socket(Parser& parser, std::string_view rest) {
  // unix://[user[:password]@]/path: user info, if any, ends at the '@' before the path.
  if (!rest.empty() && rest.front() != '/') {
    const std::size_t slash = rest.find('/');
    const std::size_t at = rest.substr(0, slash).rfind('@');
    if (at == std::string_view::npos) {
      return Parser::fail(
          "unix:// URL needs an absolute socket path, e.g. "
          "\"unix:///run/redis/redis.sock\"");
    }
    if (Error error = add_user_info(parser, rest.substr(0, at))) return error;
    rest.remove_prefix(at + 1);
  }
  std::string path;
  if (!percent_decode(rest, path)) {
    return Parser::fail("malformed percent-encoding in the socket path of URL");
  }
  if (path.size() < 2 || path.front() != '/') {
    return Parser::fail(
        "unix:// URL needs an absolute socket path, e.g. "
        "\"unix:///run/redis/redis.sock\"");
  }
  return parser.add_endpoint(path);
}

// True when an '@' comes after the host part ends (at the first '/' or '?') where none can
// belong: in the path (the database number), or in the first query item's name. User info
// holding an unencoded '/' or '?' does that (redis://u:pa/ss@host), and the host part then
// holds the start of the password — after an '@' of its own too (redis://u:p@ss/x@host).
bool looks_like_cut_user_info(std::string_view rest) {
  const std::size_t end = rest.find_first_of("/?");
  if (end == std::string_view::npos) return false;
  const std::size_t question = rest.find('?', end);
  const std::string_view path = rest.substr(
      end, question == std::string_view::npos ? std::string_view::npos : question - end);
  if (path.find('@') != std::string_view::npos) return true;
  if (question == std::string_view::npos) return false;
  const std::string_view query = rest.substr(question + 1);
  return query.substr(0, query.find_first_of("=&")).find('@') != std::string_view::npos;
}

// The same for unix://user:password@/path: the user info ends at the "@/" before the path,
// so an "@/" after the first '/' or '?' is one a password's unencoded '/' or '?' cut off.
bool looks_like_cut_unix_user_info(std::string_view rest) {
  if (rest.empty() || rest.front() == '/') return false;
  const std::size_t end = rest.find_first_of("/?");
  if (end == std::string_view::npos || rest.substr(0, end).find('@') != std::string_view::npos) {
    return false;
  }
  return rest.find("@/", end) != std::string_view::npos;
}

Error add_network(Parser& parser, std::string_view rest) {
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  const std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash);

  // The last '@' ends the user info: an unencoded '@' in a password still parses.
  const std::size_t at = authority.rfind('@');
  std::string_view hosts = authority;
  if (at != std::string_view::npos) {
    if (Error error = add_user_info(parser, authority.substr(0, at))) return error;
    hosts = authority.substr(at + 1);
  }
  if (hosts.empty()) {
    return Parser::fail("URL has no host; e.g. \"redis://localhost:6379\"");
  }
  std::size_t start = 0;
  while (start <= hosts.size()) {
    std::size_t end = hosts.find(',', start);
    if (end == std::string_view::npos) end = hosts.size();
    // Without '@', a "user:password" whose "@host" was left out reads as "host:port".
    const bool hidden = at == std::string_view::npos;
    if (Error error = parser.add_endpoint(hosts.substr(start, end - start), hidden)) return error;
    start = end + 1;
  }

  if (path.size() > 1) return parser.add_option("defaultDatabase", path.substr(1));
  return {};
}

}  // namespace

Result<Config> parse_url(std::string_view text, std::vector<std::string>* named) {
  Parser parser("URL");
  const std::size_t separator = text.find("://");
  const std::string scheme = to_lower(text.substr(0, separator));
  std::string_view rest = text.substr(separator + 3);

  const bool tls_scheme = scheme == "rediss" || scheme == "valkeys";
  const bool unix_scheme = scheme == "unix";
  if (!tls_scheme && !unix_scheme && scheme != "redis" && scheme != "valkey") {
    return Parser::fail("unsupported URL scheme \"" + scheme +
                        "://\"; use redis://, rediss://, valkey://, valkeys:// or unix://");
  }
  if (rest.find('#') != std::string_view::npos) {
    return Parser::fail("URL has a \"#\" fragment; percent-encode a \"#\" in a password as %23");
  }

  if (unix_scheme ? looks_like_cut_unix_user_info(rest) : looks_like_cut_user_info(rest)) {
    // Shown, the parts would be pieces of a password: say what to do, show none of it.
    const std::string where =
        unix_scheme ? "unix:// URL has an \"@/\" after a \"/\" or \"?\": user info holding "
                      "an unencoded \"/\" or \"?\" ends the user info early"
                    : "URL has an \"@\" after its host part: user info holding an unencoded "
                      "\"/\" or \"?\" ends the host part early";
    return Parser::fail(where +
                        "; percent-encode them in a user name or password (%2F, %3F). (The URL "
                        "is not shown: it may hold a password.)");
  }

  std::string_view query;
  if (const std::size_t question = rest.find('?'); question != std::string_view::npos) {
    query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  Error error = unix_scheme ? add_unix_socket(parser, rest) : add_network(parser, rest);
  if (error) return error;
  if (Error query_error = add_query(parser, query, tls_scheme)) return query_error;
  if (tls_scheme) parser.config().ssl = true;
  if (named) {
    *named = parser.named();
    if (tls_scheme && std::find(named->begin(), named->end(), "ssl") == named->end()) {
      named->emplace_back("ssl");
    }
  }
  return std::move(parser.config());
}

}  // namespace redmux::config_internal
