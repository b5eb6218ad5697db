// redmux's headers must compile after system headers that define function-like macros with
// command names: glibc's <sys/param.h> (pulled in by cpp-httplib, used by the Bookstore
// example) defines setbit(a, i), isset(a, i) … .
#include <sys/param.h>
// (the macros must be in force before redmux is included)
#include <gtest/gtest.h>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

TEST(SystemMacrosTest, BitmapCommandsWorkWhereSysParamDefinesSetbit) {
#ifndef setbit
  GTEST_SKIP() << "this C library's <sys/param.h> defines no setbit macro";
#else
  test::RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  EXPECT_FALSE((db.setbit)("bits", 7, true).get());  // parenthesised: the macro is not invoked
  EXPECT_TRUE(db.getbit("bits", 7).get());
  EXPECT_EQ(server.cli({"GETBIT", "bits", "7"}), "1");
#endif
}

}  // namespace
}  // namespace redmux
