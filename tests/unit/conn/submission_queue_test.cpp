#include "conn/submission_queue.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "redmux/convert.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

PendingCommand caller(FutureState<long long>* state, Clock::time_point deadline) {
  PendingCommand c;
  c.state = state;
  c.name = "INCR";
  c.deadline = deadline;
  return c;
}

PendingCommand fire_and_forget() {
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  ff.deadline = Clock::time_point::max();
  return ff;
}

TEST(SubmissionQueueTest, FirstPushWakesLaterOnesDoNotUntilTaken) {
  SubmissionQueue queue;
  const Arg args[] = {"PING"};
  const PendingCommand ff = fire_and_forget();
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::QueuedWake);
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::Queued);
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  queue.take(bytes, taken, dropped);
  EXPECT_EQ(bytes, "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[1].bytes_begin, 14u);
  // Still "being looked after" until a take finds the queue empty.
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::Queued);
  queue.take(bytes, taken, dropped);
  queue.take(bytes, taken, dropped);
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::QueuedWake);
}

TEST(SubmissionQueueTest, TakeAtLeastLeavesTooFewQueuedAndKeepsTheWriterRole) {
  SubmissionQueue queue;
  const Arg args[] = {"PING"};
  const PendingCommand ff = fire_and_forget();
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::QueuedWake);
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  EXPECT_FALSE(queue.take(bytes, taken, dropped, 2));
  EXPECT_TRUE(bytes.empty());
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(queue.snapshot().commands, 1u);
  // The writer is still the I/O thread that declined: a push does not wake it again.
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::Queued);
  EXPECT_TRUE(queue.take(bytes, taken, dropped, 2));
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_EQ(bytes, "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n");
}

TEST(SubmissionQueueTest, DatabaseSwitchInsertsSelectOnlyWhenItChanges) {
  SubmissionQueue queue(0);
  const Arg args[] = {"GET", "k"};
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  queue.push(0, args, ff);
  queue.push(3, args, ff);
  queue.push(3, args, ff);
  queue.push(0, args, ff);
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  queue.take(bytes, taken, dropped);
  ASSERT_EQ(taken.size(), 6u);
  EXPECT_EQ(taken[1].name, "SELECT");
  EXPECT_EQ(taken[1].kind, PendingKind::Internal);
  EXPECT_EQ(taken[4].name, "SELECT");
  EXPECT_NE(bytes.find("$6\r\nSELECT\r\n$1\r\n3\r\n"), std::string::npos);
  EXPECT_NE(bytes.find("$6\r\nSELECT\r\n$1\r\n0\r\n"), std::string::npos);
}

TEST(SubmissionQueueTest, AfterReconnectQueuedCommandsKeepTheirDatabase) {
  SubmissionQueue queue(0);
  const Arg args[] = {"GET", "k"};
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  queue.push(5, args, ff);  // SELECT 5, GET
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  queue.take(bytes, taken, dropped);  // written; the stream is on db 5 now
  queue.push(5, args, ff);            // encoded without SELECT: the stream is on 5
  queue.reset_stream_database(0);     // the connection broke; the new one is on 0
  queue.reset_stream_offsets();       // as the connection does when it becomes ready
  queue.take(bytes, taken, dropped);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].name, "SELECT");
  EXPECT_EQ(bytes.substr(0, taken[0].bytes_end), "*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n");
}

// A command that runs on any database (db -1: SCRIPT KILL) queued before the connection is
// ready is not preceded by a SELECT (a server busy with a script refuses one, and the
// connection it is on is wherever the handshake left it); the first command after it that
// names a database gets the SELECT.
TEST(SubmissionQueueTest, ACommandForAnyDatabaseQueuedFirstIsNotPrecededByASelect) {
  SubmissionQueue queue(2);  // defaultDatabase=2: the stream is expected on 2
  const Arg kill[] = {"SCRIPT", "KILL"};
  const Arg get[] = {"GET", "k"};
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  queue.push(-1, kill, ff);
  queue.push(2, get, ff);          // encoded without SELECT: the stream was to be on 2
  queue.reset_stream_database(0);  // a busy server refused the handshake's SELECT 2
  queue.reset_stream_offsets();
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  queue.take(bytes, taken, dropped);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[1].name, "SELECT");
  EXPECT_EQ(bytes.substr(taken[1].bytes_begin, taken[1].bytes_end - taken[1].bytes_begin),
            "*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n");
  EXPECT_EQ(bytes.rfind("*2\r\n$6\r\nSCRIPT", 0), 0u) << bytes;
  // Alone, it leaves the stream on the connection's database: a later command for 2 selects.
  SubmissionQueue alone(2);
  alone.push(-1, kill, ff);
  alone.reset_stream_database(0);
  alone.reset_stream_offsets();
  alone.take(bytes, taken, dropped);
  alone.push(2, get, ff);
  alone.take(bytes, taken, dropped);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].name, "SELECT");
}

TEST(SubmissionQueueTest, TimedOutQueuedCommandsAreNeverWritten) {
  SubmissionQueue queue;
  const Clock::time_point t0 = Clock::now();
  auto* a = new FutureState<long long>();
  auto* b = new FutureState<long long>();
  const Arg incr_a[] = {"INCR", "a"};
  const Arg incr_b[] = {"INCR", "b"};
  queue.push(-1, incr_a, caller(a, t0 + 10ms));
  queue.push(-1, incr_b, caller(b, t0 + 10s));
  std::vector<PendingCommand> expired;
  EXPECT_EQ(queue.collect_expired(t0 + 20ms, expired), t0 + 10s);
  ASSERT_EQ(expired.size(), 1u);
  expired[0].state->fail(Error(errc::timeout, "t"));
  expired[0].state->release();
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  queue.take(bytes, taken, dropped);
  EXPECT_EQ(bytes, "*2\r\n$4\r\nINCR\r\n$1\r\nb\r\n");
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].state, b);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].state, a);
  a->release();
  b->release();
}

TEST(SubmissionQueueTest, ATimedOutQueuedCommandGivesItsSlotBackWhenCollected) {
  // Issue: the slot came back only when take() dropped the entry, i.e. never while the
  // connection stayed down.
  SubmissionQueue queue;
  const Clock::time_point t0 = Clock::now();
  auto* a = new FutureState<long long>();
  const Arg incr_a[] = {"INCR", "a"};
  queue.push(-1, incr_a, caller(a, t0 + 10ms));
  EXPECT_EQ(queue.tally().queued, 1u);
  std::vector<PendingCommand> expired;
  queue.collect_expired(t0 + 20ms, expired);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_TRUE(expired[0].counted);  // the collector gives this slot back
  expired[0].state->fail(Error(errc::timeout, "t"));
  expired[0].state->release();
  EXPECT_EQ(queue.tally().queued, 0u);  // its caller no longer waits
  std::vector<PendingCommand> dropped;
  queue.purge_completed(dropped);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_FALSE(dropped[0].counted);  // …so dropping it gives nothing back a second time
  a->release();
}

PendingCommand in_slot(FutureState<long long>* state, std::uint16_t slot, bool follow_map) {
  PendingCommand c = caller(state, Clock::now() + 10s);
  c.slot = slot;
  c.follow_map = follow_map;
  return c;
}

TEST(SubmissionQueueTest, RerouteTakesOutTheQueuedCommandsOfSlotsServedElsewhereInOrder) {
  SubmissionQueue queue;
  std::vector<FutureState<long long>*> states;
  for (int i = 0; i < 5; ++i) states.push_back(new FutureState<long long>());
  const Arg k1[] = {"INCR", "k1"}, k2[] = {"INCR", "k2"}, ping[] = {"PING"};
  queue.push(-1, k1, in_slot(states[0], 7, true));
  queue.push(-1, k2, in_slot(states[1], 9, true));
  queue.push(-1, ping, fire_and_forget());  // no slot: stays
  queue.push(-1, k1, in_slot(states[2], 7, true));
  auto elsewhere = std::make_shared<SlotSet>();
  elsewhere->set(7);
  std::string bytes;
  std::vector<PendingCommand> moved;
  queue.reroute(elsewhere, bytes, moved);
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[0].state, states[0]);
  EXPECT_EQ(moved[1].state, states[2]);
  EXPECT_EQ(bytes, "*2\r\n$4\r\nINCR\r\n$2\r\nk1\r\n*2\r\n$4\r\nINCR\r\n$2\r\nk1\r\n");
  EXPECT_EQ(moved[1].bytes_begin, 22u);
  EXPECT_EQ(moved[1].bytes_end, 44u);
  // From now on a command routed by the map to slot 7 is refused here, one sent where a
  // server said (a redirection, a command handed on) is taken.
  EXPECT_EQ(queue.push(-1, k1, in_slot(states[3], 7, true)), SubmissionQueue::Pushed::Forward);
  PendingCommand batch[] = {in_slot(states[4], 7, true)};
  EXPECT_EQ(queue.push_batch(-1, bytes.substr(0, 22), batch), SubmissionQueue::Pushed::Forward);
  EXPECT_NE(queue.push(-1, k1, in_slot(states[3], 7, false)), SubmissionQueue::Pushed::Forward);
  std::string written;
  std::vector<PendingCommand> taken, dropped;
  queue.take(written, taken, dropped);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].state, states[1]);
  EXPECT_EQ(taken[2].state, states[3]);
  EXPECT_EQ(written,
            "*2\r\n$4\r\nINCR\r\n$2\r\nk2\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$2\r\nk1\r\n");
  // Every slot welcome again.
  queue.reroute(nullptr, bytes, moved);
  EXPECT_NE(queue.push(-1, k1, in_slot(states[4], 7, true)), SubmissionQueue::Pushed::Forward);
  for (auto* state : states) state->release();
}

TEST(SubmissionQueueTest, ClosedQueueRefusesPushes) {
  SubmissionQueue queue;
  const Arg args[] = {"PING"};
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  queue.push(-1, args, ff);
  std::vector<PendingCommand> out;
  queue.close(out);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::Closed);
}

TEST(SubmissionQueueTest, ConcurrentPushersLoseNothingAndKeepEachThreadsOrder) {
  SubmissionQueue queue;
  constexpr int kThreads = 8, kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&queue, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const Arg args[] = {"ECHO", Arg(t * 100000 + i)};
        PendingCommand ff;
        ff.kind = PendingKind::FireAndForget;
        queue.push(-1, args, ff);
      }
    });
  }
  std::string all;
  std::size_t commands = 0;
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  while (commands < kThreads * kPerThread) {
    queue.take(bytes, taken, dropped);
    all += bytes;
    commands += taken.size();
  }
  for (auto& th : threads) th.join();
  // Each thread's numbers appear in increasing order.
  std::vector<int> last(kThreads, -1);
  std::size_t pos = 0;
  int seen = 0;
  while ((pos = all.find("ECHO\r\n$", pos)) != std::string::npos) {
    pos = all.find("\r\n", pos + 7) + 2;
    const int value = std::stoi(all.substr(pos, all.find("\r\n", pos) - pos));
    const int t = value / 100000, i = value % 100000;
    EXPECT_GT(i, last[t]);
    last[t] = i;
    ++seen;
  }
  EXPECT_EQ(seen, kThreads * kPerThread);
}

}  // namespace
}  // namespace redmux::detail

namespace redmux::detail {
namespace {

TEST(SubmissionQueueTest, AfterReconnectARedundantLeadingSelectIsDropped) {
  SubmissionQueue queue(0);
  const Arg args[] = {"GET", "k"};
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  queue.push(3, args, ff);  // SELECT 3, GET
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  queue.take(bytes, taken, dropped);  // the stream is on 3 now
  queue.push(0, args, ff);            // SELECT 0, GET
  queue.reset_stream_database(0);     // new connection on 0: SELECT 0 is not needed
  queue.reset_stream_offsets();       // as the connection does when it becomes ready
  queue.take(bytes, taken, dropped);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(bytes, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
  EXPECT_EQ(taken[0].bytes_begin, 0u);
}

}  // namespace
}  // namespace redmux::detail

namespace redmux::detail {
namespace {

TEST(SubmissionQueueTest, IdleReadyQueueLetsThePusherWriteInlineAndOnlyOneWriterAtATime) {
  SubmissionQueue queue;
  queue.set_inline(true);
  const Clock::time_point t0 = Clock::now();
  queue.set_timer_armed_until(t0 + std::chrono::seconds(1));
  const Arg args[] = {"PING"};
  auto* a = new FutureState<std::string>();
  PendingCommand first;
  first.state = a;
  first.deadline = t0 + std::chrono::seconds(5);  // covered by the armed timer
  ASSERT_EQ(queue.push(-1, args, first), SubmissionQueue::Pushed::WriteInline);
  // While the inline writer holds the role, others only queue (no second writer).
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  ff.deadline = Clock::time_point::max();
  EXPECT_EQ(queue.push(-1, args, ff), SubmissionQueue::Pushed::Queued);
  // An earlier deadline than the armed timer asks for a re-arm, never for a write.
  auto* b = new FutureState<std::string>();
  PendingCommand urgent;
  urgent.state = b;
  urgent.deadline = t0 + std::chrono::milliseconds(10);
  EXPECT_EQ(queue.push(-1, args, urgent), SubmissionQueue::Pushed::QueuedRearm);
  std::string bytes;
  // The inline writer takes all three; the urgent one is due before the armed timer, so the
  // writer is told to have the I/O thread absorb (and time) them.
  EXPECT_TRUE(queue.take_inline(bytes));
  EXPECT_EQ(bytes.size(), 3 * std::string_view("*1\r\n$4\r\nPING\r\n").size());
  std::vector<PendingCommand> handoff;
  queue.drain_handoff(handoff);
  ASSERT_EQ(handoff.size(), 3u);
  EXPECT_EQ(handoff[0].state, a);
  EXPECT_EQ(handoff[2].bytes_end, bytes.size());  // stream offsets
  EXPECT_FALSE(queue.finish_inline());            // nothing arrived meanwhile: role released
  // Timer disarmed (it fired): a pusher may not write inline, it wakes the I/O thread.
  queue.set_timer_armed_until(Clock::time_point::max());
  EXPECT_EQ(queue.push(-1, args, first), SubmissionQueue::Pushed::QueuedWake);
  a->release();
  b->release();
}

// A queue whose connection is ready for inline writes, its I/O thread's timer armed 1 s ahead.
void allow_inline(SubmissionQueue& queue) {
  queue.set_inline(true);
  queue.set_timer_armed_until(Clock::now() + std::chrono::seconds(1));
}

TEST(SubmissionQueueTest, LargeCommandIsWrittenInlineEvenWithRepliesAwaited) {
  SubmissionQueue queue;
  allow_inline(queue);
  queue.publish_in_flight(3);  // replies awaited: the I/O thread is busy with this connection
  PendingCommand command;
  command.kind = PendingKind::FireAndForget;
  command.deadline = Clock::time_point::max();
  // A small command waits for the I/O thread, which batches it with whatever else arrives.
  const std::string small_value(SubmissionQueue::kInlineWriteBytes / 2, 'v');
  const Arg small[] = {"SET", "k", small_value};
  EXPECT_EQ(queue.push(-1, small, command), SubmissionQueue::Pushed::QueuedWake);
  std::string bytes;
  std::vector<PendingCommand> taken, dropped;
  queue.take(bytes, taken, dropped);
  ASSERT_TRUE(queue.take(bytes, taken, dropped));  // empty: the role is given up
  // A large one is a large write on its own: the caller sends it, saving the hand-off.
  const std::string large_value(SubmissionQueue::kInlineWriteBytes, 'v');
  const Arg large[] = {"SET", "k", large_value};
  EXPECT_EQ(queue.push(-1, large, command), SubmissionQueue::Pushed::WriteInline);
  EXPECT_FALSE(queue.take_inline(bytes));
  EXPECT_GT(bytes.size(), SubmissionQueue::kInlineWriteBytes);
  EXPECT_FALSE(queue.finish_inline());
  // Still one writer at a time: while a caller writes inline, the next large one queues.
  EXPECT_EQ(queue.push(-1, large, command), SubmissionQueue::Pushed::WriteInline);
  EXPECT_FALSE(queue.take_inline(bytes));
  EXPECT_EQ(queue.push(-1, large, command), SubmissionQueue::Pushed::Queued);
  EXPECT_TRUE(queue.finish_inline());  // it arrived meanwhile: the I/O thread must write it
  // And never when the connection does not allow inline writes (not ready, or TLS).
  queue.take(bytes, taken, dropped);
  ASSERT_TRUE(queue.take(bytes, taken, dropped));
  queue.set_inline(false);
  EXPECT_EQ(queue.push(-1, large, command), SubmissionQueue::Pushed::QueuedWake);
}

TEST(SubmissionQueueTest, ABufferGrownByALargeInlineWriteGoesBackToTheQueue) {
  SubmissionQueue queue;
  allow_inline(queue);
  PendingCommand command;
  command.kind = PendingKind::FireAndForget;
  command.deadline = Clock::time_point::max();
  const std::string value(2 * 1024 * 1024, 'v');
  const Arg args[] = {"SET", "k", value};
  ASSERT_EQ(queue.push(-1, args, command), SubmissionQueue::Pushed::WriteInline);
  std::string spent;
  queue.take_inline(spent);
  ASSERT_GT(spent.capacity(), value.size());
  const char* grown = spent.data();
  EXPECT_FALSE(queue.finish_inline());
  // The writer keeps no large buffer: the queue takes it, for the next large command.
  queue.give_back_buffer(spent);
  EXPECT_LT(spent.capacity(), 1024u);
  ASSERT_EQ(queue.push(-1, args, command), SubmissionQueue::Pushed::WriteInline);
  std::string next;
  queue.take_inline(next);
  EXPECT_EQ(next.data(), grown);  // encoded into the memory already grown
  // When the queue's own buffer is busy, the spent one is simply freed.
  EXPECT_EQ(queue.push(-1, args, command), SubmissionQueue::Pushed::Queued);
  queue.give_back_buffer(next);
  EXPECT_LT(next.capacity(), 1024u);
  EXPECT_TRUE(queue.finish_inline());
}

}  // namespace
}  // namespace redmux::detail
