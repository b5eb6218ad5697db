// Result<T>: every accessor is checked — error() on a success and value(), *, -> on a
// failure have a defined, documented outcome (result.hpp).
#include "redmux/result.hpp"

#include <gtest/gtest.h>

#include <string>

namespace redmux {
namespace {

TEST(ResultTest, ErrorOnASuccessIsAnEmptyError) {
  const Result<long long> ok(42);
  const Error& error = ok.error();
  EXPECT_FALSE(error);
  EXPECT_EQ(error.code(), errc::ok);
  EXPECT_TRUE(error.message().empty());
  Result<std::string> moved(std::string("value"));
  Error taken = std::move(moved).error();
  EXPECT_FALSE(taken);
  EXPECT_EQ(taken.code(), errc::ok);
}

TEST(ResultTest, ErrorOnAVoidSuccessIsAnEmptyError) {
  const Result<void> ok;
  EXPECT_FALSE(ok.error());
  EXPECT_EQ(ok.error().code(), errc::ok);
}

TEST(ResultTest, ValueStarAndArrowOnAFailureThrowTheTypedError) {
  Result<std::string> failed(Error(errc::timeout, "GET timed out"));
  EXPECT_THROW(failed.value(), TimeoutError);
  EXPECT_THROW(*failed, TimeoutError);
  EXPECT_THROW((void)failed->size(), TimeoutError);
  const Result<std::string>& read_only = failed;
  EXPECT_THROW(*read_only, TimeoutError);
  EXPECT_THROW((void)read_only->size(), TimeoutError);
  EXPECT_THROW(*std::move(failed), TimeoutError);
  try {
    *Result<long long>(Error(errc::server_error, "WRONGTYPE x"));
    FAIL() << "expected ServerError";
  } catch (const ServerError& e) {
    EXPECT_STREQ(e.what(), "WRONGTYPE x");
  }
}

TEST(ResultTest, ErrorOnAFailureIsTheError) {
  Result<long long> failed(Error(errc::queue_full, "full"));
  EXPECT_EQ(failed.error().code(), errc::queue_full);
  EXPECT_EQ(std::move(failed).error().message(), "full");
}

TEST(ResultTest, AccessorsOnASuccessGiveTheValue) {
  Result<std::string> ok(std::string("abc"));
  EXPECT_EQ(*ok, "abc");
  EXPECT_EQ(ok->size(), 3u);
  EXPECT_EQ(ok.value(), "abc");
}

}  // namespace
}  // namespace redmux
