#include "conn/break_policy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

struct Fixture {
  std::vector<FutureState<std::string>*> states;  // the test's references
  std::string stream;                             // the bytes of every command, back to back
  ~Fixture() {
    for (auto* state : states) state->release();
  }

  /// A caller's command whose bytes follow the previous one's in the stream.
  PendingCommand caller(std::string_view bytes) {
    auto* state = new FutureState<std::string>();
    state->add_ref();  // the connection's, released by whoever takes the command
    states.push_back(state);
    PendingCommand command;
    command.state = state;
    command.name = "SET";
    command.bytes_begin = stream.size();
    stream += bytes;
    command.bytes_end = stream.size();
    command.deadline = Clock::now() + 1s;
    return command;
  }
  Error fail(const PendingCommand& command) {
    return Error(command.bytes_begin >= written ? errc::not_sent : errc::outcome_unknown, "lost");
  }
  std::uint64_t written = 0;
};

TEST(BreakPolicyTest, WhatNeverReachedTheSocketIsResentInOrderTheRestFails) {
  Fixture f;
  PendingCommand in_flight[] = {f.caller("aaaa"), f.caller("bbbb"), f.caller("cccc"),
                                f.caller("dddd")};
  BrokenStream stream;
  stream.written = 6;                                                       // a, and half of b
  stream.buffer = Writer::Unsent{std::string_view(f.stream).substr(4), 4};  // b…d
  stream.may_resend = true;
  f.written = stream.written;
  std::vector<SubmissionQueue::Resend> resends;
  std::vector<PendingCommand> leaving;
  plan_after_break(in_flight, stream, resends, leaving,
                   [&](const PendingCommand& c) { return f.fail(c); });
  ASSERT_EQ(resends.size(), 2u);
  EXPECT_EQ(resends[0].bytes, "cccc");
  EXPECT_EQ(resends[1].bytes, "dddd");
  ASSERT_EQ(leaving.size(), 2u);
  ASSERT_TRUE(f.states[0]->ready() && f.states[1]->ready());
  EXPECT_EQ(f.states[0]->result().error().code(), errc::outcome_unknown);
  EXPECT_EQ(f.states[1]->result().error().code(), errc::outcome_unknown);
  EXPECT_FALSE(f.states[2]->ready());
  for (PendingCommand& command : leaving) command.state->release();
  for (SubmissionQueue::Resend& resend : resends) resend.command.state->release();
}

TEST(BreakPolicyTest, ARetryableWrittenCommandIsResentOnceAndATimedOutOneNever) {
  Fixture f;
  PendingCommand retryable = f.caller("aaaa");
  retryable.retry_written = true;
  retryable.state->retained_command = "aaaa";
  PendingCommand timed_out = f.caller("bbbb");  // never reached the socket, but its caller
  timed_out.state->fail(Error(errc::timeout, "timeout"));  // was told "timeout"
  PendingCommand in_flight[] = {retryable, timed_out};
  BrokenStream stream;
  stream.written = 4;
  stream.buffer = Writer::Unsent{f.stream, 0};
  stream.may_resend = true;
  f.written = 4;
  std::vector<SubmissionQueue::Resend> resends;
  std::vector<PendingCommand> leaving;
  plan_after_break(in_flight, stream, resends, leaving,
                   [&](const PendingCommand& c) { return f.fail(c); });
  ASSERT_EQ(resends.size(), 1u);
  EXPECT_EQ(resends[0].bytes, "aaaa");
  EXPECT_EQ(resends[0].command.resends, 1u);
  ASSERT_EQ(leaving.size(), 1u);
  EXPECT_EQ(leaving[0].state, timed_out.state);
  EXPECT_EQ(f.states[1]->result().error().code(), errc::timeout);  // still its own error

  // Broken again after the resend: it is not sent a third time.
  PendingCommand again[] = {resends[0].command};
  std::vector<SubmissionQueue::Resend> more;
  std::vector<PendingCommand> gone;
  plan_after_break(again, stream, more, gone, [&](const PendingCommand& c) { return f.fail(c); });
  EXPECT_TRUE(more.empty());
  ASSERT_TRUE(f.states[0]->ready());
  EXPECT_EQ(f.states[0]->result().error().code(), errc::outcome_unknown);
  for (PendingCommand& command : leaving) command.state->release();
  for (PendingCommand& command : gone) command.state->release();
  for (SubmissionQueue::Resend& resend : more) resend.command.state->release();
}

// failFast, or a dedicated connection that carries nothing over: nothing is resent, and what
// never reached the socket says so (not_sent: safe to retry).
TEST(BreakPolicyTest, WithoutResendsNeverSentCommandsFailAsNotSent) {
  Fixture f;
  PendingCommand in_flight[] = {f.caller("aaaa")};
  BrokenStream stream;
  stream.buffer = Writer::Unsent{f.stream, 0};
  stream.may_resend = false;
  std::vector<SubmissionQueue::Resend> resends;
  std::vector<PendingCommand> leaving;
  plan_after_break(in_flight, stream, resends, leaving,
                   [&](const PendingCommand& c) { return f.fail(c); });
  EXPECT_TRUE(resends.empty());
  ASSERT_TRUE(f.states[0]->ready());
  EXPECT_EQ(f.states[0]->result().error().code(), errc::not_sent);
  for (PendingCommand& command : leaving) command.state->release();
  for (SubmissionQueue::Resend& resend : resends) resend.command.state->release();
}

}  // namespace
}  // namespace redmux::detail
