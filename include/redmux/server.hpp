// Server: a handle on one server the multiplexer talks to (StackExchange.Redis's IServer),
// for the commands that are about that server rather than about keys: INFO, CONFIG GET,
// CLIENT LIST, DBSIZE, a SCAN of its keys, or any command through execute()/command<T>().
// Take the list from Multiplexer::servers() — the standalone server, primaries and
// replicas, or every Redis Cluster node, each with its role — and a handle from
// Multiplexer::server(endpoint).
//
//   for (const redmux::ServerEndpoint& s : mux->servers()) {
//     redmux::Server server = mux->server(s.endpoint);
//     std::cout << s.to_string() << ": " << server.dbsize().get() << " keys\n";
//   }
//
// A command sent through a Server runs on the multiplexer's interactive connection to that
// server, in order with the other commands on it. It is never routed elsewhere: in a Redis
// Cluster a command for a key the node does not serve gets the node's MOVED error, which is
// not followed. The same gates as Database apply: admin commands (CONFIG, KEYS, FLUSHALL …)
// need allowAdmin=true; connection-state commands (SELECT, MULTI, SUBSCRIBE …) and blocking
// commands are refused. SCRIPT KILL and FUNCTION KILL go to this server on a connection of
// their own (on the shared one they would wait behind a script this multiplexer sent).
// Commands go to the default database (defaultDatabase; 0 in a cluster).
//
// Ownership and threads: a Server is a cheap value (a shared reference to the multiplexer's
// core and the endpoint); copy it, keep it, use it from any thread. After
// Multiplexer::close() its commands fail with ConnectionError (errc::shut_down).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/arg.hpp"
#include "redmux/commands/keys.hpp"
#include "redmux/commands/server.hpp"
#include "redmux/commands/sink.hpp"
#include "redmux/config.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"
#include "redmux/scan.hpp"

namespace redmux {

/// What a server is, as the multiplexer knows it now.
enum class ServerRole : unsigned char {
  Primary,  ///< takes writes (a standalone server, a primary, a cluster node serving slots)
  Replica,  ///< a replica of a primary
  Unknown,  ///< not connected (yet, or any more): its role is not known
};
/// "primary", "replica", "unknown".
std::string_view to_string(ServerRole role) noexcept;

/// One server the multiplexer knows, as Multiplexer::servers() lists it.
struct ServerEndpoint {
  Endpoint endpoint;
  ServerRole role = ServerRole::Unknown;
  bool connected = false;     ///< its interactive connection is ready now
  bool cluster_node = false;  ///< a node of a Redis Cluster (from the slot map)
  /// "127.0.0.1:7000 primary (cluster node, connected)".
  std::string to_string() const;
};

namespace detail {
class MuxCore;
/// Sends one command on the interactive connection to `endpoint` (server.cpp). `state` may
/// be null (fire-and-forget). Returns the refusal, if the command was refused before sending.
Error submit_to_server(MuxCore& core, const Endpoint& endpoint, const CallOptions& options,
                       std::span<const Arg> args, CommandState* state);
/// The server's entry in Multiplexer::servers() now; role Unknown and connected false when
/// the multiplexer no longer knows it.
ServerEndpoint describe_server(MuxCore& core, const Endpoint& endpoint);
}  // namespace detail

class Server : public ServerCommands<Server>, public KeyCommands<Server> {
 public:
  /// An unusable Server (valid() is false); take real ones from Multiplexer::server().
  Server() = default;

  bool valid() const noexcept { return core_ != nullptr; }
  /// The server this handle sends to.
  const Endpoint& endpoint() const noexcept { return endpoint_; }
  /// Its role and connection state now (they change with failovers and reconnects).
  ServerEndpoint describe() const { return detail::describe_server(*core_, endpoint_); }

  /// The sink every command of the handle uses: sends on the connection to endpoint().
  /// With Flags::FireAndForget the future is complete at once, or failed when refused.
  template <class T>
  Future<T> send(const CallOptions& options, std::span<const Arg> args) {
    return detail::send_through<T>(options, [&](detail::CommandState* state) {
      return detail::submit_to_server(*core_, endpoint_, options, args, state);
    });
  }

  /// The configuration parameters matching `pattern` ("maxmemory*", "*"), as name/value
  /// pairs. CONFIG GET (an admin command: needs allowAdmin=true).
  Future<std::vector<std::pair<std::string, std::string>>> config_get(std::string_view pattern,
                                                                      CallOptions options = {}) {
    return command<std::vector<std::pair<std::string, std::string>>>(options, "CONFIG", "GET",
                                                                     pattern);
  }

  /// Every key of this server matching `pattern`, listed lazily with SCAN on this server
  /// only (in a cluster: the keys of this node's slots), `page_size` keys a round trip.
  /// Iterate from your own thread (each page is a blocking get()).
  ///   for (const std::string& key : server.keys("session:*")) …
  auto keys(std::string_view pattern = "*", long long page_size = 250) {
    ScanOptions options;
    options.pattern = pattern;
    options.page_size = page_size;
    return scan_keys(*this, options);
  }

 private:
  friend class Multiplexer;
  Server(std::shared_ptr<detail::MuxCore> core, Endpoint endpoint)
      : core_(std::move(core)), endpoint_(std::move(endpoint)) {}

  std::shared_ptr<detail::MuxCore> core_;
  Endpoint endpoint_;
};

}  // namespace redmux
