// Multiplexer::close(deadline) against a real redis-server: new commands are refused at
// once; commands queued and in flight (and a blocking command) finish before it returns;
// what the deadline cuts short fails with an error saying so, and commands never written do
// not run later; pub/sub messages already received reach their handlers first.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

std::shared_ptr<Multiplexer> connect_to(const RedisServer& server, std::string extra = "") {
  return Multiplexer::connect(server.address() + ",name=redmux-close-test" + extra);
}

// True once `mux` refuses a new command because it is closing (the close has begun). The
// probe gives up after 50 ms while the server is paused (and may run when it resumes).
bool refuses_new_commands(Multiplexer& mux) {
  CallOptions options;
  options.timeout = 50ms;
  Result<long long> refused = mux.database().incr("close:probe", options).result();
  return !refused && refused.error().code() == errc::shut_down;
}

TEST(CloseTest, DeadlineLetsQueuedAndInFlightCommandsFinish) {
  RedisServer server;
  auto mux = connect_to(server, ",asyncTimeout=20000");
  Database db = mux->database();
  ASSERT_EQ(db.incr("close:n").get(), 1);
  // The server stops answering: the INCRs wait, some written (in flight), some queued.
  server.pause();
  constexpr int kCommands = 200;
  std::vector<Future<long long>> incrs;
  for (int i = 0; i < kCommands; ++i) incrs.push_back(db.incr("close:n"));
  auto closing = std::async(std::launch::async, [&] { return mux->close(20s); });
  ASSERT_TRUE(test::wait_until([&] { return refuses_new_commands(*mux); }));
  EXPECT_EQ(db.incr("close:late").result().error().code(), errc::shut_down);
  EXPECT_EQ(closing.wait_for(0ms), std::future_status::timeout) << "close() did not wait";
  server.resume();
  const CloseReport report = closing.get();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.commands_failed, 0u);
  for (int i = 0; i < kCommands; ++i) EXPECT_EQ(incrs[i].get(), i + 2);  // in order, each once
  EXPECT_EQ(server.cli({"GET", "close:n"}), std::to_string(kCommands + 1));
  EXPECT_EQ(server.cli({"GET", "close:late"}), "") << "a command refused by close() ran";
}

TEST(CloseTest, DeadlineWaitsForABlockingCommandInFlight) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  auto popped = db.blpop("close:list", 0ms);  // blocks until something is pushed
  ASSERT_TRUE(test::wait_until([&] {
    return server.cli({"CLIENT", "LIST"}).find("cmd=blpop") != std::string::npos;
  }));
  auto closing = std::async(std::launch::async, [&] { return mux->close(20s); });
  ASSERT_TRUE(test::wait_until([&] { return refuses_new_commands(*mux); }));
  server.cli({"RPUSH", "close:list", "book"});
  const CloseReport report = closing.get();
  EXPECT_TRUE(report.drained);
  auto element = popped.get();
  ASSERT_TRUE(element.has_value());
  EXPECT_EQ(element->element, "book");
}

TEST(CloseTest, WhatTheDeadlineCutsShortFailsAndNeverRunsLater) {
  RedisServer server;
  auto mux = connect_to(server, ",asyncTimeout=20000");
  Database db = mux->database();
  ASSERT_TRUE(db.set("close:seq", "").get());
  server.pause();
  // A value larger than the socket buffers both ways: its write cannot finish while the
  // server is paused, so the APPENDs behind it stay queued, never written.
  const std::string big(32 << 20, 'x');
  auto big_set = db.set("close:big", big);
  constexpr int kCommands = 50;
  std::vector<Future<long long>> appends;
  for (int i = 0; i < kCommands; ++i) {
    appends.push_back(db.append("close:seq", std::to_string(i) + ","));
  }
  const auto started = std::chrono::steady_clock::now();
  const CloseReport report = mux->close(300ms);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 300ms);
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.commands_failed, static_cast<std::size_t>(kCommands + 1));
  const std::string note = "close(deadline): its deadline passed with 51 commands not completed";
  Result<bool> set_result = big_set.result();
  ASSERT_FALSE(set_result);
  EXPECT_NE(set_result.error().message().find(note), std::string::npos)
      << set_result.error().message();
  for (auto& append : appends) {
    Result<long long> result = append.result();
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code(), errc::shut_down) << result.error().message();
    EXPECT_NE(result.error().message().find("APPEND not sent: the multiplexer was closed (" + note),
              std::string::npos)
        << result.error().message();
  }
  server.resume();
  // The server sees the SET cut short, then the end of the connection: nothing it was
  // told "not sent" ever runs.
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  EXPECT_EQ(server.cli({"GET", "close:seq"}), "");
  EXPECT_EQ(server.cli({"EXISTS", "close:big"}), "0");
}

// close() without a deadline while a large batch is being written: what may have reached the
// socket is outcome_unknown, never not_sent. Counted on the server once it has let the
// connection go: every INCR reported not sent (or shut_down) must not have run.
TEST(CloseTest, ClosingAtOnceNeverCallsACommandThatRanNotSent) {
  RedisServer server;
  for (int round = 0; round < 3; ++round) {
    auto mux = connect_to(server);
    Database db = mux->database();
    const std::string key = "close:now:" + std::to_string(round);
    constexpr long long kCommands = 100000;
    Batch batch = db.batch();
    std::vector<Future<long long>> incrs;
    incrs.reserve(kCommands);
    for (long long i = 0; i < kCommands; ++i) incrs.push_back(batch.incr(key));
    batch.execute();
    mux->close();
    long long ok = 0, unknown = 0, not_run = 0;
    for (auto& incr : incrs) {
      Result<long long> result = incr.result();
      if (result) {
        ++ok;
      } else if (result.error().code() == errc::outcome_unknown) {
        ++unknown;
      } else {
        EXPECT_TRUE(result.error().code() == errc::not_sent ||
                    result.error().code() == errc::shut_down)
            << result.error().message();
        ++not_run;
      }
    }
    ASSERT_TRUE(test::wait_until([&] {
      return server.cli({"CLIENT", "LIST"}).find("name=redmux-close-test") == std::string::npos;
    }));
    const std::string counted = server.cli({"GET", key});
    const long long ran = counted.empty() ? 0 : std::stoll(counted);
    EXPECT_GE(ran, ok) << "round " << round;
    EXPECT_LE(ran, ok + unknown) << "round " << round << ": " << not_run << " reported not sent, "
                                 << ran - ok << " ran without a reply";
  }
}

TEST(CloseTest, PubSubHandlersRunEveryMessageReceivedBeforeClosing) {
  RedisServer server;
  auto mux = connect_to(server);
  std::atomic<int> handled{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Subscription subscription = mux->subscriber().subscribe("close:events", [&](const Message&) {
    released.wait();  // a slow handler: the messages pile up in its buffer
    ++handled;
  });
  subscription.confirmed().get();
  constexpr int kMessages = 20;
  for (int i = 0; i < kMessages; ++i) server.cli({"PUBLISH", "close:events", std::to_string(i)});
  ASSERT_TRUE(test::wait_until([&] { return mux->subscriber().status().messages == kMessages; }));
  auto closing = std::async(std::launch::async, [&] { return mux->close(20s); });
  ASSERT_TRUE(test::wait_until([&] { return refuses_new_commands(*mux); }));
  EXPECT_EQ(handled.load(), 0);
  release.set_value();
  const CloseReport report = closing.get();
  EXPECT_TRUE(report.drained);
  EXPECT_EQ(report.messages_undelivered, 0u);
  EXPECT_EQ(handled.load(), kMessages);
}

TEST(CloseTest, DeadlineReportsMessagesLeftUndelivered) {
  RedisServer server;
  auto mux = connect_to(server);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> entered{false};
  Subscription subscription = mux->subscriber().subscribe("close:events", [&](const Message&) {
    entered = true;
    released.wait();
  });
  subscription.confirmed().get();
  constexpr int kMessages = 5;
  for (int i = 0; i < kMessages; ++i) server.cli({"PUBLISH", "close:events", std::to_string(i)});
  ASSERT_TRUE(test::wait_until([&] { return mux->subscriber().status().messages == kMessages; }));
  ASSERT_TRUE(test::wait_until([&] { return entered.load(); }));  // the first handler runs
  auto closing = std::async(std::launch::async, [&] { return mux->close(200ms); });
  // The close waits for the handler running at the deadline (it is not interrupted).
  EXPECT_EQ(closing.wait_for(400ms), std::future_status::timeout);
  release.set_value();
  const CloseReport report = closing.get();
  EXPECT_FALSE(report.drained);
  EXPECT_EQ(report.commands_failed, 0u);
  EXPECT_EQ(report.messages_undelivered, static_cast<std::size_t>(kMessages - 1));  // one runs
}

TEST(CloseTest, NoHandlerRunsOnceCloseReturnsAndOneCutShortIsNotDrained) {
  // One message, its handler still running at the deadline: nothing is left in a buffer,
  // but the close was cut short, and it returns only once the handler has (the application
  // may then free what the handler uses). The same for the hard close().
  for (const bool graceful : {true, false}) {
    SCOPED_TRACE(graceful ? "close(200ms)" : "close()");
    RedisServer server;
    auto mux = connect_to(server);
    std::atomic<bool> entered{false};
    std::atomic<bool> returned{false};
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    Subscription subscription = mux->subscriber().subscribe("close:one", [&](const Message&) {
      entered = true;
      released.wait();
      returned = true;
    });
    subscription.confirmed().get();
    server.cli({"PUBLISH", "close:one", "x"});
    ASSERT_TRUE(test::wait_until([&] { return entered.load(); }));
    std::atomic<bool> returned_when_closed{false};
    auto closing = std::async(std::launch::async, [&] {
      CloseReport report;
      if (graceful) {
        report = mux->close(200ms);
      } else {
        mux->close();
      }
      returned_when_closed = returned.load();
      return report;
    });
    EXPECT_EQ(closing.wait_for(400ms), std::future_status::timeout)
        << "close returned while a handler was running";
    release.set_value();
    const CloseReport report = closing.get();
    EXPECT_TRUE(returned_when_closed.load());
    if (graceful) {
      EXPECT_FALSE(report.drained);
      EXPECT_EQ(report.messages_undelivered, 0u);
    }
  }
}

TEST(CloseTest, SubscribingWhileClosingIsRefused) {
  RedisServer server;
  auto mux = connect_to(server, ",asyncTimeout=20000");
  server.pause();
  auto pending = mux->database().incr("close:n");
  auto closing = std::async(std::launch::async, [&] { return mux->close(20s); });
  ASSERT_TRUE(test::wait_until([&] { return refuses_new_commands(*mux); }));
  EXPECT_THROW(mux->subscriber().subscribe("close:late", [](const Message&) {}), RedmuxError);
  server.resume();
  EXPECT_TRUE(closing.get().drained);
  EXPECT_EQ(pending.get(), 1);
}

}  // namespace
}  // namespace redmux
