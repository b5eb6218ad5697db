// maxQueuedCommands against a server that stops answering (SIGSTOP): a command that timed
// out gives its slot back at once — only its entry waits for the late reply, to skip it — so
// a stalled server does not turn timeouts into QueueFullErrors; and a command that waited
// its whole deadline for room (queueFullPolicy=wait) says so.
#include <gtest/gtest.h>

#include <vector>

#include "fault/fault_util.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using fault::code_of;

TEST(QueueSlotsTest, TimedOutCommandsGiveTheirSlotsBackWhileTheServerIsStalled) {
  test::RedisServer server;
  // The per-call timeout is short, asyncTimeout long: the health check (2 × asyncTimeout
  // without a read) does not replace the connection during the test.
  auto mux = fault::connect_to(server.address(), ",maxQueuedCommands=4,asyncTimeout=30000");
  Database db = mux->database();
  ASSERT_EQ(db.incr("n").get(), 1);
  server.pause();
  std::vector<Future<long long>> first;
  for (int i = 0; i < 4; ++i) first.push_back(db.incr("n", CallOptions(Flags::None, 200ms)));
  for (auto& f : first) {
    Result<long long> r = f.result();
    ASSERT_EQ(code_of(r), errc::timeout) << (r ? "a value" : r.error().message());
    EXPECT_NE(r.error().message().find("was sent"), std::string::npos) << r.error().message();
  }
  // Their replies have not come (the server is stopped), yet their slots are free again.
  MultiplexerStatus status = mux->status();
  EXPECT_EQ(status.outstanding, 0u) << mux->status_text();
  EXPECT_EQ(status.in_flight, 0u) << mux->status_text();  // nobody waits for those replies
  std::vector<Future<long long>> second;
  for (int i = 0; i < 4; ++i) second.push_back(db.incr("n"));
  for (auto& f : second) {
    EXPECT_FALSE(f.ready() && code_of(f.result()) == errc::queue_full)
        << f.result().error().message();
  }
  EXPECT_EQ(mux->status().queue_full, 0u);
  EXPECT_EQ(mux->status().outstanding, 4u);
  server.resume();
  // The late replies of the first four are skipped (and give nothing back twice); the
  // second four get theirs, in order after them.
  for (std::size_t i = 0; i < second.size(); ++i) {
    EXPECT_EQ(second[i].get(), static_cast<long long>(6 + i));
  }
  ASSERT_TRUE(test::wait_until([&] { return mux->status().outstanding == 0; }));
  status = mux->status();
  EXPECT_EQ(status.timeouts, 4u);
  EXPECT_EQ(status.queued + status.in_flight, 0u);
  // Room for exactly maxQueuedCommands again: not one more (no slot was given back twice).
  server.pause();
  std::vector<Future<long long>> third;
  for (int i = 0; i < 5; ++i) third.push_back(db.incr("n"));
  ASSERT_TRUE(third[4].ready());
  EXPECT_EQ(code_of(third[4].result()), errc::queue_full);
  server.resume();
  for (int i = 0; i < 4; ++i) EXPECT_GT(third[i].get(), 9);
}

TEST(QueueSlotsTest, ACommandThatWaitedItsWholeDeadlineForRoomSaysSo) {
  test::RedisServer server;
  auto mux = fault::connect_to(server.address(),
                               ",maxQueuedCommands=1,queueFullPolicy=wait,asyncTimeout=30000");
  Database db = mux->database();
  server.pause();
  Future<long long> holder = db.incr("n");  // holds the only slot while the server is stopped
  Result<long long> waited = db.incr("n", CallOptions(Flags::None, 300ms)).result();
  ASSERT_EQ(code_of(waited), errc::queue_full);
  const std::string message = waited.error().message();
  EXPECT_EQ(message.rfind("INCR refused: waited ", 0), 0u) << message;
  EXPECT_NE(message.find(" ms for room in the queue, until its deadline: 1 commands are already "
                         "queued or awaiting replies (maxQueuedCommands=1, "
                         "queueFullPolicy=wait)"),
            std::string::npos)
      << message;
  EXPECT_TRUE(waited.error().safe_to_retry());
  server.resume();
  EXPECT_EQ(holder.get(), 1);
}

}  // namespace
}  // namespace redmux
