#include "redmux/error.hpp"
#include "redmux/events.hpp"

namespace redmux {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "redmux"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::ok:
        return "ok";
      case errc::protocol_error:
        return "protocol error";
      case errc::server_error:
        return "server replied with an error";
      case errc::unexpected_reply:
        return "reply does not convert to the requested type";
      case errc::timeout:
        return "timed out";
      case errc::queue_full:
        return "command queue is full";
      case errc::not_sent:
        return "connection lost before the command was sent";
      case errc::outcome_unknown:
        return "connection lost after the command was sent";
      case errc::connection_failed:
        return "connection failed";
      case errc::authentication_failed:
        return "authentication failed";
      case errc::disconnected:
        return "not connected";
      case errc::shut_down:
        return "multiplexer shut down";
      case errc::deadlock:
        return "blocking wait on an I/O thread";
      case errc::admin_required:
        return "admin command needs allowAdmin=true";
      case errc::not_allowed:
        return "command not allowed on a shared connection";
      case errc::invalid_config:
        return "invalid configuration";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::transaction_aborted:
        return "transaction did not commit";
      case errc::subscription_overflow:
        return "subscription buffer overflowed";
      case errc::handler_failed:
        return "handler threw";
    }
    return "unknown redmux error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

bool Error::safe_to_retry() const noexcept {
  switch (code_) {
    case errc::not_sent:
    case errc::disconnected:
    case errc::queue_full:
      return true;
    case errc::server_error: {
      const std::string_view text(message_);
      const std::string_view word = text.substr(0, text.find_first_of(" \r\n"));
      for (std::string_view refused : {"LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN",
                                       "CLUSTERDOWN", "NOREPLICAS", "MOVED", "ASK"}) {
        if (word == refused) return true;
      }
      return false;
    }
    default:
      return false;
  }
}

void Error::raise() const {
  switch (code_) {
    case errc::server_error:
      throw ServerError(code_, message_);
    case errc::protocol_error:
      throw ProtocolError(code_, message_);
    case errc::unexpected_reply:
      throw UnexpectedReplyError(code_, message_);
    case errc::timeout:
      throw TimeoutError(code_, message_);
    case errc::queue_full:
      throw QueueFullError(code_, message_);
    case errc::not_sent:
    case errc::outcome_unknown:
    case errc::connection_failed:
    case errc::authentication_failed:
    case errc::disconnected:
    case errc::shut_down:
      throw ConnectionError(code_, message_);
    case errc::deadlock:
      throw DeadlockError(code_, message_);
    case errc::admin_required:
      throw AdminModeError(code_, message_);
    case errc::not_allowed:
      throw NotAllowedError(code_, message_);
    case errc::invalid_config:
      throw ConfigError(code_, message_);
    case errc::invalid_argument:
      throw InvalidArgumentError(code_, message_);
    case errc::transaction_aborted:
      throw TransactionAbortedError(code_, message_);
    case errc::subscription_overflow:
    case errc::handler_failed:
      throw RedmuxError(code_, message_);
    case errc::ok:
      break;
  }
  throw RedmuxError(code_, message_.empty() ? "redmux: raise() on a non-error" : message_);
}

namespace detail {

Error error_from_exception(std::exception_ptr exception, std::string_view who) {
  try {
    std::rethrow_exception(std::move(exception));
  } catch (const RedmuxError& e) {
    return Error(e.code(), e.what());
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
  switch (kind) {
    case ConnectionEventKind::Connected:
      return "connected";
    case ConnectionEventKind::Failed:
      return "failed";
    case ConnectionEventKind::Reconnecting:
      return "reconnecting";
    case ConnectionEventKind::Restored:
      return "restored";
  }
  return "?";
}

}  // namespace redmux
