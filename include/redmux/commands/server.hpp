// Server and connection commands (PING, TIME, INFO, CLIENT LIST …) and the generic
// execute() as a mixin for any sink (see sink.hpp). Where such a command goes (which
// server, which connection) is the sink's decision. Thread-safety: that of the sink's
// send().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redmux/commands/sink.hpp"
#include "redmux/reply.hpp"
#include "redmux/types.hpp"

namespace redmux {

template <class Derived>
class ServerCommands {
 public:
  /// "PONG". PING.
  Future<std::string> ping(CallOptions options = {}) {
    return send_command<std::string>(options, {"PING"});
  }
  /// `message`, echoed. PING message.
  Future<std::string> ping(std::string_view message, CallOptions options = {}) {
    return send_command<std::string>(options, {"PING", message});
  }
  /// `message`, echoed. ECHO.
  Future<std::string> echo(std::string_view message, CallOptions options = {}) {
    return send_command<std::string>(options, {"ECHO", message});
  }
  /// The server's clock; ServerTime::time_point() gives a system_clock time. TIME.
  Future<ServerTime> time(CallOptions options = {}) {
    return send_command<ServerTime>(options, {"TIME"});
  }
  /// Number of keys in the current database. DBSIZE.
  Future<long long> dbsize(CallOptions options = {}) {
    return send_command<long long>(options, {"DBSIZE"});
  }
  /// The server's INFO, parsed: `info().get().get_integer("clients", "connected_clients")`.
  /// INFO [section] ("" for the default set, "all", "everything", "server" …).
  Future<InfoSections> info(std::string_view section = {}, CallOptions options = {}) {
    if (section.empty()) return send_command<InfoSections>(options, {"INFO"});
    return send_command<InfoSections>(options, {"INFO", section});
  }
  Future<InfoSections> info(CallOptions options) { return info(std::string_view(), options); }
  /// The id of the connection the command ran on. CLIENT ID. (Which connection that is
  /// depends on the sink: on a multiplexer, one of its shared connections.)
  Future<long long> client_id(CallOptions options = {}) {
    return send_command<long long>(options, {"CLIENT", "ID"});
  }
  /// The name of the connection the command ran on; nullopt when it has none. CLIENT GETNAME.
  Future<std::optional<std::string>> client_getname(CallOptions options = {}) {
    return send_command<std::optional<std::string>>(options, {"CLIENT", "GETNAME"});
  }
  /// Every client connection of the server, parsed. CLIENT LIST.
  Future<std::vector<ClientInfo>> client_list(CallOptions options = {}) {
    return send_command<std::vector<ClientInfo>>(options, {"CLIENT", "LIST"});
  }

  /// Any command, its reply as a Reply tree: `execute({"OBJECT", "FREQ", key})`. args[0] is
  /// the command name. The sink may refuse commands that change connection state (SELECT,
  /// MULTI, SUBSCRIBE …) or need allowAdmin; an error reply completes with ServerError.
  Future<Reply> execute(std::span<const Arg> args, CallOptions options = {}) {
    return detail::send_span<Reply>(static_cast<Derived&>(*this), options, args);
  }
  Future<Reply> execute(std::initializer_list<Arg> args, CallOptions options = {}) {
    return detail::send_list<Reply>(static_cast<Derived&>(*this), options, args);
  }
  /// Variadic form: `execute("SET", key, 42)`. Each argument becomes an Arg (strings are
  /// viewed, numbers formatted).
  template <class... Args>
  requires(sizeof...(Args) >= 1 && (std::constructible_from<Arg, const Args&> &&
                                    ...)) Future<Reply> execute(std::string_view command,
                                                                const Args&... args) {
    return detail::send_list<Reply>(static_cast<Derived&>(*this), CallOptions{},
                                    {Arg(command), Arg(args)...});
  }

 private:
  template <class T>
  Future<T> send_command(const CallOptions& options, std::initializer_list<Arg> args) {
    return detail::send_list<T>(static_cast<Derived&>(*this), options, args);
  }
};

}  // namespace redmux
