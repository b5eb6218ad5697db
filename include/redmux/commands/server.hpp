// Server and connection commands (PING, TIME, INFO, CLIENT LIST …) and the generic
// execute() and command<T>() as a mixin for any sink (see sink.hpp). Where such a command goes
// (which server, which connection) is the sink's decision. Thread-safety: that of the sink's
// send().
#pragma once

#include <concepts>
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
    return detail::send_command<std::string>(*this, options, {"PING"});
  }
  /// `message`, echoed. PING message.
  Future<std::string> ping(std::string_view message, CallOptions options = {}) {
    return detail::send_command<std::string>(*this, options, {"PING", message});
  }
  /// `message`, echoed. ECHO.
  Future<std::string> echo(std::string_view message, CallOptions options = {}) {
    return detail::send_command<std::string>(*this, options, {"ECHO", message});
  }
  /// The server's clock; ServerTime::time_point() gives a system_clock time. TIME.
  Future<ServerTime> time(CallOptions options = {}) {
    return detail::send_command<ServerTime>(*this, options, {"TIME"});
  }
  /// Number of keys in the current database. DBSIZE.
  Future<long long> dbsize(CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"DBSIZE"});
  }
  /// The server's INFO, parsed: `info().get().get_integer("clients", "connected_clients")`.
  /// INFO [section] ("" for the default set, "all", "everything", "server" …).
  Future<InfoSections> info(std::string_view section = {}, CallOptions options = {}) {
    if (section.empty()) return detail::send_command<InfoSections>(*this, options, {"INFO"});
    return detail::send_command<InfoSections>(*this, options, {"INFO", section});
  }
  Future<InfoSections> info(CallOptions options) { return info(std::string_view(), options); }
  /// The id of the connection the command ran on. CLIENT ID. (Which connection that is
  /// depends on the sink: on a multiplexer, one of its shared connections.)
  Future<long long> client_id(CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"CLIENT", "ID"});
  }
  /// The name of the connection the command ran on; nullopt when it has none. CLIENT GETNAME.
  Future<std::optional<std::string>> client_getname(CallOptions options = {}) {
    return detail::send_command<std::optional<std::string>>(*this, options, {"CLIENT", "GETNAME"});
  }
  /// Every client connection of the server, parsed. CLIENT LIST.
  Future<std::vector<ClientInfo>> client_list(CallOptions options = {}) {
    return detail::send_command<std::vector<ClientInfo>>(*this, options, {"CLIENT", "LIST"});
  }

  /// Any command, its reply as a Reply tree: `execute({"OBJECT", "FREQ", key})`. args[0] is
  /// the command name. The sink may refuse commands that change connection state (SELECT,
  /// MULTI, SUBSCRIBE …) or need allowAdmin; an error reply completes with ServerError. On a
  /// Batch or Transaction the command is added like any typed one (and execute() with no
  /// argument still runs the batch or transaction).
  Future<Reply> execute(std::span<const Arg> args, CallOptions options = {}) {
    return detail::sink_of(*this).template send<Reply>(options, args);
  }
  Future<Reply> execute(std::initializer_list<Arg> args, CallOptions options = {}) {
    return detail::send_command<Reply>(*this, options, args);
  }
  /// Variadic form: `execute("SET", key, 42)`, `execute("PING")`. Each argument becomes an
  /// Arg (strings are viewed, numbers formatted).
  /// (The name's type is deduced, so that a braced list always means the overload above.)
  template <class Name, class... Args>
  requires(std::convertible_to<const Name&, std::string_view> &&
           (std::constructible_from<Arg, const Args&> &&
            ...)) Future<Reply> execute(const Name& command, const Args&... args) {
    return detail::send_command<Reply>(*this, CallOptions{},
                                       {Arg(std::string_view(command)), Arg(args)...});
  }

  /// Any command, its reply converted to T (Reply when not named), with call options:
  /// `command<long long>(Flags::PreferReplica, "OBJECT", "FREQ", key)`. Refused and converted
  /// like execute(); a reply that does not convert to T completes with UnexpectedReplyError.
  /// (`Options` is deduced, so that a braced list, `{}` included, always means the CallSpec
  /// overload below.)
  template <class T = Reply, class Options, class... Args>
  requires(std::convertible_to<const Options&, CallOptions> && !std::same_as<Options, CallSpec> &&
           (std::constructible_from<Arg, const Args&> &&
            ...)) Future<T> command(const Options& options, std::string_view name,
                                    const Args&... args) {
    return detail::send_command<T>(*this, CallOptions(options), {Arg(name), Arg(args)...});
  }
  /// command<T>() with the options named: `command<long long>({.timeout = 100ms}, "DBSIZE")`;
  /// `command<T>({}, "DBSIZE")` is the default options.
  template <class T = Reply, class... Args>
  requires(std::constructible_from<Arg, const Args&>&&...) Future<T> command(
      const CallSpec& options, std::string_view name, const Args&... args) {
    return command<T>(CallOptions(options), name, args...);
  }
  /// command<T>() with default call options: `command<std::string>("CLIENT", "INFO")`.
  template <class T = Reply, class Name, class... Args>
  requires(std::convertible_to<const Name&, std::string_view> &&
           (std::constructible_from<Arg, const Args&> &&
            ...)) Future<T> command(const Name& name, const Args&... args) {
    return detail::send_command<T>(*this, CallOptions{},
                                   {Arg(std::string_view(name)), Arg(args)...});
  }
};

}  // namespace redmux
