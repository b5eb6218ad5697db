#include "conn/attempts.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

TEST(AttemptsTest, TheBackoffDoublesFromTheBaseUpToTheCapWithItsJitter) {
  Config config;
  config.reconnect_base_delay = 100ms;
  config.reconnect_max_delay = 1000ms;
  EXPECT_EQ(reconnect_delay(config, 0, 1.0), 100ms);
  EXPECT_EQ(reconnect_delay(config, 1, 1.0), 100ms);
  EXPECT_EQ(reconnect_delay(config, 2, 1.0), 200ms);
  EXPECT_EQ(reconnect_delay(config, 4, 1.0), 800ms);
  EXPECT_EQ(reconnect_delay(config, 5, 1.0), 1000ms);
  EXPECT_EQ(reconnect_delay(config, 500, 1.0), 1000ms);
  EXPECT_EQ(reconnect_delay(config, 2, 0.8), 160ms);
  EXPECT_EQ(reconnect_delay(config, 2, 1.2), 240ms);
  for (int i = 0; i < 1000; ++i) {
    const double jitter = reconnect_jitter();
    ASSERT_GE(jitter, 0.8);
    ASSERT_LT(jitter, 1.2);
  }
}

TEST(AttemptsTest, TheFirstSeriesGivesUpAfterConnectRetryRetries) {
  Config config;
  config.connect_retry = 1;
  Attempts attempts(config);
  const Error refused(errc::connection_failed, "connecting to h:1 failed: refused");
  EXPECT_FALSE(attempts.failed(refused, "h:1", /*first_waits=*/true).has_value());
  const std::optional<Error> gave_up = attempts.failed(refused, "h:1", true);
  ASSERT_TRUE(gave_up.has_value());
  EXPECT_EQ(gave_up->code(), errc::connection_failed);
  EXPECT_EQ(gave_up->message(),
            "could not connect to h:1 in 2 attempts (connectRetry=1, connectTimeout=5000 ms); "
            "attempts 1 and 2: connecting to h:1 failed: refused");
  EXPECT_EQ(attempts.failed_in_a_row(), 2);

  Config once;
  once.connect_retry = 0;
  Attempts single(once);
  const std::optional<Error> plain = single.failed(refused, "h:1", true);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->message(), refused.message());  // one attempt: its own error
}

TEST(AttemptsTest, AttemptsThatFailedAlikeAreNamedOnceAndTheRestElided) {
  Config config;
  config.connect_retry = 5;
  Attempts attempts(config);
  const Error timed_out(errc::timeout, "connecting to h:1 timed out");
  const Error refused(errc::connection_failed, "connecting to h:1 failed: refused");
  for (const Error* error : {&timed_out, &refused, &refused, &refused, &refused}) {
    ASSERT_FALSE(attempts.failed(*error, "h:1", true).has_value());
  }
  const std::optional<Error> gave_up = attempts.failed(refused, "h:1", true);
  ASSERT_TRUE(gave_up.has_value());
  EXPECT_EQ(gave_up->code(), errc::connection_failed);
  EXPECT_EQ(gave_up->message(),
            "could not connect to h:1 in 6 attempts (connectRetry=5, connectTimeout=5000 ms); "
            "attempt 1: connecting to h:1 timed out; attempts 2–4: connecting to h:1 "
            "failed: refused; …");
}

TEST(AttemptsTest, ARefusalForGoodEndsTheSeries) {
  Config config;
  config.connect_retry = 3;
  const Error refused(errc::authentication_failed,
                      "authentication to h:1 failed: WRONGPASS invalid username-password pair");
  // Handshake::refused_for_good(): a refused password= without a credential provider.
  Attempts configured(config);
  const std::optional<Error> at_once = configured.failed(refused, "h:1", true, /*for_good=*/true);
  ASSERT_TRUE(at_once.has_value());
  EXPECT_EQ(at_once->code(), errc::authentication_failed);
  EXPECT_EQ(at_once->message(), refused.message());

  // After a timeout, the refusal still ends the series, and both are named.
  Attempts second(config);
  ASSERT_FALSE(second.failed(Error(errc::timeout, "timed out"), "h:1", true).has_value());
  const std::optional<Error> after = second.failed(refused, "h:1", true, true);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->code(), errc::authentication_failed);
  EXPECT_NE(after->message().find("in 2 attempts"), std::string::npos) << after->message();

  // With a provider, whose next answer may differ, the refusal is not for good.
  Attempts with_provider(config);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_FALSE(with_provider.failed(refused, "h:1", true).has_value()) << attempt;
  }
  EXPECT_TRUE(with_provider.failed(refused, "h:1", true).has_value());

  // Once ready, a refusal at a reconnect is never reported here: the connection keeps trying.
  Attempts ready(config);
  ready.succeeded();
  EXPECT_FALSE(ready.failed(refused, "h:1", true, true).has_value());
}

TEST(AttemptsTest, OnceReadyFailuresAreNotReportedAndABreakStartsANewSeries) {
  Config config;
  config.connect_retry = 0;
  Attempts attempts(config);
  EXPECT_FALSE(attempts.succeeded());
  const Error cause(errc::outcome_unknown, "closed");
  attempts.broke(cause);
  EXPECT_EQ(attempts.failed_in_a_row(), 1);
  EXPECT_EQ(attempts.next_delay(1.0), config.reconnect_base_delay);
  EXPECT_FALSE(attempts.failed(cause, "h:1", true).has_value());
  EXPECT_EQ(attempts.failed_in_a_row(), 2);
  EXPECT_TRUE(attempts.succeeded());  // a reconnect
  EXPECT_EQ(attempts.failed_in_a_row(), 0);
}

}  // namespace
}  // namespace redmux::detail
