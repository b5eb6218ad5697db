// Lua scripts and functions (EVAL/EVALSHA and their _RO forms, SCRIPT LOAD/EXISTS/FLUSH,
// FUNCTION LOAD/DELETE/FLUSH, FCALL/FCALL_RO) as a mixin for any sink (see sink.hpp). The
// result type is the caller's choice: `db.eval<long long>(…)`, Reply by default.
//
// Order and the script cache. eval() sends EVAL with the script's text, every time: the
// server runs it in one round trip and keeps it in its cache. So a script call takes its
// place among the caller's commands like any other (docs/ordering.md): it runs before what
// the caller sends after it, on its first use on a server as later. Sending EVALSHA first and
// EVAL after a NOSCRIPT reply would let commands sent meanwhile run before the script. To
// send only the SHA-1 (a long script called often), load it once (script_load(), or a first
// eval()) and call evalsha(script.sha1(), …): a server that lost it (SCRIPT FLUSH, a restart,
// a failover to a replica that never saw it) answers NOSCRIPT: a ServerError whose
// prefix() is "NOSCRIPT", for the caller to handle (load it again, or eval() once).
//
// Errors: a script's runtime or compile error is a ServerError whose message holds the
// server's text (e.g. "ERR user_script:1: Script attempted to access nonexistent global
// variable 'x' script: …"); redis.error_reply('msg') gives "msg".
//
// Threads: that of the sink's send().
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "redmux/commands/script.hpp"
#include "redmux/commands/sink.hpp"
#include "redmux/reply.hpp"

namespace redmux {

template <class Derived>
class ScriptingCommands {
 public:
  /// Runs a Lua script: `db.eval<long long>("return redis.call('INCR', KEYS[1])", {"k"})`.
  /// EVAL with the script's text (see the top of this file).
  template <class T = Reply>
  Future<T> eval(std::string_view script, std::initializer_list<std::string_view> keys = {},
                 std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("EVAL", script, keys, args, options);
  }
  template <class T = Reply, detail::StringRange Keys, detail::StringRange Args>
  Future<T> eval(std::string_view script, const Keys& keys, const Args& args,
                 CallOptions options = {}) {
    return send_numkeys<T>("EVAL", script, keys, args, options);
  }
  /// Runs a prepared script with positional keys and arguments.
  template <class T = Reply>
  Future<T> eval(const Script& script, std::initializer_list<std::string_view> keys = {},
                 std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("EVAL", script.text(), keys, args, options);
  }
  template <class T = Reply, detail::StringRange Keys, detail::StringRange Args>
  Future<T> eval(const Script& script, const Keys& keys, const Args& args,
                 CallOptions options = {}) {
    return send_numkeys<T>("EVAL", script.text(), keys, args, options);
  }
  /// Runs a script bound to its values: `db.eval(script.bind({{"key", "k"}, {"n", 5}}))`.
  template <class T = Reply>
  Future<T> eval(const BoundScript& call, CallOptions options = {}) {
    return run<T>(call, false, options);
  }

  /// Read-only forms (EVAL_RO; Redis 7.0+): the script may not write (a write is a
  /// ServerError), and the call may go to a replica.
  template <class T = Reply>
  Future<T> eval_ro(std::string_view script, std::initializer_list<std::string_view> keys = {},
                    std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("EVAL_RO", script, keys, args, options);
  }
  template <class T = Reply>
  Future<T> eval_ro(const Script& script, std::initializer_list<std::string_view> keys = {},
                    std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("EVAL_RO", script.text(), keys, args, options);
  }
  template <class T = Reply>
  Future<T> eval_ro(const BoundScript& call, CallOptions options = {}) {
    return run<T>(call, true, options);
  }

  /// Runs a script the server has cached, by SHA-1, without any retry: NOSCRIPT is a
  /// ServerError. EVALSHA sha numkeys key… arg….
  template <class T = Reply>
  Future<T> evalsha(std::string_view sha1, std::initializer_list<std::string_view> keys = {},
                    std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("EVALSHA", sha1, keys, args, options);
  }
  /// EVALSHA_RO, without retry.
  template <class T = Reply>
  Future<T> evalsha_ro(std::string_view sha1, std::initializer_list<std::string_view> keys = {},
                       std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("EVALSHA_RO", sha1, keys, args, options);
  }
  /// Loads a script into the server's cache without running it; its SHA-1. A compile error
  /// is a ServerError. SCRIPT LOAD.
  Future<std::string> script_load(std::string_view script, CallOptions options = {}) {
    return detail::send_command<std::string>(*this, options, {"SCRIPT", "LOAD", script});
  }
  /// Whether each SHA-1 is in the server's cache. SCRIPT EXISTS.
  Future<std::vector<bool>> script_exists(std::initializer_list<std::string_view> sha1s,
                                          CallOptions options = {}) {
    detail::ArgList args({"SCRIPT", "EXISTS"}, sha1s.size());
    args.add_all(sha1s);
    return detail::send_built<std::vector<bool>>(*this, options, args);
  }
  /// Empties the server's script cache (every client's scripts). SCRIPT FLUSH: an admin
  /// command, refused unless the configuration says allowAdmin=true.
  Future<void> script_flush(CallOptions options = {}) {
    return detail::send_command<void>(*this, options, {"SCRIPT", "FLUSH"});
  }

  /// Loads a library of functions (its text starts "#!lua name=…"); the library's name.
  /// With `replace`, an existing library of that name is replaced (otherwise ServerError).
  /// FUNCTION LOAD [REPLACE] code.
  Future<std::string> function_load(std::string_view code, bool replace = false,
                                    CallOptions options = {}) {
    if (replace)
      return detail::send_command<std::string>(*this, options,
                                               {"FUNCTION", "LOAD", "REPLACE", code});
    return detail::send_command<std::string>(*this, options, {"FUNCTION", "LOAD", code});
  }
  /// Deletes a library and its functions; a missing one is a ServerError. FUNCTION DELETE.
  /// (Not admin-gated: like DEL, it removes only what it names.)
  Future<void> function_delete(std::string_view library, CallOptions options = {}) {
    return detail::send_command<void>(*this, options, {"FUNCTION", "DELETE", library});
  }
  /// Deletes every library. FUNCTION FLUSH: an admin command (allowAdmin=true).
  Future<void> function_flush(CallOptions options = {}) {
    return detail::send_command<void>(*this, options, {"FUNCTION", "FLUSH"});
  }
  /// Calls a function of a loaded library. FCALL function numkeys key… arg….
  template <class T = Reply>
  Future<T> fcall(std::string_view function, std::initializer_list<std::string_view> keys = {},
                  std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("FCALL", function, keys, args, options);
  }
  template <class T = Reply, detail::StringRange Keys, detail::StringRange Args>
  Future<T> fcall(std::string_view function, const Keys& keys, const Args& args,
                  CallOptions options = {}) {
    return send_numkeys<T>("FCALL", function, keys, args, options);
  }
  /// Calls a function registered with the no-writes flag (may go to a replica). FCALL_RO.
  template <class T = Reply>
  Future<T> fcall_ro(std::string_view function, std::initializer_list<std::string_view> keys = {},
                     std::initializer_list<Arg> args = {}, CallOptions options = {}) {
    return send_numkeys<T>("FCALL_RO", function, keys, args, options);
  }

 private:
  /// Sends `command head numkeys words…` for a bound script.
  template <class T>
  static Future<T> send_bound(Derived& sink, const char* command, std::string_view head,
                              const BoundScript& call, const CallOptions& options) {
    detail::ArgList args({command, head, static_cast<long long>(call.key_count())},
                         call.words().size());
    args.add_all(call.words());
    return sink.template send<T>(options, args.span());
  }

  template <class T>
  Future<T> run(const BoundScript& call, bool read_only, const CallOptions& options) {
    return send_bound<T>(detail::sink_of(*this), read_only ? "EVAL_RO" : "EVAL",
                         call.script().text(), call, options);
  }

  template <class T, class Keys, class Args>
  Future<T> send_numkeys(const char* command, std::string_view head, const Keys& keys,
                         const Args& args, const CallOptions& options) {
    detail::ArgList list({command, head}, 1 + detail::size_hint(keys) + detail::size_hint(args));
    list.add_counted(keys);
    for (auto&& arg : args) list.add(Arg(arg));
    return detail::send_built<T>(*this, options, list);
  }
};

}  // namespace redmux
