// Lua scripts and functions against a real redis-server, under RESP3 and RESP2: eval() as one
// EVAL in the caller's order, evalsha() by the locally computed SHA-1, Script objects with named
// parameters, the _RO forms, script errors with their text, FUNCTION LOAD and FCALL.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

class ScriptingTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() { server_ = new RedisServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    server_->cli({"FLUSHALL"});
    server_->cli({"SCRIPT", "FLUSH"});
    server_->cli({"FUNCTION", "FLUSH"});
    server_->cli({"CONFIG", "RESETSTAT"});
    mux_ = Multiplexer::connect(config());
    db_ = mux_->database();
  }
  std::string config(std::string extra = "") const {
    return server_->address() + ",name=scripting-test,protocol=" + GetParam() + extra;
  }
  /// calls + rejected_calls of a command in INFO commandstats (0 when never called).
  static long long calls(const std::string& command) {
    const std::string stats = server_->cli({"INFO", "commandstats"});
    const std::string tag = "cmdstat_" + command + ":";
    const std::size_t at = stats.find(tag);
    if (at == std::string::npos) return 0;
    auto field = [&](const std::string& name) -> long long {
      const std::size_t f = stats.find(name + "=", at);
      return f == std::string::npos ? 0 : std::stoll(stats.substr(f + name.size() + 1));
    };
    return field("calls") + field("rejected_calls");
  }
  static RedisServer* server_;
  std::shared_ptr<Multiplexer> mux_;
  Database db_;
};
RedisServer* ScriptingTest::server_ = nullptr;

constexpr const char* kIncrBy = "return redis.call('INCRBY', KEYS[1], ARGV[1])";

TEST_P(ScriptingTest, EvalSendsTheTextOnceAndTheServerCachesItUnderTheLocalSha1) {
  EXPECT_EQ(db_.eval<long long>(kIncrBy, {"counter"}, {5}).get(), 5);
  EXPECT_EQ(db_.eval<long long>(Script(kIncrBy), {"counter"}, {2}).get(), 7);
  EXPECT_EQ(calls("eval"), 2);
  EXPECT_EQ(calls("evalsha"), 0);
  EXPECT_EQ(calls("script|load"), 0);
  // The server cached it under the SHA-1 computed here: evalsha() sends that alone.
  EXPECT_EQ(db_.script_exists({script_sha1(kIncrBy)}).get(), std::vector<bool>{true});
  EXPECT_EQ(db_.evalsha<long long>(Script(kIncrBy).sha1(), {"counter"}, {1}).get(), 8);
}

TEST_P(ScriptingTest, AScriptRunsBeforeWhatItsCallerSendsAfterItAlsoOnItsFirstUse) {
  // The server has never seen the script (its cache flushed each round): the caller's next
  // command must still run after it. (EVALSHA, NOSCRIPT, then EVAL would run the SET first.)
  auto admin = Multiplexer::connect(config(",allowAdmin=true"));
  for (int round = 0; round < 10; ++round) {
    admin->database().script_flush().get();
    Future<Reply> script =
        db_.eval("return redis.call('SET', KEYS[1], ARGV[1])", {"order"}, {"first"});
    Future<bool> after = db_.set("order", "second");
    script.get();
    after.get();
    EXPECT_EQ(db_.get("order").get(), std::optional<std::string>("second")) << "round " << round;
  }
}

TEST_P(ScriptingTest, EvalshaOfAScriptTheServerLostIsNoScriptAndDidNotRun) {
  const Script script(kIncrBy);
  EXPECT_EQ(db_.eval<long long>(script, {"k"}, {1}).get(), 1);
  EXPECT_EQ(db_.evalsha<long long>(script.sha1(), {"k"}, {1}).get(), 2);
  server_->cli({"SCRIPT", "FLUSH"});
  try {
    db_.evalsha<long long>(script.sha1(), {"k"}, {1}).get();
    FAIL() << "evalsha() of a flushed script must fail";
  } catch (const ServerError& e) {
    EXPECT_EQ(e.prefix(), "NOSCRIPT") << e.what();
  }
  EXPECT_EQ(db_.get("k").get(), std::optional<std::string>("2"));
  // eval() needs no cache: it runs, and loads it again.
  EXPECT_EQ(db_.eval<long long>(script, {"k"}, {1}).get(), 3);
  EXPECT_EQ(db_.script_exists({script.sha1()}).get(), std::vector<bool>{true});

  // SCRIPT FLUSH through redmux is an admin command.
  EXPECT_THROW(db_.script_flush().get(), AdminModeError);
}

TEST_P(ScriptingTest, ManyCallsInFlightRunInOrder) {
  // 50 calls of one script in flight at once, then(): each result in the order sent.
  const Script script("return redis.call('INCR', KEYS[1])");
  std::vector<Future<long long>> futures;
  for (int i = 0; i < 50; ++i) futures.push_back(db_.eval<long long>(script, {"n"}));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(futures[static_cast<std::size_t>(i)].get(), i + 1);
  std::promise<long long> seen;
  db_.eval<long long>(script, {"n"}).then([&](Result<long long> r) {
    seen.set_value(r ? *r : -1);
  });
  auto value = seen.get_future();
  ASSERT_EQ(value.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(value.get(), 51);
}

TEST_P(ScriptingTest, NamedParameters) {
  const auto transfer = Script::with_parameters(R"(
      local balance = tonumber(redis.call('GET', @from) or '0')
      if balance < tonumber(@amount) then
        return redis.error_reply('insufficient funds in ' .. @from)
      end
      redis.call('DECRBY', @from, @amount)
      return redis.call('INCRBY', @to, @amount))",
                                                {"from", "to"});
  EXPECT_EQ(transfer.key_names(), (std::vector<std::string>{"from", "to"}));
  EXPECT_EQ(transfer.arg_names(), (std::vector<std::string>{"amount"}));
  db_.set("acct:1", "100").get();
  EXPECT_EQ(
      db_.eval<long long>(transfer.bind({{"from", "acct:1"}, {"to", "acct:2"}, {"amount", 30}}))
          .get(),
      30);
  EXPECT_EQ(db_.get("acct:1").get(), std::optional<std::string>("70"));
  try {
    db_.eval(transfer.bind({{"from", "acct:1"}, {"to", "acct:2"}, {"amount", 1000}})).get();
    FAIL() << "the script's error reply must be an error";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("insufficient funds in acct:1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(transfer.bind({{"from", "a"}, {"to", "b"}}), InvalidArgumentError);
}

TEST_P(ScriptingTest, ScriptErrorsCarryTheirText) {
  try {
    db_.eval("return redis.call('NOSUCHCOMMAND')").get();
    FAIL();
  } catch (const ServerError& e) {
    // Redis: "Unknown Redis command called from script"; Valkey 8: "Unknown command called
    // from script".
    const std::string what = e.what();
    EXPECT_TRUE(what.find("Unknown Redis command") != std::string::npos ||
                what.find("Unknown command called from script") != std::string::npos)
        << what;
  }
  try {
    db_.eval("return +").get();  // compile error
    FAIL();
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("Error compiling script"), std::string::npos) << e.what();
  }
  try {
    db_.eval("return undefined_global.x").get();
    FAIL();
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("undefined_global"), std::string::npos) << e.what();
  }
  db_.hset("h", "f", "v").get();
  try {
    db_.eval("return redis.call('INCR', KEYS[1])", {"h"}).get();
    FAIL();
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
  // An error reply inside the script's table: prefix() is the server's first word, and the
  // message says which element it was.
  try {
    db_.eval<std::vector<std::string>>("return {'a', redis.error_reply('NOPERM denied')}").get();
    FAIL();
  } catch (const ServerError& e) {
    EXPECT_EQ(e.prefix(), "NOPERM") << e.what();
    EXPECT_STREQ(e.what(), "NOPERM denied (element 1) (reply to EVAL)");
  }
  // A refusal inside it does not make the script safe to retry: the script ran.
  const Result<std::vector<std::string>> nested =
      db_.eval<std::vector<std::string>>("return {'a', redis.error_reply('READONLY no')}").result();
  ASSERT_FALSE(nested.has_value());
  EXPECT_EQ(nested.error().code(), errc::server_error);
  EXPECT_FALSE(nested.error().safe_to_retry()) << nested.error().message();
  // Nor does a refusal a script returns itself, after writing.
  const Result<long long> said = db_.eval<long long>(
                                        "redis.call('INCR', KEYS[1]); "
                                        "return redis.error_reply('READONLY said by the script')",
                                        {"script:wrote"})
                                     .result();
  ASSERT_FALSE(said.has_value());
  EXPECT_EQ(said.error().message().rfind("READONLY said by the script", 0), 0u);
  EXPECT_FALSE(said.error().safe_to_retry()) << said.error().message();
  EXPECT_EQ(db_.get("script:wrote").get(), std::optional<std::string>("1"));
  // The server refusing the script's first write says so ("… script: <sha1>, on
  // @user_script:1."): nothing was written, and that is safe to retry.
  server_->cli({"CONFIG", "SET", "maxmemory", "1"});
  const Result<long long> refused =
      db_.eval<long long>("return redis.call('INCR', KEYS[1])", {"script:oom"}).result();
  server_->cli({"CONFIG", "SET", "maxmemory", "0"});
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find(" script: "), std::string::npos)
      << refused.error().message();
  EXPECT_TRUE(refused.error().safe_to_retry()) << refused.error().message();
  // Wrong arguments: a negative key count is the server's to refuse; a reply of the wrong
  // shape is an UnexpectedReplyError.
  EXPECT_THROW(db_.execute({"EVAL", "return 1", "-1"}).get(), ServerError);
  EXPECT_THROW(db_.eval<long long>("return 'text'").get(), UnexpectedReplyError);
  // evalsha() never retries.
  EXPECT_THROW(db_.evalsha(script_sha1("return 42")).get(), ServerError);
}

TEST_P(ScriptingTest, ResultTypes) {
  Reply table = db_.eval("return {1, 'two', {3}}").get();
  ASSERT_EQ(table.type(), ReplyType::Array);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].integer(), 1);
  EXPECT_EQ(table[1].string(), "two");
  EXPECT_EQ(db_.eval<std::vector<std::string>>("return ARGV", {}, {"a", "b"}).get(),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(db_.eval<std::optional<std::string>>("return false").get(), std::nullopt);
  EXPECT_EQ(db_.eval<std::string>("return redis.status_reply('FINE')").get(), "FINE");
  std::vector<std::string> keys{"k1", "k2"}, args{"x"};
  EXPECT_EQ(db_.eval<long long>("return #KEYS * 10 + #ARGV", keys, args).get(), 21);
  db_.eval<void>("redis.call('SET', KEYS[1], 'v')", {"void"}).get();
  EXPECT_EQ(db_.get("void").get(), std::optional<std::string>("v"));
}

TEST_P(ScriptingTest, ReadOnlyForms) {
  db_.set("ro", "value").get();
  EXPECT_EQ(db_.eval_ro<std::string>("return redis.call('GET', KEYS[1])", {"ro"}).get(), "value");
  const Script reader("return redis.call('STRLEN', KEYS[1])");
  EXPECT_EQ(db_.eval_ro<long long>(reader, {"ro"}).get(), 5);
  EXPECT_GE(calls("eval_ro"), 2);
  EXPECT_EQ(db_.evalsha_ro<long long>(reader.sha1(), {"ro"}).get(), 5);  // cached by EVAL_RO
  try {
    db_.eval_ro("return redis.call('SET', KEYS[1], 'x')", {"ro"}).get();
    FAIL() << "a write in a read-only script must fail";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("Write commands are not allowed"), std::string::npos)
        << e.what();
  }
}

TEST_P(ScriptingTest, ScriptLoadAndExists) {
  const Script script("return 'loaded'");
  EXPECT_EQ(db_.script_load(script.text()).get(), script.sha1());
  EXPECT_EQ(db_.script_exists({script.sha1(), script_sha1("other")}).get(),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(db_.evalsha<std::string>(script.sha1()).get(), "loaded");
  EXPECT_THROW(db_.script_load("return +").get(), ServerError);
}

TEST_P(ScriptingTest, BatchAndFireAndForgetSendTheText) {
  auto batch = db_.batch();
  auto a = batch.eval<long long>(kIncrBy, {"b"}, {3});
  auto b = batch.eval<long long>(Script(kIncrBy), {"b"}, {4});
  batch.execute();
  EXPECT_EQ(a.get(), 3);
  EXPECT_EQ(b.get(), 7);
  EXPECT_EQ(calls("evalsha"), 0);
  EXPECT_EQ(calls("eval"), 2);

  db_.eval("return redis.call('SET', KEYS[1], 'ff')", {"ff"}, {}, Flags::FireAndForget);
  EXPECT_EQ(db_.get("ff").get(), std::optional<std::string>("ff"));  // same connection, in order
}

constexpr const char* kLibrary = R"(#!lua name=counters
redis.register_function('bump', function(keys, args)
  return redis.call('INCRBY', keys[1], args[1])
end)
redis.register_function{function_name = 'peek', callback = function(keys, args)
  return redis.call('GET', keys[1])
end, flags = {'no-writes'}}
)";

TEST_P(ScriptingTest, Functions) {
  EXPECT_EQ(db_.function_load(kLibrary).get(), "counters");
  EXPECT_THROW(db_.function_load(kLibrary).get(), ServerError);  // exists, no REPLACE
  EXPECT_EQ(db_.function_load(kLibrary, true).get(), "counters");
  EXPECT_EQ(db_.fcall<long long>("bump", {"c"}, {5}).get(), 5);
  std::vector<std::string> keys{"c"}, args{"2"};
  EXPECT_EQ(db_.fcall<long long>("bump", keys, args).get(), 7);
  EXPECT_EQ(db_.fcall_ro<std::string>("peek", {"c"}).get(), "7");
  EXPECT_THROW(db_.fcall_ro("bump", {"c"}, {1}).get(), ServerError);  // not no-writes
  EXPECT_THROW(db_.fcall("nosuchfunction").get(), ServerError);
  EXPECT_THROW(db_.function_load("#!lua name=broken\nthis is not lua").get(), ServerError);

  db_.function_delete("counters").get();
  EXPECT_THROW(db_.fcall("bump", {"c"}, {1}).get(), ServerError);
  EXPECT_THROW(db_.function_delete("counters").get(), ServerError);

  db_.function_load(kLibrary).get();
  EXPECT_THROW(db_.function_flush().get(), AdminModeError);
  auto admin = Multiplexer::connect(config(",allowAdmin=true"));
  admin->database().function_flush().get();
  EXPECT_THROW(db_.fcall("bump", {"c"}, {1}).get(), ServerError);
}

INSTANTIATE_TEST_SUITE_P(Protocols, ScriptingTest, ::testing::Values("resp3", "resp2"));

}  // namespace
}  // namespace redmux
