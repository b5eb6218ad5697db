#include "conn/writer.hpp"

#include <gtest/gtest.h>

#include <string>

namespace redmux::detail {
namespace {

PendingCommand fire_and_forget() {
  PendingCommand command;
  command.kind = PendingKind::FireAndForget;
  command.deadline = Clock::time_point::max();
  command.counted = false;
  return command;
}

constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";

struct Fixture {
  Counters counters;
  Writer writer{counters};
  SubmissionQueue queue;
  const Arg ping[1] = {Arg("PING")};
};

TEST(WriterTest, AWriteWaitsForRepliesOnlyBehindManyInFlight) {
  EXPECT_EQ(Writer::coalescing_threshold(0), 0u);
  EXPECT_EQ(Writer::coalescing_threshold(15), 0u);
  EXPECT_EQ(Writer::coalescing_threshold(16), 4u);
  EXPECT_EQ(Writer::coalescing_threshold(100), 25u);
  EXPECT_EQ(Writer::coalescing_threshold(1000), 64u);

  Fixture f;
  f.writer.restart();
  f.queue.push(-1, f.ping, fire_and_forget());
  EXPECT_EQ(f.writer.take(f.queue, 16), Writer::Take::Held);
  EXPECT_FALSE(f.writer.writing());
  EXPECT_TRUE(f.writer.release_hold());   // the next replies came: write now
  EXPECT_FALSE(f.writer.release_hold());  // once
  EXPECT_EQ(f.writer.take(f.queue, 15), Writer::Take::Write);
  EXPECT_EQ(f.writer.buffer(), kPing);
  EXPECT_EQ(f.writer.batch().size(), 1u);
  EXPECT_TRUE(f.writer.writing());
  f.writer.on_written(kPing.size(), false, Clock::now());
  EXPECT_EQ(f.writer.written(), kPing.size());
  EXPECT_EQ(f.writer.take(f.queue, 0), Writer::Take::Nothing);
  EXPECT_FALSE(f.writer.writing());
}

TEST(WriterTest, ALargeWriteBufferIsKeptAcrossIdleMomentsAndGivenBackOnTheNextQuietTick) {
  Fixture f;
  f.writer.restart();
  const std::string value(2 * kShrinkAbove, 'v');
  const Arg set[] = {Arg("SET"), Arg("k"), Arg(value)};
  auto write_one = [&] {
    f.queue.push(-1, set, fire_and_forget());
    ASSERT_EQ(f.writer.take(f.queue, 0), Writer::Take::Write);
    f.writer.on_written(f.writer.buffer().size(), false, Clock::now());
    ASSERT_EQ(f.writer.take(f.queue, 0), Writer::Take::Nothing);  // the queue emptied
  };
  write_one();
  EXPECT_GT(f.writer.buffer_capacity(), kShrinkAbove);  // kept for the next one
  f.writer.trim(f.queue);                               // a tick after a large write: still in use
  EXPECT_GT(f.writer.buffer_capacity(), kShrinkAbove);
  write_one();
  f.writer.trim(f.queue);
  EXPECT_GT(f.writer.buffer_capacity(), kShrinkAbove);
  f.writer.trim(f.queue);  // a whole tick without a large write
  EXPECT_LE(f.writer.buffer_capacity(), kShrinkAbove);
}

TEST(WriterTest, ABreakDuringAWriteCountsTheWholeWriteAsWritten) {
  Fixture f;
  f.writer.restart();
  f.queue.push(-1, f.ping, fire_and_forget());
  f.queue.push(-1, f.ping, fire_and_forget());
  ASSERT_EQ(f.writer.take(f.queue, 0), Writer::Take::Write);
  f.writer.on_break();
  EXPECT_EQ(f.writer.written(), 2 * kPing.size());
}

TEST(WriterTest, AFailedWriteCountsOnlyWhatTheSocketReported) {
  Fixture f;
  f.writer.restart();
  f.queue.push(-1, f.ping, fire_and_forget());
  f.queue.push(-1, f.ping, fire_and_forget());
  ASSERT_EQ(f.writer.take(f.queue, 0), Writer::Take::Write);
  f.writer.on_written(3, /*failed=*/true, Clock::now());
  f.writer.on_break();
  EXPECT_EQ(f.writer.written(), 3u);
  const Writer::Unsent unsent = f.writer.unsent_in_buffer();
  EXPECT_EQ(unsent.of(f.writer.batch()[1]), kPing);
}

TEST(WriterTest, AnInlineWriteHandsWhatTheSocketDidNotTakeToTheIoThread) {
  Fixture f;
  f.writer.restart();
  f.queue.set_inline(true);
  f.queue.set_timer_armed_until(Clock::time_point::min());
  ASSERT_EQ(f.queue.push(-1, f.ping, fire_and_forget()), SubmissionQueue::Pushed::WriteInline);
  std::string sent;
  const Writer::Inline result = f.writer.write_inline(
      f.queue, [] { return true; },
      [&](std::string_view bytes) {
        sent = bytes.substr(0, 5);
        return Writer::SendResult{5, 0};
      },
      Clock::now());
  EXPECT_EQ(result.then, Writer::Inline::Then::HandOver);
  EXPECT_TRUE(result.ready);
  EXPECT_EQ(result.rest, kPing.substr(5));
  EXPECT_EQ(f.writer.written(), 5u);
  EXPECT_EQ(f.counters.writes.load(), 1u);
  std::string storage;
  const Writer::Unsent unsent = f.writer.take_inline_unsent(storage);
  EXPECT_EQ(unsent.begin, 5u);
  EXPECT_EQ(unsent.bytes, kPing.substr(5));
}

// Once a break has sealed the socket, a caller that took the writer role never sends: its
// bytes stay where the break finds them (to be resent).
TEST(WriterTest, ASealedWriterNeverTouchesTheSocket) {
  Fixture f;
  f.writer.restart();
  f.queue.set_inline(true);
  f.queue.set_timer_armed_until(Clock::time_point::min());
  ASSERT_EQ(f.queue.push(-1, f.ping, fire_and_forget()), SubmissionQueue::Pushed::WriteInline);
  f.writer.seal();
  bool sent = false;
  const Writer::Inline result = f.writer.write_inline(
      f.queue, [] { return true; },
      [&](std::string_view) {
        sent = true;
        return Writer::SendResult{};
      },
      Clock::now());
  EXPECT_FALSE(sent);
  EXPECT_FALSE(result.ready);
  EXPECT_EQ(result.then, Writer::Inline::Then::HandOver);
  std::string storage;
  EXPECT_EQ(f.writer.take_inline_unsent(storage).bytes, kPing);
}

TEST(WriterTest, TheIoThreadYieldsOnlyForEnoughReleasedCallersThatHaveNotQueuedYet) {
  Fixture f;
  f.writer.note_released(3);
  f.writer.yield_for_released(f.queue, 0);
  EXPECT_EQ(f.counters.yields_for_callers.load(), 0u);
  f.writer.note_released(4);
  f.writer.yield_for_released(f.queue, 0);
  EXPECT_EQ(f.counters.yields_for_callers.load(), 1u);
  f.writer.yield_for_released(f.queue, 0);  // the count was reset
  EXPECT_EQ(f.counters.yields_for_callers.load(), 1u);
  for (int i = 0; i < 4; ++i) f.queue.push(-1, f.ping, fire_and_forget());
  f.writer.note_released(4);
  f.writer.yield_for_released(f.queue, 0);  // they have queued already: no need
  EXPECT_EQ(f.counters.yields_for_callers.load(), 1u);
  set_wait_policy(WaitPolicy::Sleep);
  f.writer.note_released(100);
  f.writer.yield_for_released(f.queue, 0);
  set_wait_policy(WaitPolicy::Adaptive);
  EXPECT_EQ(f.counters.yields_for_callers.load(), 1u);
}

TEST(WriterTest, TheIoThreadDoesNotYieldForAFewOfManyWaitingCallers) {
  Fixture f;
  // 20 released while 100 commands still await replies: the waiters of those 100 would
  // spin through the yield's turns for nothing, so the write goes out at once.
  f.writer.note_released(20);
  f.writer.yield_for_released(f.queue, 100);
  EXPECT_EQ(f.counters.yields_for_callers.load(), 0u);
  // A quarter of those still waiting is enough.
  f.writer.note_released(25);
  f.writer.yield_for_released(f.queue, 100);
  EXPECT_EQ(f.counters.yields_for_callers.load(), 1u);
}

}  // namespace
}  // namespace redmux::detail
