// Transactions against a real redis-server: commit, every condition kind both ways, a lost
// WATCH race, EXECABORT, a runtime error inside EXEC, a non-default database, local
// refusals, optimistic-locking retries from several threads, a timeout after EXEC was sent.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "mux/transaction.hpp"  // set_transaction_test_hook
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

std::shared_ptr<Multiplexer> connect_to(const RedisServer& server, std::string extra = "") {
  return Multiplexer::connect(server.address() + ",name=redmux-test" + extra);
}

/// Removes the test hook however the test ends.
struct HookGuard {
  explicit HookGuard(std::function<void()> hook) {
    detail::set_transaction_test_hook(std::move(hook));
  }
  ~HookGuard() { detail::set_transaction_test_hook(nullptr); }
};

TEST(TransactionTest, CommitsAndEveryFutureGetsItsReply) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  Transaction tx = db.transaction();
  auto a = tx.incr("a");
  auto set = tx.set("b", "x");
  auto b = tx.get("b");
  EXPECT_EQ(tx.size(), 3u);
  TransactionResult result = tx.execute();
  EXPECT_TRUE(result);
  EXPECT_EQ(result.outcome, TransactionOutcome::Committed);
  EXPECT_TRUE(result.reason.empty());
  EXPECT_EQ(a.get(), 1);
  EXPECT_TRUE(set.get());
  EXPECT_EQ(b.get(), "x");
  EXPECT_EQ(tx.size(), 0u);
  // Reusable once executed.
  auto again = tx.incr("a");
  EXPECT_TRUE(tx.execute());
  EXPECT_EQ(again.get(), 2);
}

struct ConditionCase {
  const char* name;
  Condition condition;
  bool holds;
};

TEST(TransactionTest, EveryConditionKindHoldsOrNot) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  db.set("s", "v").get();
  db.hset("h", "f", "1").get();
  db.rpush("l", {"1", "2", "3"}).get();
  db.sadd("set", "m").get();
  db.zadd("z", 2.5, "m").get();
  const ConditionCase cases[] = {
      {"key_exists", Condition::key_exists("s"), true},
      {"key_exists missing", Condition::key_exists("nope"), false},
      {"key_not_exists", Condition::key_not_exists("nope"), true},
      {"key_not_exists present", Condition::key_not_exists("s"), false},
      {"string_equal", Condition::string_equal("s", "v"), true},
      {"string_equal other", Condition::string_equal("s", "w"), false},
      {"string_equal missing", Condition::string_equal("nope", "v"), false},
      {"string_equal wrong type", Condition::string_equal("h", "v"), false},
      {"hash_equal", Condition::hash_equal("h", "f", "1"), true},
      {"hash_equal other", Condition::hash_equal("h", "f", "2"), false},
      {"hash_equal wrong type", Condition::hash_equal("s", "f", "1"), false},
      {"hash_exists", Condition::hash_exists("h", "f"), true},
      {"hash_exists missing", Condition::hash_exists("h", "g"), false},
      {"hash_not_exists", Condition::hash_not_exists("h", "g"), true},
      {"hash_not_exists present", Condition::hash_not_exists("h", "f"), false},
      {"list_length equal", Condition::list_length("l", Comparison::Equal, 3), true},
      {"list_length equal wrong", Condition::list_length("l", Comparison::Equal, 2), false},
      {"list_length less", Condition::list_length("l", Comparison::Less, 4), true},
      {"list_length less wrong", Condition::list_length("l", Comparison::Less, 3), false},
      {"list_length greater", Condition::list_length("l", Comparison::Greater, 2), true},
      {"list_length greater wrong", Condition::list_length("l", Comparison::Greater, 3), false},
      {"list_length missing", Condition::list_length("nope", Comparison::Equal, 0), true},
      {"set_contains", Condition::set_contains("set", "m"), true},
      {"set_contains missing", Condition::set_contains("set", "x"), false},
      {"set_not_contains", Condition::set_not_contains("set", "x"), true},
      {"set_not_contains present", Condition::set_not_contains("set", "m"), false},
      {"score_equal", Condition::sorted_set_score_equal("z", "m", 2.5), true},
      {"score_equal other", Condition::sorted_set_score_equal("z", "m", 3), false},
      {"score_equal missing", Condition::sorted_set_score_equal("z", "x", 0), false},
  };
  long long runs = 0;
  for (const ConditionCase& c : cases) {
    SCOPED_TRACE(c.name);
    Transaction tx = db.transaction();
    EXPECT_EQ(tx.add_condition(Condition::key_exists("s")), 0u);  // always holds
    EXPECT_EQ(tx.add_condition(c.condition), 1u);
    auto ran = tx.incr("runs");
    TransactionResult result = tx.execute();
    EXPECT_EQ(result.committed(), c.holds) << result.reason;
    if (c.holds) {
      EXPECT_EQ(ran.get(), ++runs);
    } else {
      EXPECT_EQ(result.outcome, TransactionOutcome::ConditionFailed);
      EXPECT_EQ(result.failed_condition, std::optional<std::size_t>(1));
      EXPECT_NE(result.reason.find(std::string(c.condition.describe())), std::string::npos)
          << result.reason;
      EXPECT_THROW(ran.get(), TransactionAbortedError);
    }
  }
  EXPECT_EQ(db.get("runs").get(), std::to_string(runs));
}

TEST(TransactionTest, LostWatchRaceDoesNotCommit) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  db.set("balance", "100").get();
  // Another client changes the watched key after the conditions were read, before EXEC.
  HookGuard hook([&] { server.cli({"SET", "balance", "50"}); });
  Transaction tx = db.transaction();
  tx.add_condition(Condition::string_equal("balance", "100"));
  auto write = tx.set("balance", "90");
  TransactionResult result = tx.execute();
  EXPECT_FALSE(result);
  EXPECT_EQ(result.outcome, TransactionOutcome::WatchedKeyChanged);
  EXPECT_THROW(write.get(), TransactionAbortedError);
  EXPECT_EQ(db.get("balance").get(), "50");
}

TEST(TransactionTest, PlainWatchAlsoDetectsTheRace) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  HookGuard hook([&] { server.cli({"INCR", "watched"}); });
  Transaction tx = db.transaction();
  tx.watch("watched");
  auto write = tx.set("target", "x");
  EXPECT_EQ(tx.execute().outcome, TransactionOutcome::WatchedKeyChanged);
  EXPECT_THROW(write.get(), TransactionAbortedError);
  EXPECT_EQ(db.exists("target").get(), 0);
}

TEST(TransactionTest, ExecAbortReportsTheRejectedCommandAndAbortsTheOthers) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  Transaction tx = db.transaction();
  auto first = tx.incr("x");
  auto wrong_arity = tx.send<Reply>(CallOptions(), std::vector<Arg>{"SET", "only-a-key"});
  auto last = tx.incr("y");
  TransactionResult result = tx.execute();
  EXPECT_EQ(result.outcome, TransactionOutcome::Rejected);
  EXPECT_NE(result.reason.find("EXECABORT"), std::string::npos) << result.reason;
  EXPECT_NE(result.reason.find("(refused when queued: SET (command 2 of 3); ERR wrong number of "
                               "arguments"),
            std::string::npos)
      << result.reason;
  try {
    wrong_arity.get();
    FAIL() << "expected the server's refusal";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("wrong number of arguments"), std::string::npos)
        << e.what();
  }
  try {
    first.get();
    FAIL() << "expected an abort";
  } catch (const TransactionAbortedError& e) {
    EXPECT_NE(std::string(e.what()).find("(SET (command 2 of 3)), so EXEC discarded them all"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(last.get(), TransactionAbortedError);
  EXPECT_EQ(db.exists("x").get(), 0);
  EXPECT_EQ(db.exists("y").get(), 0);
}

TEST(TransactionTest, RuntimeErrorInsideExecFailsOnlyThatCommand) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  Transaction tx = db.transaction();
  auto set = tx.set("str", "v");
  auto wrong_type = tx.lpush("str", "x");
  auto counter = tx.incr("n");
  TransactionResult result = tx.execute();
  EXPECT_TRUE(result);
  EXPECT_TRUE(set.get());
  try {
    wrong_type.get();
    FAIL() << "expected WRONGTYPE";
  } catch (const ServerError& e) {
    EXPECT_EQ(e.prefix(), "WRONGTYPE");
  }
  EXPECT_EQ(counter.get(), 1);
}

TEST(TransactionTest, RunsOnItsDatabase) {
  RedisServer server;
  auto mux = connect_to(server);
  Transaction tx = mux->database(5).transaction();
  tx.add_condition(Condition::key_not_exists("k"));
  auto set = tx.set("k", "in-five");
  EXPECT_TRUE(tx.execute());
  EXPECT_TRUE(set.get());
  EXPECT_EQ(mux->database(5).get("k").get(), "in-five");
  EXPECT_EQ(mux->database(0).get("k").get(), std::nullopt);
  // The condition is read in database 5 too.
  mux->database(0).set("k", "in-zero").get();
  Transaction again = mux->database(5).transaction();
  again.add_condition(Condition::string_equal("k", "in-five"));
  auto del = again.del("k");
  EXPECT_TRUE(again.execute());
  EXPECT_EQ(del.get(), 1);
  EXPECT_EQ(mux->database(0).get("k").get(), "in-zero");
}

TEST(TransactionTest, ConnectionStateCommandIsRefusedAndNothingRuns) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  Transaction tx = db.transaction();
  auto incr = tx.incr("never");
  auto select = tx.send<Reply>(CallOptions(), std::vector<Arg>{"SELECT", "2"});
  EXPECT_THROW(select.get(), NotAllowedError);
  TransactionResult result = tx.execute();
  EXPECT_EQ(result.outcome, TransactionOutcome::Rejected);
  EXPECT_THROW(incr.get(), TransactionAbortedError);
  EXPECT_EQ(db.exists("never").get(), 0);
}

TEST(TransactionTest, FailedConditionUnwatchesBeforeTheConnectionIsReused) {
  RedisServer server;
  auto mux = connect_to(server, ",blockingPoolSize=1");  // every transaction: one connection
  Database db = mux->database();
  db.set("k", "v").get();
  Transaction first = db.transaction();
  first.add_condition(Condition::string_equal("k", "not-v"));
  EXPECT_EQ(first.execute().outcome, TransactionOutcome::ConditionFailed);
  // Were "k" still watched, this change would abort the next transaction on the connection.
  server.cli({"SET", "k", "changed"});
  Transaction second = db.transaction();
  auto set = second.set("other", "x");
  EXPECT_TRUE(second.execute());
  EXPECT_TRUE(set.get());
}

TEST(TransactionTest, OptimisticLockingFromSeveralThreadsLosesNoUpdate) {
  RedisServer server;
  auto mux = connect_to(server, ",blockingPoolSize=3");
  Database db = mux->database();
  db.set("count", "0").get();
  constexpr int kThreads = 4, kEach = 25;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      Database mine = mux->database();
      for (int i = 0; i < kEach; ++i) {
        for (;;) {  // read, then write only if nobody wrote in between
          const std::string seen = mine.get("count").get().value_or("0");
          Transaction tx = mine.transaction();
          tx.add_condition(Condition::string_equal("count", seen));
          tx.set("count", std::to_string(std::stoll(seen) + 1));
          if (tx.execute()) break;
          ++conflicts;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(db.get("count").get(), std::to_string(kThreads * kEach));
  // The shared connection was never taken: a plain command still answers at once.
  EXPECT_EQ(db.incr("after").get(), 1);
}

TEST(TransactionTest, ExecuteAsyncCompletesFromACallback) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  Transaction tx = db.transaction();
  auto value = tx.incr("async");
  std::promise<bool> committed;
  tx.execute_async().then([&](Result<TransactionResult> result) {
    committed.set_value(result && result->committed());
  });
  auto done = committed.get_future();
  ASSERT_EQ(done.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(done.get());
  EXPECT_EQ(value.get(), 1);
}

/// Runs one transaction, so that a dedicated connection is ready for the next one.
bool warm_up_a_dedicated_connection(Multiplexer& mux) {
  Transaction warm = mux.database().transaction();
  warm.incr("warm");
  return warm.execute().committed();
}

TEST(TransactionTest, ATimeoutAfterExecWasSentSaysSo) {
  // MULTI, the commands and EXEC leave in one write; the server is frozen, so every step
  // times out. The caller must learn that EXEC was sent (the transaction may commit later),
  // not MULTI's timeout alone.
  RedisServer server;
  auto mux = connect_to(server, ",asyncTimeout=300ms");
  ASSERT_TRUE(warm_up_a_dedicated_connection(*mux));
  server.pause();
  Transaction tx = mux->database().transaction();
  Future<long long> incr = tx.incr("frozen-tx");
  try {
    tx.execute();
    ADD_FAILURE() << "a transaction on a frozen server did not time out";
  } catch (const TimeoutError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("reply to EXEC"), std::string::npos) << message;
    EXPECT_NE(message.find("command was sent"), std::string::npos) << message;
  }
  EXPECT_EQ(incr.result().error().code(), errc::timeout);
  server.resume();
  // What the message warned of: the server runs it once it can.
  EXPECT_TRUE(test::wait_until([&] { return server.cli({"GET", "frozen-tx"}) == "1"; }));
}

/// The commands written on the multiplexer's dedicated connections so far.
std::uint64_t dedicated_commands_written(Multiplexer& mux) {
  std::uint64_t written = 0;
  for (const ConnectionStatus& connection : mux.status().per_connection) {
    if (connection.purpose == ConnectionStatus::Purpose::Dedicated) {
      written += connection.commands_written;
    }
  }
  return written;
}

TEST(TransactionTest, AConnectionLostDuringTheWatchRoundIsNotSent) {
  // WATCH and the condition's read are written to a frozen server, which is then killed:
  // WATCH's own outcome is unknown, but MULTI … EXEC were never written, so the transaction
  // did not run and the caller may retry it.
  RedisServer server;
  auto mux = connect_to(server, ",asyncTimeout=20s");
  ASSERT_TRUE(warm_up_a_dedicated_connection(*mux));
  server.pause();
  Transaction tx = mux->database().transaction();
  tx.add_condition(Condition::key_not_exists("absent"));
  Future<long long> push = tx.rpush("watch-round", {"1"});
  const std::uint64_t before = dedicated_commands_written(*mux);
  Future<TransactionResult> result = tx.execute_async();
  // WATCH and the read written (the socket took them), their replies never to come.
  ASSERT_TRUE(test::wait_until([&] { return dedicated_commands_written(*mux) >= before + 2; }));
  server.kill();
  Result<TransactionResult> outcome = result.result();
  ASSERT_FALSE(outcome.has_value());
  EXPECT_EQ(outcome.error().code(), errc::not_sent) << outcome.error().message();
  EXPECT_TRUE(outcome.error().safe_to_retry());
  EXPECT_NE(outcome.error().message().find("nothing of the transaction ran"), std::string::npos)
      << outcome.error().message();
  // WATCH's own "may or may not have run" is not repeated in a message that says nothing ran.
  EXPECT_EQ(outcome.error().message().find("may or may not have run"), std::string::npos)
      << outcome.error().message();
  EXPECT_EQ(push.result().error().code(), errc::not_sent);
}

TEST(TransactionTest, ATimeoutInTheWatchRoundSaysNothingRan) {
  RedisServer server;
  auto mux = connect_to(server, ",asyncTimeout=300ms");
  ASSERT_TRUE(warm_up_a_dedicated_connection(*mux));
  server.pause();
  Transaction tx = mux->database().transaction();
  tx.add_condition(Condition::key_not_exists("absent"));
  Future<long long> push = tx.rpush("watch-timeout", {"1"});
  try {
    tx.execute();
    ADD_FAILURE() << "a transaction on a frozen server did not time out";
  } catch (const TimeoutError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("reply to WATCH"), std::string::npos) << message;
    EXPECT_NE(message.find("nothing of the transaction ran"), std::string::npos) << message;
    EXPECT_EQ(message.find(".;"), std::string::npos) << message;
  }
  const Result<long long> pushed = push.result();
  EXPECT_EQ(pushed.error().code(), errc::timeout);
  EXPECT_TRUE(pushed.error().safe_to_retry()) << pushed.error().message();  // it never ran
  server.resume();
  EXPECT_EQ(mux->database().exists("absent").get(), 0);  // the server answers again
  EXPECT_EQ(server.cli({"LLEN", "watch-timeout"}), "0");
}

TEST(TransactionTest, DestroyedWithoutExecuteFailsItsFutures) {
  RedisServer server;
  auto mux = connect_to(server);
  Future<long long> orphan;
  {
    Transaction tx = mux->database().transaction();
    orphan = tx.incr("never");
  }
  try {
    orphan.get();
    FAIL() << "expected not_sent";
  } catch (const ConnectionError& e) {
    EXPECT_TRUE(e.never_sent());
  }
  EXPECT_EQ(mux->database().exists("never").get(), 0);
}

}  // namespace
}  // namespace redmux
