#include "conn/handshake.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <vector>

#include "redmux/arg.hpp"
#include "redmux/version.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) noexcept {
  return text.substr(0, prefix.size()) == prefix;
}

// Skips the subtree at `i` (pre-order), returning the index just past it.
std::size_t skip(NodeSpan nodes, std::size_t i) {
  std::size_t pending = 1;
  while (pending > 0 && i < nodes.size()) {
    const Node& n = nodes[i++];
    --pending;
    if (n.type == ReplyType::Map || n.type == ReplyType::Attribute) {
      pending += 2 * n.size;
    } else if (n.type == ReplyType::Array || n.type == ReplyType::Set ||
               n.type == ReplyType::Push) {
      pending += n.size;
    }
  }
  return i;
}

std::string_view info_field(std::string_view text, std::string_view field) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > field.size() && starts_with(line, field) && line[field.size()] == ':') {
      return line.substr(field.size() + 1);
    }
    pos = end + 1;
  }
  return {};
}

}  // namespace

bool sends_redirect(const ServerIdentity& server) noexcept {
  if (server.product != "valkey" || server.mode != "standalone") return false;
  int major = 0;
  const std::string_view version = server.version;
  const auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), major);
  return ec == std::errc() && end != version.data() && major >= 8;
}

bool is_auth_error(std::string_view message) noexcept {
  return starts_with(message, "WRONGPASS") || starts_with(message, "NOAUTH") ||
         starts_with(message, "NOPERM") || message.find("invalid password") != message.npos ||
         message.find("invalid username-password") != message.npos ||
         message.find("no password is set") != message.npos;
}

Handshake::Handshake(const Config& config, std::string endpoint, bool track,
                     Credentials credentials)
    : config_(config),
      endpoint_(std::move(endpoint)),
      credentials_(std::move(credentials)),
      track_(track && config.client_cache) {}

void Handshake::queue(std::string& out, Expect what, std::initializer_list<std::string_view> args) {
  std::vector<Arg> encoded(args.begin(), args.end());
  resp::encode_command(out, encoded);
  expected_.push_back(what);
}

void Handshake::begin(std::string& out) {
  std::vector<Arg> hello = {Arg("HELLO"), Arg(config_.protocol == Protocol::Resp3 ? "3" : "2")};
  // A user with an empty password (a provider's: the configuration refuses it) authenticates
  // as that user, which a nopass user accepts, not silently as "default".
  if (!credentials_.password.empty() || !credentials_.user.empty()) {
    hello.insert(hello.end(), {Arg("AUTH"),
                               Arg(credentials_.user.empty() ? std::string_view("default")
                                                             : std::string_view(credentials_.user)),
                               Arg(credentials_.password)});
  }
  if (!config_.name.empty()) hello.insert(hello.end(), {Arg("SETNAME"), Arg(config_.name)});
  resp::encode_command(out, hello);
  expected_.push_back(Expect::Hello);
  identity_.protocol = config_.protocol == Protocol::Resp3 ? 3 : 2;
  // Always, database 0 too: a server that refuses SELECT (an ACL without +select, a proxy)
  // says so here, before a caller's command for another database would follow a refused
  // SELECT into the wrong database (MuxCore::check_database() refuses those).
  queue(out, Expect::Select, {"SELECT", std::to_string(config_.default_database)});
  queue(out, Expect::SetInfo, {"CLIENT", "SETINFO", "LIB-NAME", "redmux"});
  queue(out, Expect::SetInfo, {"CLIENT", "SETINFO", "LIB-VER", kVersion});
  queue(out, Expect::Info, {"INFO", "server"});
  queue(out, Expect::Databases, {"CONFIG", "GET", "databases"});
  queue(out, Expect::Persistence, {"INFO", "persistence"});
  if (track_) {
    // Before any caller's command: every read of this session is tracked from its start.
    std::vector<Arg> tracking = {Arg("CLIENT"), Arg("TRACKING"), Arg("ON")};
    if (config_.client_cache_mode == ClientCacheMode::Broadcast) {
      tracking.emplace_back("BCAST");
      std::string_view prefixes = config_.client_cache_prefixes;
      while (!prefixes.empty()) {
        const std::size_t end = std::min(prefixes.find(' '), prefixes.size());
        if (end > 0) {
          tracking.emplace_back("PREFIX");
          tracking.emplace_back(prefixes.substr(0, end));
        }
        prefixes.remove_prefix(std::min(end + 1, prefixes.size()));
      }
    } else if (config_.client_cache_mode == ClientCacheMode::OptIn) {
      tracking.emplace_back("OPTIN");
    }
    resp::encode_command(out, tracking);
    expected_.push_back(Expect::Tracking);
  }
}

void Handshake::begin_resp2(std::string& out) {
  identity_.protocol = 2;
  if (!credentials_.password.empty() || !credentials_.user.empty()) {
    if (credentials_.user.empty()) {
      queue(out, Expect::Auth, {"AUTH", credentials_.password});
    } else {
      queue(out, Expect::Auth, {"AUTH", credentials_.user, credentials_.password});
    }
  }
  if (!config_.name.empty()) queue(out, Expect::SetName, {"CLIENT", "SETNAME", config_.name});
  if (config_.default_database != 0) {
    const std::string db = std::to_string(config_.default_database);
    queue(out, Expect::Select, {"SELECT", db});
  }
  queue(out, Expect::Info, {"INFO", "server"});
  queue(out, Expect::Databases, {"CONFIG", "GET", "databases"});
  queue(out, Expect::Persistence, {"INFO", "persistence"});
  // A server without HELLO speaks RESP2 only: no pushes, so no tracking on this connection.
  tracking_ = false;
  if (track_) tracking_refusal_ = endpoint_ + " speaks RESP2 only (no HELLO)";
}

void Handshake::probe_loading(std::string& out) {
  queue(out, Expect::Persistence, {"INFO", "persistence"});
}

std::string_view Handshake::check_hint() const noexcept {
  return config_.credentials ? " (check what the credential provider returns)"
                             : " (check user= and password=)";
}

Handshake::Step Handshake::fail(errc code, std::string why, bool for_good) {
  error_ = Error(code, std::move(why));
  refused_for_good_ = for_good || (code == errc::authentication_failed && !config_.credentials);
  return Step::Failed;
}

void Handshake::read_hello(NodeSpan reply) {
  // HELLO answers a map (RESP3) or a flat array of field, value (RESP2).
  if (reply.empty()) return;
  std::size_t i = 1;
  while (i < reply.size()) {
    const Node& key = reply[i];
    const std::size_t value_at = skip(reply, i);
    if (value_at >= reply.size()) break;
    const Node& value = reply[value_at];
    if (key.value == "server") identity_.product = std::string(value.value);
    if (key.value == "version") identity_.version = std::string(value.value);
    if (key.value == "mode") identity_.mode = std::string(value.value);
    if (key.value == "role") identity_.role = std::string(value.value);
    if (key.value == "availability_zone") identity_.availability_zone = std::string(value.value);
    if (key.value == "id") {
      std::from_chars(value.value.data(), value.value.data() + value.value.size(),
                      identity_.connection_id);
    }
    if (key.value == "proto") {
      std::from_chars(value.value.data(), value.value.data() + value.value.size(),
                      identity_.protocol);
    }
    i = skip(reply, value_at);
  }
}

void Handshake::read_info(std::string_view text) {
  // Valkey reports a Redis-compatible redis_version too: its own version wins.
  if (auto valkey = info_field(text, "valkey_version"); !valkey.empty()) {
    identity_.product = "valkey";
    identity_.version = std::string(valkey);
  } else if (auto name = info_field(text, "server_name"); !name.empty()) {
    identity_.product = std::string(name);
  }
  if (identity_.product.empty()) identity_.product = "redis";
  if (identity_.version.empty()) identity_.version = std::string(info_field(text, "redis_version"));
  // Valkey 8 says server_mode (redis_mode only with extended-redis-compatibility on).
  std::string_view mode = info_field(text, "redis_mode");
  if (mode.empty()) mode = info_field(text, "server_mode");
  if (!mode.empty()) identity_.mode = std::string(mode);
  if (auto zone = info_field(text, "availability_zone"); !zone.empty()) {
    identity_.availability_zone = std::string(zone);
  }
}

Handshake::Step Handshake::on_reply(NodeSpan reply, std::string& out) {
  if (next_ >= expected_.size()) return fail(errc::protocol_error, "unexpected handshake reply");
  const Expect what = expected_[next_++];
  const bool error = is_error_reply(reply);
  const std::string_view text = reply.empty() ? std::string_view() : reply[0].value;
  switch (what) {
    case Expect::Hello:
      if (error) {
        if (is_auth_error(text)) {
          return fail(
              errc::authentication_failed,
              "authentication to " + endpoint_ + " failed" +
                  (credentials_.user.empty() ? "" : " for user \"" + credentials_.user + "\"") +
                  ": " + std::string(text) + std::string(check_hint()));
        }
        if (starts_with(text, "NOPROTO") && config_.protocol == Protocol::Resp3) {
          return fail(errc::connection_failed, endpoint_ + " does not speak RESP3 (" +
                                                   std::string(text) + "); use protocol=resp2");
        }
        // Before Redis 6 there is no HELLO: do it the RESP2 way once round one is answered.
        hello_unknown_ = true;
        refusal_ = std::string(text);
      } else {
        read_hello(reply);
      }
      break;
    case Expect::Auth:
      if (error) {
        return fail(
            errc::authentication_failed,
            "authentication to " + endpoint_ + " failed" +
                (credentials_.user.empty() ? "" : " for user \"" + credentials_.user + "\"") +
                ": " + std::string(text) + std::string(check_hint()));
      }
      break;
    case Expect::SetName:
      if (error) {
        return fail(errc::connection_failed,
                    "CLIENT SETNAME on " + endpoint_ + " failed: " + std::string(text));
      }
      break;
    case Expect::Select:
      if (!error) database_ = config_.default_database;
      if (error && !hello_unknown_) {
        if (starts_with(text, "BUSY")) break;  // a script runs: the connection stays on 0
        if (config_.default_database == 0) {
          // Database 0 is where a connection starts anyway: it works, on database 0 only.
          // (A loading or busy server answers SELECT once it can: not a refusal.)
          if (!starts_with(text, "LOADING") && !starts_with(text, "BUSY")) {
            identity_.select_refusal = std::string(text);
          }
          break;
        }
        return fail(errc::connection_failed,
                    "SELECT " + std::to_string(config_.default_database) + " on " + endpoint_ +
                        " failed: " + std::string(text) + " (check defaultDatabase=)",
                    /*for_good=*/!starts_with(text, "LOADING"));
      }
      break;
    case Expect::SetInfo:
      break;  // CLIENT SETINFO is Redis 7.2+: older servers refuse it, which is fine
    case Expect::Info:
      if (!error && !reply.empty()) read_info(reply[0].value);
      // READONLY first, CAPA only once it is accepted: a replica that redirects a client
      // without READONLY would send this connection's replica reads to the primary.
      if (want_redirect_ && sends_redirect(identity_)) queue(out, Expect::ReadOnly, {"READONLY"});
      break;
    case Expect::ReadOnly:
      if (!error) queue(out, Expect::Capa, {"CLIENT", "CAPA", "redirect"});
      break;
    case Expect::Capa:
      redirects_ = !error;
      break;
    case Expect::Databases:
      // ["databases", "16"] as a map (RESP3) or a flat array (RESP2).
      if (!error && reply.size() == 3) {
        const std::string_view count = reply[2].value;
        std::from_chars(count.data(), count.data() + count.size(), identity_.databases);
      }
      if (identity_.mode == "cluster") identity_.databases = 1;
      break;
    case Expect::Persistence:
      // A server loading its dataset answers most commands with -LOADING: wait it out.
      loading_ = !error && !reply.empty() && info_field(reply[0].value, "loading") == "1";
      break;
    case Expect::Tracking:
      // Refused (an ACL, a server without tracking): the connection works, uncached.
      tracking_ = !error && identity_.protocol == 3;
      tracking_refusal_ = tracking_
                              ? std::string()
                              : "CLIENT TRACKING on " + endpoint_ +
                                    " failed: " + std::string(text.empty() ? "no RESP3" : text);
      break;
  }
  if (next_ < expected_.size()) return Step::Continue;
  if (hello_unknown_) {
    hello_unknown_ = false;
    begin_resp2(out);
    return Step::Continue;
  }
  return loading_ ? Step::Loading : Step::Done;
}

}  // namespace redmux::detail
