// What stands for each errc: the category's message and the exception class Error::raise()
// throws (error.cpp's table), for every enumerator and for values past them.
#include "redmux/error.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <typeinfo>
#include <utility>

namespace redmux {
namespace {

TEST(ErrcTableTest, EveryCodeHasItsMessage) {
  const std::pair<errc, const char*> expected[] = {
      {errc::ok, "ok"},
      {errc::protocol_error, "protocol error"},
      {errc::server_error, "server replied with an error"},
      {errc::unexpected_reply, "reply does not convert to the requested type"},
      {errc::timeout, "timed out"},
      {errc::queue_full, "command queue is full"},
      {errc::not_sent, "command not sent (safe to retry)"},
      {errc::outcome_unknown, "connection lost after the command was sent"},
      {errc::connection_failed, "connection failed"},
      {errc::authentication_failed, "authentication failed"},
      {errc::disconnected, "not connected"},
      {errc::shut_down, "multiplexer shut down"},
      {errc::deadlock, "blocking wait on an I/O thread"},
      {errc::admin_required, "admin command needs allowAdmin=true"},
      {errc::not_allowed, "command not allowed where it was sent"},
      {errc::invalid_config, "invalid configuration"},
      {errc::invalid_argument, "invalid argument"},
      {errc::transaction_aborted, "transaction did not commit"},
      {errc::subscription_overflow, "subscription buffer overflowed"},
      {errc::handler_failed, "handler threw"},
      {errc::subscription_ended, "subscription ended by the server"},
  };
  ASSERT_EQ(std::size(expected), static_cast<std::size_t>(errc::subscription_ended) + 1);
  for (const auto& [code, message] : expected) {
    EXPECT_EQ(make_error_code(code).message(), message) << static_cast<int>(code);
    EXPECT_EQ(make_error_code(code).category().name(), std::string("redmux"));
  }
}

TEST(ErrcTableTest, ValuesPastTheCodesAreUnknown) {
  for (int value : {-1, static_cast<int>(errc::subscription_ended) + 1, 1000}) {
    EXPECT_EQ(error_category().message(value), "unknown redmux error") << value;
  }
}

/// Error(code, "the message").raise() throws exactly `Exception` with code and message.
template <class Exception>
void expect_raises(errc code) {
  SCOPED_TRACE(static_cast<int>(code));
  try {
    Error(code, "the message").raise();
    ADD_FAILURE() << "raise() returned";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(typeid(e), typeid(Exception)) << typeid(e).name();
    EXPECT_EQ(e.code(), code);
    EXPECT_EQ(std::string(e.what()), "the message");
  }
}

TEST(ErrcTableTest, RaiseThrowsTheClassOfEachCode) {
  expect_raises<ProtocolError>(errc::protocol_error);
  expect_raises<ServerError>(errc::server_error);
  expect_raises<UnexpectedReplyError>(errc::unexpected_reply);
  expect_raises<TimeoutError>(errc::timeout);
  expect_raises<QueueFullError>(errc::queue_full);
  for (errc code : {errc::not_sent, errc::outcome_unknown, errc::connection_failed,
                    errc::authentication_failed, errc::disconnected, errc::shut_down}) {
    expect_raises<ConnectionError>(code);
  }
  expect_raises<DeadlockError>(errc::deadlock);
  expect_raises<AdminModeError>(errc::admin_required);
  expect_raises<NotAllowedError>(errc::not_allowed);
  expect_raises<ConfigError>(errc::invalid_config);
  expect_raises<InvalidArgumentError>(errc::invalid_argument);
  expect_raises<TransactionAbortedError>(errc::transaction_aborted);
  expect_raises<RedmuxError>(errc::subscription_overflow);
  expect_raises<RedmuxError>(errc::handler_failed);
  expect_raises<RedmuxError>(static_cast<errc>(1000));
}

TEST(ErrcTableTest, ServerErrorsThatMeanTheCommandDidNotRunAreSafeToRetry) {
  for (const char* refused :
       {"LOADING Redis is loading the dataset in memory", "BUSY Redis is busy running a script",
        "MASTERDOWN Link with MASTER is down",
        "READONLY You can't write against a read only replica.",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN The cluster is down", "NOREPLICAS Not enough good replicas to write.",
        "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381",
        "OOM command not allowed when used memory > 'maxmemory'.",
        "MISCONF Redis is configured to save RDB snapshots, but it is currently unable to persist "
        "to disk.",
        "REDIRECT 127.0.0.1:6380: SET did not run: the server says the primary is "
        "127.0.0.1:6380"}) {
    EXPECT_TRUE(Error(errc::server_error, refused).safe_to_retry()) << refused;
  }
  for (const char* ran : {"ERR value is not an integer or out of range (reply to INCR)",
                          "WRONGTYPE Operation against a key holding the wrong kind of value",
                          "REDIRECTED is no prefix", "NOSCRIPT No matching script"}) {
    EXPECT_FALSE(Error(errc::server_error, ran).safe_to_retry()) << ran;
  }
  // A script's error: READONLY, OOM, MISCONF and NOREPLICAS prove nothing ran only with the
  // server's locator (it refused the script's first write); the script may say them itself.
  EXPECT_TRUE(Error::script_reply("OOM command not allowed when used memory > 'maxmemory'. "
                                  "script: 5a394d, on @user_script:1. (reply to EVAL)")
                  .safe_to_retry());
  EXPECT_FALSE(Error::script_reply("READONLY mine (reply to EVAL)").safe_to_retry());
  EXPECT_FALSE(Error::script_reply("NOREPLICAS mine (reply to FCALL)").safe_to_retry());
  EXPECT_TRUE(
      Error::script_reply("BUSY Redis is busy running a script. (reply to EVAL)").safe_to_retry());
  // The refusals a script may also return itself, with words of its own, after writing: only
  // the server's texts (Redis's or Valkey's) say it did not run.
  for (const char* own : {"BUSY later", "LOADING", "LOADING stuff", "TRYAGAIN x", "CLUSTERDOWN x",
                          "MASTERDOWN x", "BUSY Redis is busy (not running anything)"}) {
    EXPECT_FALSE(Error::script_reply(std::string(own) + " (reply to EVAL)").safe_to_retry()) << own;
    EXPECT_TRUE(Error(errc::server_error, std::string(own) + " (reply to GET)").safe_to_retry())
        << own;
  }
  for (const char* server :
       {"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        "LOADING Redis is loading the dataset in memory",
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN Hash slot not served", "CLUSTERDOWN The cluster is down",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."}) {
    EXPECT_TRUE(Error::script_reply(std::string(server) + " (reply to FCALL)").safe_to_retry())
        << server;
  }
  EXPECT_TRUE(Error(errc::server_error, "READONLY You can't write against a read only replica.")
                  .safe_to_retry());
  EXPECT_TRUE(Error(errc::not_sent, "x").safe_to_retry());
  EXPECT_FALSE(Error(errc::outcome_unknown, "x").safe_to_retry());
  EXPECT_FALSE(Error(errc::timeout, "x").safe_to_retry());
  // A timeout before the command was written: it did not run, and will not.
  const Error queued = Error::never_ran(errc::timeout, "x: command was still queued, not sent");
  EXPECT_TRUE(queued.safe_to_retry());
  EXPECT_FALSE(Error(errc::timeout, "x").never_ran());
  try {
    queued.raise();
  } catch (const TimeoutError& e) {
    EXPECT_TRUE(e.never_sent());
    // Passed on through a then() continuation, it keeps saying so.
    EXPECT_TRUE(
        detail::error_from_exception(std::current_exception(), "a continuation").safe_to_retry());
  }
  try {
    Error(errc::timeout, "x: command was sent").raise();
  } catch (const TimeoutError& e) {
    EXPECT_FALSE(e.never_sent());
  }
  // A connection's: not sent after a break, or refused at once under failFast.
  for (errc code : {errc::not_sent, errc::disconnected, errc::outcome_unknown, errc::shut_down}) {
    try {
      Error(code, "x").raise();
    } catch (const ConnectionError& e) {
      EXPECT_EQ(e.never_sent(), code == errc::not_sent || code == errc::disconnected)
          << static_cast<int>(code);
    }
  }
}

TEST(ErrcTableTest, AnExceptionGivesBackTheErrorItWasRaisedFrom) {
  // What the code alone does not say survives raise() and a then() continuation's rethrow:
  // a script's own READONLY and an error inside a reply stay unsafe to retry.
  const Error kinds[] = {Error::script_reply("READONLY mine (reply to EVAL)"),
                         Error::inside_reply("OOM command not allowed (reply to EXEC)"),
                         Error::script_reply("OOM command not allowed when used memory > "
                                             "'maxmemory'. script: 5a394d, on @user_script:1."),
                         Error::never_ran(errc::timeout, "x: command was still queued")};
  for (const Error& error : kinds) {
    try {
      error.raise();
    } catch (const RedmuxError& e) {
      EXPECT_EQ(e.safe_to_retry(), error.safe_to_retry()) << error.message();
      EXPECT_EQ(e.error().never_ran(), error.never_ran()) << error.message();
      const Error passed_on = detail::error_from_exception(std::current_exception(), "a then()");
      EXPECT_EQ(passed_on.code(), error.code());
      EXPECT_EQ(passed_on.message(), error.message());
      EXPECT_EQ(passed_on.safe_to_retry(), error.safe_to_retry()) << error.message();
    }
  }
  EXPECT_FALSE(kinds[0].safe_to_retry());
  EXPECT_FALSE(kinds[1].safe_to_retry());
  EXPECT_TRUE(kinds[2].safe_to_retry());
  EXPECT_TRUE(kinds[3].safe_to_retry());
}

TEST(ErrcTableTest, RaiseOnANonErrorSaysSo) {
  try {
    Error().raise();
    ADD_FAILURE() << "raise() returned";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(typeid(e), typeid(RedmuxError));
    EXPECT_EQ(e.code(), errc::ok);
    EXPECT_EQ(std::string(e.what()), "redmux: raise() on a non-error");
  }
}

}  // namespace
}  // namespace redmux
