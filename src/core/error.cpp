#include "redmux/error.hpp"
#include "redmux/events.hpp"

#include <iterator>

#include "core/enum_names.hpp"
#include "core/script_commands.hpp"

namespace redmux {
namespace {

/// Throws `error` as the exception class that stands for its code.
using Raise = void (*)(const Error& error);

template <class Exception>
[[noreturn]] void raise_as(const Error& error) {
  throw Exception(error);
}

/// What stands for an errc: its message (error_category().message()) and the exception
/// Error::raise() throws.
struct ErrcInfo {
  std::string_view message;
  Raise raise;
};

/// One row an errc, in declaration order.
constexpr ErrcInfo kErrcs[] = {
    {"ok", nullptr},
    {"protocol error", raise_as<ProtocolError>},
    {"server replied with an error", raise_as<ServerError>},
    {"reply does not convert to the requested type", raise_as<UnexpectedReplyError>},
    {"timed out", raise_as<TimeoutError>},
    {"command queue is full", raise_as<QueueFullError>},
    {"command not sent (safe to retry)", raise_as<ConnectionError>},
    {"connection lost after the command was sent", raise_as<ConnectionError>},
    {"connection failed", raise_as<ConnectionError>},
    {"authentication failed", raise_as<ConnectionError>},
    {"not connected", raise_as<ConnectionError>},
    {"multiplexer shut down", raise_as<ConnectionError>},
    {"blocking wait on an I/O thread", raise_as<DeadlockError>},
    {"admin command needs allowAdmin=true", raise_as<AdminModeError>},
    {"command not allowed where it was sent", raise_as<NotAllowedError>},
    {"invalid configuration", raise_as<ConfigError>},
    {"invalid argument", raise_as<InvalidArgumentError>},
    {"transaction did not commit", raise_as<TransactionAbortedError>},
    {"subscription buffer overflowed", raise_as<RedmuxError>},
    {"handler threw", raise_as<RedmuxError>},
    {"subscription ended by the server", raise_as<RedmuxError>},
};
static_assert(std::size(kErrcs) == static_cast<std::size_t>(errc::subscription_ended) + 1,
              "one kErrcs row an errc");

/// The row of `code`; {"unknown redmux error", nullptr} for a value past the enumerators.
constexpr ErrcInfo info_of(errc code) noexcept {
  return detail::name_of(code, kErrcs, ErrcInfo{"unknown redmux error", nullptr});
}

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "redmux"; }
  std::string message(int value) const override {
    return std::string(info_of(static_cast<errc>(value)).message);
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

bool Error::safe_to_retry() const noexcept {
  if (never_ran_) return true;
  if (inside_reply_) return false;
  switch (code_) {
    case errc::not_sent:
    case errc::disconnected:
    case errc::queue_full:
      return true;
    case errc::server_error: {
      const std::string_view text(message_);
      const std::string_view word = text.substr(0, text.find_first_of(" \r\n"));
      for (std::string_view refused :
           {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"}) {
        // A script may return these words itself, after writing: only the server's own
        // texts say it did not run.
        if (word == refused) return !script_reply_ || detail::is_server_refusal_text(text);
      }
      for (std::string_view refused : {"MOVED", "ASK", "REDIRECT"}) {
        if (word == refused) return true;
      }
      for (std::string_view refused : {"READONLY", "OOM", "MISCONF", "NOREPLICAS"}) {
        // A script's refused write carries the server's locator; a script may also return
        // these words itself, after writing.
        if (word == refused) return !script_reply_ || text.find(" script: ") != text.npos;
      }
      return false;
    }
    default:
      return false;
  }
}

void Error::raise() const {
  if (const Raise raise = info_of(code_).raise) raise(*this);
  if (message_.empty()) throw RedmuxError(code_, "redmux: raise() on a non-error");
  throw RedmuxError(*this);
}

namespace detail {

Error error_from_exception(std::exception_ptr exception, std::string_view who) {
  try {
    std::rethrow_exception(std::move(exception));
  } catch (const RedmuxError& e) {
    return e.error();
  } catch (const std::exception& e) {
    return Error(errc::handler_failed, std::string(who) + " threw: " + e.what());
  } catch (...) {
    return Error(errc::handler_failed, std::string(who) + " threw an exception of unknown type");
  }
}

}  // namespace detail

std::string ServerError::prefix() const {
  std::string_view text = what();
  return std::string(text.substr(0, text.find(' ')));
}

}  // namespace redmux

namespace redmux {

std::string_view to_string(ConnectionEventKind kind) noexcept {
  static constexpr std::string_view kNames[] = {"connected", "failed",       "reconnecting",
                                                "restored",  "auth refused", "role changed"};
  return detail::name_of(kind, kNames);
}

std::string_view to_string(ConnectionPurpose purpose) noexcept {
  static constexpr std::string_view kNames[] = {"interactive", "cluster node", "subscription",
                                                "shard subscription", "dedicated"};
  return detail::name_of(purpose, kNames);
}

}  // namespace redmux
