// Blocking commands against a real redis-server: they run on dedicated connections (never
// the shared one), are woken by other callers, queue when the pool is exhausted, time out
// into nullopt rather than an error, replace a connection whose command timed out, and work
// after a server restart.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using Clock = std::chrono::steady_clock;

std::shared_ptr<Multiplexer> connect_to(const RedisServer& server, std::string extra = "") {
  return Multiplexer::connect(server.address() + ",name=redmux-test" + extra);
}

long long blocked_clients(const RedisServer& server) {
  return server.info_int("blocked_clients");
}

/// Connections whose client name is redmux-test (the shared one plus dedicated ones).
int named_connections(const RedisServer& server) {
  const std::string list = server.cli({"CLIENT", "LIST"});
  int count = 0;
  for (std::size_t at = list.find("name=redmux-test "); at != std::string::npos;
       at = list.find("name=redmux-test ", at + 1)) {
    ++count;
  }
  return count;
}

long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

TEST(BlockingTest, BlpopWaitingTwoSecondsDoesNotDelayIncrs) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  const auto start = Clock::now();
  auto popped = db.blpop("empty-queue", 2000ms);
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 1; }));
  long long worst_ms = 0;
  int incrs = 0;
  while (!popped.ready()) {
    const auto before = Clock::now();
    EXPECT_EQ(db.incr("counter").get(), ++incrs);
    worst_ms = std::max(worst_ms, ms_since(before));
  }
  const std::optional<KeyedElement> result = popped.get();
  const long long blpop_ms = ms_since(start);
  EXPECT_EQ(result, std::nullopt);  // blocking time ran out: not an error
  EXPECT_GE(blpop_ms, 1900);
  EXPECT_GT(incrs, 20) << "INCRs should have kept running while BLPOP blocked";
  EXPECT_LT(worst_ms, 500) << "an INCR waited behind the BLPOP";
}

TEST(BlockingTest, BlpopIsWokenByRpushFromAnotherThread) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  auto popped = db.blpop("jobs", 10s);
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 1; }));
  std::thread producer([&] { EXPECT_EQ(mux->database().rpush("jobs", "job-1").get(), 1); });
  producer.join();
  ASSERT_TRUE(popped.wait_for(5s));
  EXPECT_EQ(popped.get(), (KeyedElement{"jobs", "job-1"}));
}

TEST(BlockingTest, BlockersBeyondThePoolCapQueueAndAllComplete) {
  RedisServer server;
  auto mux = connect_to(server, ",blockingPoolSize=2");
  Database db = mux->database();
  std::vector<Future<std::optional<KeyedElement>>> pops;
  for (int i = 0; i < 5; ++i) pops.push_back(db.blpop("q" + std::to_string(i), 10s));
  // Only two can block on the server at a time; the others wait for a connection.
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 2; }));
  EXPECT_EQ(named_connections(server), 3);  // shared + 2 dedicated
  for (int i = 0; i < 5; ++i) {
    db.rpush("q" + std::to_string(i), "v" + std::to_string(i)).get();
    EXPECT_LE(blocked_clients(server), 2);
  }
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(pops[i].wait_for(5s)) << i;
    EXPECT_EQ(pops[i].get(), (KeyedElement{"q" + std::to_string(i), "v" + std::to_string(i)}));
  }
  EXPECT_LE(named_connections(server), 3);
  EXPECT_EQ(db.incr("still-fine").get(), 1);
}

TEST(BlockingTest, ExhaustedPoolTimesOutWithAnExplanation) {
  RedisServer server;
  auto mux = connect_to(server, ",blockingPoolSize=1,asyncTimeout=300ms");
  Database db = mux->database();
  auto holder = db.blpop("held", 0ms);  // forever: holds the only dedicated connection
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 1; }));
  auto waiting = db.blpop("other", 100ms);
  try {
    waiting.get();
    FAIL() << "expected a timeout";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("waiting for a dedicated connection"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("blockingPoolSize=1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(mux->status().timeouts, 1u);  // one per TimeoutError a caller got
  EXPECT_EQ(db.rpush("held", "x").get(), 1);
  EXPECT_EQ(holder.get(), (KeyedElement{"held", "x"}));
  EXPECT_EQ(db.blpop("other", 100ms).get(), std::nullopt);  // the connection is free again
}

TEST(BlockingTest, AForeverBlockWithACallTimeoutGivesTheServerThatTimeoutSoItTakesNothingLater) {
  RedisServer server;
  auto mux = connect_to(server, ",blockingPoolSize=1");
  Database db = mux->database();
  // BLPOP … 0 with a call timeout: sent as BLPOP … 0.1, so the server gives up itself and
  // answers nil. Left blocking, it could take the element pushed right after the caller was
  // told the call was over, and no one would receive it.
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(db.blpop("jobs", 0ms, CallOptions(Flags::None, 100ms)).get(), std::nullopt);
    EXPECT_GE(ms_since(start), 90);
    EXPECT_EQ(db.rpush("jobs", "job").get(), 1);
    ASSERT_EQ(db.llen("jobs").get(), 1) << "round " << i << ": the element went to a BLPOP "
                                        << "whose caller had been told it was over";
    db.del("jobs").get();
  }
  // XREAD BLOCK 0 alike, in milliseconds.
  const auto start = Clock::now();
  EXPECT_TRUE(db.command<Reply>(CallOptions(Flags::None, 100ms), "XREAD", "BLOCK", "0", "STREAMS",
                                "stream", "$")
                  .get()
                  .is_null());
  EXPECT_GE(ms_since(start), 90);
  EXPECT_EQ(blocked_clients(server), 0);
}

TEST(BlockingTest, ABlockerTimedOutOnAFrozenServerReplacesItsConnection) {
  RedisServer server;
  auto mux = connect_to(server, ",blockingPoolSize=1");
  Database db = mux->database();
  EXPECT_EQ(db.blpop("warm", 10ms).get(), std::nullopt);  // the dedicated connection exists
  server.pause();
  auto gave_up = db.blpop("never", 100ms, CallOptions(Flags::None, 200ms));
  EXPECT_THROW(gave_up.get(), TimeoutError);
  server.resume();
  // The connection whose state is unknown is closed, not reused.
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 0; }));
  EXPECT_EQ(db.rpush("next", "y").get(), 1);
  EXPECT_EQ(db.blpop("next", 1s).get(), (KeyedElement{"next", "y"}));
  EXPECT_EQ(db.llen("never").get(), 0);
}

TEST(BlockingTest, WaitReportsZeroReplicasOnAStandaloneServer) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  const auto start = Clock::now();
  EXPECT_EQ(db.wait(1, 200ms).get(), 0);
  EXPECT_GE(ms_since(start), 150);
  EXPECT_EQ(db.wait(0, 0ms).get(), 0);
}

TEST(BlockingTest, EveryTypedBlockingCommandAnswers) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  db.rpush("l", {"a", "b", "c", "d", "e"}).get();
  EXPECT_EQ(db.blpop({"missing", "l"}, 1s).get(), (KeyedElement{"l", "a"}));
  EXPECT_EQ(db.brpop("l", 1s).get(), (KeyedElement{"l", "e"}));
  EXPECT_EQ(db.blmove("l", "m", ListEnd::Left, ListEnd::Right, 1s).get(), "b");
  EXPECT_EQ(db.brpoplpush("l", "m", 1s).get(), "d");
  auto many = db.blmpop({"l"}, ListEnd::Left, 1s, 5).get();
  ASSERT_TRUE(many);
  EXPECT_EQ(many->key, "l");
  EXPECT_EQ(many->elements, (std::vector<std::string>{"c"}));
  EXPECT_EQ(db.blmpop({"l"}, ListEnd::Left, 100ms).get(), std::nullopt);
  db.zadd("z", 1.5, "low").get();
  db.zadd("z", 2.5, "mid").get();
  db.zadd("z", 3.5, "high").get();
  EXPECT_EQ(db.bzpopmin("z", 1s).get(), (KeyedScoredMember{"z", "low", 1.5}));
  EXPECT_EQ(db.bzpopmax({"z"}, 1s).get(), (KeyedScoredMember{"z", "high", 3.5}));
  auto popped = db.bzmpop({"z"}, ScoreEnd::Min, 1s, 2).get();
  ASSERT_TRUE(popped);
  EXPECT_EQ(popped->key, "z");
  EXPECT_EQ(popped->members, (std::vector<ScoredMember>{{"mid", 2.5}}));
  EXPECT_EQ(db.bzpopmin("z", 100ms).get(), std::nullopt);
  // BLMOVE appended "b" at the tail; BRPOPLPUSH pushed "d" at the head.
  EXPECT_EQ(db.lrange("m", 0, -1).get(), (std::vector<std::string>{"d", "b"}));
}

TEST(BlockingTest, TheLongestTimeoutMeansForeverAndTheServerTakesIt) {
  // milliseconds::max() would overflow the server's clock ("timeout is out of range"): the
  // typed commands send it as 0, forever.
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  constexpr auto forever = std::chrono::milliseconds::max();
  auto popped = db.blpop("jobs", forever);
  auto moved = db.blmove("src", "dst", ListEnd::Left, ListEnd::Right, forever);
  auto read = db.xread_block({{"s", "$"}}, forever);
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 3; }));
  server.cli({"RPUSH", "jobs", "job-1"});
  server.cli({"RPUSH", "src", "x"});
  server.cli({"XADD", "s", "*", "f", "v"});
  EXPECT_EQ(popped.get(), (KeyedElement{"jobs", "job-1"}));
  EXPECT_EQ(moved.get(), "x");
  EXPECT_EQ(read.get().size(), 1u);
  EXPECT_EQ(db.wait(0, forever).get(), 0);
}

TEST(BlockingTest, GenericSendOfABlockingCommandGoesToADedicatedConnection) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  const Arg xread[] = {"XREAD", "BLOCK", "1000", "STREAMS", "s", "$"};
  auto read = db.send<Reply>(CallOptions(), xread);
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 1; }));
  EXPECT_EQ(db.incr("n").get(), 1);  // the shared connection is free
  server.cli({"XADD", "s", "*", "f", "v"});
  Reply reply = read.get();
  ASSERT_FALSE(reply.is_null());
  EXPECT_EQ(reply.size(), 1u);
}

TEST(BlockingTest, AGroupOrConsumerCalledBlockIsNotTheBlockOption) {
  // Not blocking: it rides the shared connection, and takes no dedicated one.
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  server.cli({"XGROUP", "CREATE", "BLOCK", "BLOCK", "0", "MKSTREAM"});
  server.cli({"XADD", "BLOCK", "*", "f", "v"});
  const Arg read[] = {"XREADGROUP", "GROUP", "BLOCK", "BLOCK", "STREAMS", "BLOCK", ">"};
  EXPECT_EQ(db.send<Reply>(CallOptions(), read).get().size(), 1u);
  for (const ConnectionStatus& connection : mux->status().per_connection) {
    EXPECT_NE(connection.purpose, ConnectionStatus::Purpose::Dedicated);
  }
  // With the option, a block time of 0 and a call timeout: the server gets the call's
  // timeout as its block time, and the call ends empty, not with a timeout of redmux's.
  const Arg block[] = {"XREADGROUP", "GROUP", "BLOCK", "BLOCK", "BLOCK", "0", "STREAMS", "BLOCK",
                       ">"};
  Reply empty = db.send<Reply>(CallOptions(Flags::None, 300ms), block).get();
  EXPECT_TRUE(empty.is_null());
}

TEST(BlockingTest, ABlockingCommandFireAndForgetIsRefused) {
  // It would take an element nobody receives.
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  auto popped = db.blpop("q", 0ms, Flags::FireAndForget);
  try {
    popped.get();
    ADD_FAILURE() << "a fire-and-forget BLPOP was accepted";
  } catch (const NotAllowedError& e) {
    EXPECT_NE(std::string(e.what()).find("BLPOP refused: a blocking command's reply"),
              std::string::npos)
        << e.what();
  }
  server.cli({"RPUSH", "q", "kept"});
  EXPECT_EQ(server.cli({"LLEN", "q"}), "1");
}

TEST(BlockingTest, BlockingCommandsUseTheirDatabase) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db3 = mux->database(3);
  auto popped = db3.blpop("dbq", 5s);
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 1; }));
  mux->database(0).rpush("dbq", "wrong-db").get();
  EXPECT_FALSE(popped.wait_for(200ms));
  db3.rpush("dbq", "right-db").get();
  EXPECT_EQ(popped.get(), (KeyedElement{"dbq", "right-db"}));
  EXPECT_EQ(mux->database(0).llen("dbq").get(), 1);
}

TEST(BlockingTest, BatchRefusesBlockingCommands) {
  RedisServer server;
  auto mux = connect_to(server);
  Batch batch = mux->database().batch();
  auto popped = batch.send<Reply>(CallOptions(), std::vector<Arg>{"BLPOP", "k", "1"});
  batch.execute();
  try {
    popped.get();
    FAIL() << "expected a refusal";
  } catch (const NotAllowedError& e) {
    EXPECT_NE(std::string(e.what()).find("dedicated connection"), std::string::npos) << e.what();
  }
}

TEST(BlockingTest, WorksAfterAServerRestart) {
  RedisServer server;
  auto mux = connect_to(server, ",blockingPoolSize=2");
  Database db = mux->database();
  EXPECT_EQ(db.blpop("before", 100ms).get(), std::nullopt);  // opens a dedicated connection
  server.restart();
  // Commands issued while the connections reconnect wait for them (backlogPolicy=queue).
  std::optional<KeyedElement> popped;
  ASSERT_TRUE(test::wait_until(
      [&] {
        try {
          db.rpush("after", "z").get();
          popped = db.blpop("after", 1s).get();
          return popped.has_value();
        } catch (const ConnectionError&) {
          return false;  // a command that was in flight when the server went away
        }
      },
      20s, 100ms));
  EXPECT_EQ(popped, (KeyedElement{"after", "z"}));
}

TEST(BlockingTest, CloseFailsBlockedCommands) {
  RedisServer server;
  auto mux = connect_to(server);
  auto popped = mux->database().blpop("forever", 0ms);
  ASSERT_TRUE(test::wait_until([&] { return blocked_clients(server) == 1; }));
  mux->close();
  ASSERT_TRUE(popped.wait_for(5s));
  EXPECT_THROW(popped.get(), ConnectionError);
}

}  // namespace
}  // namespace redmux
