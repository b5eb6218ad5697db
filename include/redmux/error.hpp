// Errors: one `redmux::errc` enum with its std::error_category, the `Error` value carried
// inside the library (code + human-readable message), and the typed exceptions that the
// surface throws (`Future::get()`, `Result::value()`, `Multiplexer::connect()`).
//
// Every message says what happened, to which command or endpoint, and what to do. Messages
// never contain passwords or command arguments. All types here are plain values: safe to
// copy and use from any thread.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace redmux {

/// Every error condition redmux reports.
enum class errc {
  ok = 0,
  // protocol
  protocol_error = 1,  ///< malformed or over-limit bytes from the server
  // replies
  server_error,      ///< the server answered with an error reply (-ERR …, !…)
  unexpected_reply,  ///< reply shape does not convert to the requested type
  // command life
  timeout,            ///< no reply before the command's deadline
  queue_full,         ///< maxQueuedCommands reached
  not_sent,           ///< never written (connection lost first, no primary, …): safe to retry
  outcome_unknown,    ///< connection lost after the command was written: may have run
  connection_failed,  ///< could not connect / handshake failed
  authentication_failed,
  disconnected,         ///< no connection and the policy is to fail fast
  shut_down,            ///< the multiplexer was closed
  deadlock,             ///< a blocking wait on one of redmux's own I/O threads
  admin_required,       ///< command needs allowAdmin=true
  not_allowed,          ///< not allowed where sent: SELECT on the shared connection, Demand…
  invalid_config,       ///< configuration string or URL rejected
  invalid_argument,     ///< API misuse (bad argument to a typed command, …)
  transaction_aborted,  ///< the command's transaction did not commit (condition, WATCH …)
  // pub/sub
  subscription_overflow,  ///< a subscription's buffer overflowed (messages dropped, or ended)
  handler_failed,         ///< a pub/sub message handler, then() continuation or Task threw
  subscription_ended,     ///< the server ended a subscription (a shard channel's slot moved)
};

/// The std::error_category of redmux::errc ("redmux").
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// An error as a value: its code and a message that explains it.
class Error {
 public:
  Error() = default;
  Error(errc code, std::string message) : code_(code), message_(std::move(message)) {}
  /// An error of a command known not to have run, where its code does not say so: a timeout
  /// that came while it was still queued (never written, and never written later).
  static Error never_ran(errc code, std::string message) {
    Error error(code, std::move(message));
    error.never_ran_ = true;
    return error;
  }

  /// A server error reply met inside a reply (an element of a script's table, of an EXEC):
  /// errc::server_error, but the command that was answered ran, so never safe_to_retry().
  static Error inside_reply(std::string message) {
    Error error(errc::server_error, std::move(message));
    error.inside_reply_ = true;
    return error;
  }
  /// The error reply to a command that runs a script (EVAL, EVALSHA, FCALL and their
  /// read-only forms): errc::server_error, whose words may be the script's own
  /// (redis.error_reply) and so do not prove on their own that nothing ran.
  static Error script_reply(std::string message) {
    Error error(errc::server_error, std::move(message));
    error.script_reply_ = true;
    return error;
  }

  errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  explicit operator bool() const noexcept { return code_ != errc::ok; }

  /// True when the command certainly did not run, so sending it again cannot apply it twice:
  /// never sent (not_sent, disconnected, queue_full), or refused by the server before running
  /// — LOADING, BUSY (a script or function is running), MASTERDOWN, READONLY (a replica after
  /// a failover), TRYAGAIN, CLUSTERDOWN, NOREPLICAS, OOM (maxmemory reached), MISCONF (writes
  /// stopped after a failed save), and the redirections MOVED, ASK and Valkey's REDIRECT;
  /// or a timeout that came before the command was written (never_ran()). False for
  /// outcome_unknown, for a timeout of a command written or being written, and for an error
  /// reply inside a reply (inside_reply(): the command ran). For a script (script_reply()),
  /// READONLY, OOM, MISCONF and NOREPLICAS count only when the server says it refused a
  /// command of the script ("… script: <sha1>, on @user_script:1."): those refuse the
  /// script's first write, so it wrote nothing; without that, a script may have written and
  /// then returned the words itself.
  bool safe_to_retry() const noexcept;
  /// True when redmux knows the command did not run although code() alone does not say so:
  /// a timeout while it was still queued — for a connection, for a primary (failoverWait),
  /// for a dedicated connection, or in a Batch or Transaction not executed.
  bool never_ran() const noexcept { return never_ran_; }

  /// Throws the typed exception that matches code(); the exception's error() gives this
  /// Error back, safe_to_retry() included. REQUIRES: code() != errc::ok.
  [[noreturn]] void raise() const;

 private:
  friend class RedmuxError;
  errc code_ = errc::ok;
  std::string message_;
  bool never_ran_ = false;
  bool inside_reply_ = false;
  bool script_reply_ = false;
};

/// Base of every exception redmux throws; what() is the full message.
class RedmuxError : public std::runtime_error {
 public:
  RedmuxError(errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  /// The exception Error::raise() throws for `error`: it keeps what the code alone does not
  /// say (never_ran(), an error inside a reply, a script's error), so error() gives it back.
  explicit RedmuxError(const Error& error)
      : std::runtime_error(error.message()),
        code_(error.code_),
        never_ran_(error.never_ran_),
        inside_reply_(error.inside_reply_),
        script_reply_(error.script_reply_) {}
  errc code() const noexcept { return code_; }
  std::error_code error_code() const noexcept { return make_error_code(code_); }
  /// The Error this exception stands for: code, message and what safe_to_retry() needs.
  Error error() const {
    Error error(code_, what());
    error.never_ran_ = never_ran_;
    error.inside_reply_ = inside_reply_;
    error.script_reply_ = script_reply_;
    return error;
  }
  /// Error::safe_to_retry() of error(): the command certainly did not run.
  bool safe_to_retry() const { return error().safe_to_retry(); }

 protected:
  /// Marks a timeout that came before its command was written (TimeoutError).
  void set_never_ran(bool never_ran) noexcept { never_ran_ = never_ran; }

 private:
  errc code_;
  bool never_ran_ = false;
  bool inside_reply_ = false;
  bool script_reply_ = false;
};

/// The server replied with an error (`-ERR …`, `-WRONGTYPE …`, a bulk error).
class ServerError : public RedmuxError {
 public:
  using RedmuxError::RedmuxError;
  /// The first word of the server's message: "ERR", "WRONGTYPE", "NOSCRIPT" …
  std::string prefix() const;
};
class ProtocolError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
class UnexpectedReplyError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
class TimeoutError : public RedmuxError {
 public:
  TimeoutError(errc code, const std::string& message, bool never_sent = false)
      : RedmuxError(code, message), never_sent_(never_sent) {
    set_never_ran(never_sent);
  }
  explicit TimeoutError(const Error& error) : RedmuxError(error), never_sent_(error.never_ran()) {}
  /// True when it timed out before it was written: it did not run and never will (safe to
  /// retry; Error::never_ran()).
  bool never_sent() const noexcept { return never_sent_; }

 private:
  bool never_sent_;
};
class QueueFullError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
/// Connection trouble: not_sent, outcome_unknown, connection_failed, disconnected, shut_down,
/// authentication_failed.
class ConnectionError : public RedmuxError {
 public:
  using RedmuxError::RedmuxError;
  /// True when the command is known not to have reached the server and never will: not_sent
  /// (a break before it was written, no primary, no node for its slot, a Batch destroyed
  /// unexecuted) or disconnected (refused at once under backlogPolicy=failFast); safe to
  /// retry. False for shut_down (not sent either, but this multiplexer sends nothing more).
  bool never_sent() const noexcept {
    return code() == errc::not_sent || code() == errc::disconnected;
  }
};
class DeadlockError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
class AdminModeError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
class NotAllowedError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
class ConfigError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
class InvalidArgumentError : public RedmuxError {
  using RedmuxError::RedmuxError;
};
/// A command queued in a transaction that did not commit.
class TransactionAbortedError : public RedmuxError {
  using RedmuxError::RedmuxError;
};

namespace detail {
/// The Error for an exception a then() continuation or a Task threw: a RedmuxError gives its
/// error() (so `r.value()` inside a continuation passes a failure on unchanged, safe_to_retry()
/// included); any
/// other exception is errc::handler_failed, "`who` threw: what()".
Error error_from_exception(std::exception_ptr exception, std::string_view who);
}  // namespace detail

}  // namespace redmux

template <>
struct std::is_error_code_enum<redmux::errc> : std::true_type {};
