#include "conn/pipeline.hpp"

#include <gtest/gtest.h>

#include "redmux/convert.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

struct Fixture {
  Clock::time_point t0 = Clock::now();
  std::vector<FutureState<std::string>*> states;

  PendingCommand caller(std::chrono::milliseconds timeout) {
    auto* state = new FutureState<std::string>();  // the test's reference
    state->add_ref();                              // the pipeline's reference
    states.push_back(state);
    PendingCommand command;
    command.state = state;
    command.name = "GET";
    command.deadline = t0 + timeout;
    command.timeout_ms = static_cast<std::uint32_t>(timeout.count());
    return command;
  }
  ~Fixture() {
    for (auto* s : states) s->release();
  }
};

Node bulk(std::string_view text) {
  Node n;
  n.type = ReplyType::BulkString;
  n.size = text.size();
  n.value = text;
  return n;
}

Error timeout(const PendingCommand& c, Clock::time_point) {
  return Error(errc::timeout, "timeout " + std::string(c.name));
}

TEST(PipelineTest, RepliesCompleteCommandsInOrder) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand cmds[] = {f.caller(1s), f.caller(1s)};
  pipeline.push(cmds);
  std::size_t released = 0;
  // The slot comes back before the future completes (a woken caller always finds room).
  bool ready_when_released = false;
  auto release = [&] {
    ++released;
    ready_when_released = ready_when_released || f.states[released - 1]->ready();
  };
  Node a = bulk("a"), b = bulk("b");
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&a, 1), {}, release), Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&b, 1), {}, release), Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(released, 2u);
  EXPECT_FALSE(ready_when_released);
  EXPECT_EQ(f.states[0]->result().value(), "a");
  EXPECT_EQ(f.states[1]->result().value(), "b");
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&a, 1), {}, release), Pipeline::ReplyOutcome::Unexpected);
}

TEST(PipelineTest, TimedOutCommandStaysInFlightSoLaterRepliesMatch) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand cmds[] = {f.caller(10ms), f.caller(1s)};
  pipeline.push(cmds);
  EXPECT_EQ(pipeline.next_deadline(), f.t0 + 10ms);
  EXPECT_EQ(pipeline.expire(f.t0 + 20ms, timeout, {}), 1u);
  EXPECT_EQ(f.states[0]->result().error().code(), errc::timeout);
  EXPECT_EQ(pipeline.size(), 2u);
  EXPECT_EQ(pipeline.next_deadline(), f.t0 + 1s);
  Node late = bulk("late"), mine = bulk("mine");
  pipeline.on_reply(NodeSpan(&late, 1), {}, {});  // the timed-out command's reply
  pipeline.on_reply(NodeSpan(&mine, 1), {}, {});
  EXPECT_EQ(f.states[0]->result().error().code(), errc::timeout);  // not overwritten
  EXPECT_EQ(f.states[1]->result().value(), "mine");
}

// Issue: a timed-out command kept its maxQueuedCommands slot until its late reply came, so a
// stalled server turned timeouts into QueueFullErrors. Its entry stays (its reply must be
// skipped), its slot does not.
TEST(PipelineTest, TimedOutCommandGivesItsSlotBackAtOnceAndOnlyOnce) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand cmds[] = {f.caller(10ms), f.caller(5s), f.caller(20ms)};  // the last: early
  pipeline.push(cmds);
  EXPECT_EQ(pipeline.awaited(), 3u);
  std::size_t released = 0;
  bool completed_before_release = false;
  auto release = [&] {  // the k-th slot comes back while fewer than k futures are complete
    ++released;
    const std::size_t ready = f.states[0]->ready() + f.states[2]->ready();
    completed_before_release = completed_before_release || ready >= released;
  };
  EXPECT_EQ(pipeline.expire(f.t0 + 30ms, timeout, release), 2u);
  EXPECT_EQ(released, 2u);                 // both slots back now, not at their replies
  EXPECT_FALSE(completed_before_release);  // each before its future completed
  EXPECT_EQ(pipeline.size(), 3u);          // the entries stay for their replies
  EXPECT_EQ(pipeline.awaited(), 1u);       // only the one whose caller still waits
  EXPECT_EQ(pipeline.expire(f.t0 + 40ms, timeout, release), 0u);  // never twice
  Node late = bulk("late"), mine = bulk("mine"), late2 = bulk("late2");
  pipeline.on_reply(NodeSpan(&late, 1), {}, release);
  EXPECT_EQ(released, 2u);  // the late reply gives nothing back again
  pipeline.on_reply(NodeSpan(&mine, 1), {}, release);
  EXPECT_EQ(released, 3u);
  pipeline.on_reply(NodeSpan(&late2, 1), {}, release);
  EXPECT_EQ(released, 3u);
  EXPECT_EQ(pipeline.awaited(), 0u);
  EXPECT_EQ(f.states[1]->result().value(), "mine");
}

TEST(PipelineTest, AwaitedCountsCallersCommandsOnly) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand tallied = f.caller(1s);  // a cluster command: its state holds the slot
  tallied.counted = false;
  tallied.tallied = true;
  PendingCommand part = f.caller(1s);  // a later part of a split command
  part.counted = false;
  PendingCommand cmds[] = {own_command("PING", PendingKind::Heartbeat), tallied, part,
                           f.caller(1s)};
  pipeline.push(cmds);
  EXPECT_EQ(pipeline.awaited(), 2u);
  std::size_t released = 0;
  auto release = [&] { ++released; };
  Node pong = bulk("PONG"), a = bulk("a"), b = bulk("b"), c = bulk("c");
  pipeline.on_reply(NodeSpan(&pong, 1), {}, release);
  EXPECT_EQ(pipeline.awaited(), 2u);
  pipeline.on_reply(NodeSpan(&a, 1), {}, release);
  EXPECT_EQ(pipeline.awaited(), 1u);
  EXPECT_EQ(released, 0u);  // not the entry's to give back
  pipeline.on_reply(NodeSpan(&b, 1), {}, release);
  pipeline.on_reply(NodeSpan(&c, 1), {}, release);
  EXPECT_EQ(pipeline.awaited(), 0u);
  EXPECT_EQ(released, 1u);
}

TEST(PipelineTest, ShorterPerCallTimeoutBehindLongerOneStillExpiresOnTime) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand cmds[] = {f.caller(5s), f.caller(50ms)};
  pipeline.push(cmds);
  EXPECT_EQ(pipeline.next_deadline(), f.t0 + 50ms);
  EXPECT_EQ(pipeline.expire(f.t0 + 60ms, timeout, {}), 1u);
  EXPECT_FALSE(f.states[0]->ready());
  EXPECT_TRUE(f.states[1]->ready());
  EXPECT_EQ(pipeline.next_deadline(), f.t0 + 5s);
}

TEST(PipelineTest, AnOutOfOrderDeadlineIsReportedWithItsOwnTimeout) {
  // Threads compute deadlines before they queue, so a command can land behind one with a
  // later deadline even when both use the same timeout; its timeout error must still say
  // what timeout it had and where its bytes are.
  Fixture f;
  Pipeline pipeline;
  PendingCommand first = f.caller(500ms);
  PendingCommand second = f.caller(499ms);
  second.bytes_begin = 40;
  second.bytes_end = 62;
  PendingCommand cmds[] = {first, second};
  pipeline.push(cmds);
  std::vector<PendingCommand> seen;
  auto record = [&](const PendingCommand& c, Clock::time_point) {
    seen.push_back(c);
    return Error(errc::timeout, "timeout");
  };
  EXPECT_EQ(pipeline.expire(f.t0 + 499ms, record, {}), 1u);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].name, "GET");
  EXPECT_EQ(seen[0].timeout_ms, 499u);
  EXPECT_EQ(seen[0].deadline, f.t0 + 499ms);
  EXPECT_EQ(seen[0].bytes_begin, 40u);
  EXPECT_EQ(seen[0].bytes_end, 62u);
}

TEST(PipelineTest, FireAndForgetErrorsAreReportedAndDoNotBlockDeadlines) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand ff;
  ff.kind = PendingKind::FireAndForget;
  ff.name = "INCR";
  ff.deadline = Clock::time_point::max();
  PendingCommand cmds[] = {ff, f.caller(10ms)};
  pipeline.push(cmds);
  EXPECT_EQ(pipeline.expire(f.t0 + 20ms, timeout, {}), 1u);
  std::string reported;
  Node err;
  err.type = ReplyType::SimpleError;
  err.value = "WRONGTYPE bad";
  pipeline.on_reply(NodeSpan(&err, 1),
                    [&](const PendingCommand& c, NodeSpan r) {
                      reported = std::string(c.name) + ":" + std::string(r[0].value);
                    },
                    {});
  EXPECT_EQ(reported, "INCR:WRONGTYPE bad");
}

TEST(PipelineTest, FailAllCompletesEveryCaller) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand cmds[] = {f.caller(1s), f.caller(1s)};
  pipeline.push(cmds);
  const std::size_t released =
      pipeline.fail_all([](const PendingCommand&) { return Error(errc::outcome_unknown, "lost"); });
  EXPECT_EQ(released, 2u);
  EXPECT_TRUE(pipeline.empty());
  for (auto* s : f.states) EXPECT_EQ(s->result().error().code(), errc::outcome_unknown);
}

PendingCommand subscribe(std::uint32_t names, CommandState* refusal = nullptr) {
  return pubsub_command("SUBSCRIBE", resp::PushKind::Subscribe, names, refusal);
}

Node error_node(std::string_view text) {
  Node n;
  n.type = ReplyType::SimpleError;
  n.size = text.size();
  n.value = text;
  return n;
}

// A SUBSCRIBE in flight is answered by one confirmation push per name; a caller's reply
// behind it is matched to the caller only once those came.
TEST(PipelineTest, SubscribeLeavesAfterOneConfirmationPerName) {
  Fixture f;
  Pipeline pipeline;
  PendingCommand cmds[] = {f.caller(1s), subscribe(2), f.caller(1s)};
  pipeline.push(cmds);
  Node a = bulk("a"), b = bulk("b");
  EXPECT_FALSE(
      pipeline.on_confirmation(resp::PushKind::Subscribe));  // the caller's reply comes first
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&a, 1), {}, {}), Pipeline::ReplyOutcome::Delivered);
  EXPECT_FALSE(
      pipeline.on_confirmation(resp::PushKind::PatternSubscribe));  // another kind: not its answer
  EXPECT_TRUE(pipeline.on_confirmation(resp::PushKind::Subscribe));
  EXPECT_EQ(pipeline.size(), 2u);
  // An ordinary reply while the SUBSCRIBE still awaits a confirmation: out of step.
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&b, 1), {}, {}), Pipeline::ReplyOutcome::Unexpected);
  EXPECT_TRUE(pipeline.on_confirmation(resp::PushKind::Subscribe));
  EXPECT_EQ(pipeline.size(), 1u);
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&b, 1), {}, {}), Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(f.states[0]->result().value(), "a");
  EXPECT_EQ(f.states[1]->result().value(), "b");
}

// A refused SUBSCRIBE is answered by one error reply: it goes to the subscribe, not to the
// caller behind it. Its refusal handler reports it (naming the channel, which the pipeline
// does not know); one without a handler is reported by the pipeline.
TEST(PipelineTest, RefusedSubscribeTakesItsErrorReplyNotTheNextCallers) {
  Fixture f;
  Pipeline pipeline;
  auto* refusal = new FutureState<void>();  // stands in for the hub's refusal handler
  refusal->add_ref();                       // the pipeline's reference
  PendingCommand cmds[] = {subscribe(3, refusal), f.caller(1s)};
  pipeline.push(cmds);
  std::string reported;
  auto report = [&](const PendingCommand& c, NodeSpan r) {
    reported = std::string(c.name) + ":" + std::string(r[0].value);
  };
  Node no = error_node("NOPERM No permissions to access a channel"), a = bulk("a");
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&no, 1), report, {}), Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(reported, "");  // the handler's to report
  ASSERT_TRUE(refusal->ready());
  EXPECT_NE(refusal->result().error().message().find("NOPERM"), std::string::npos);
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&a, 1), report, {}), Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(f.states[0]->result().value(), "a");
  refusal->release();

  PendingCommand bare[] = {subscribe(1), f.caller(1s)};
  pipeline.push(bare);
  Node b = bulk("b");
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&no, 1), report, {}), Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(reported, "SUBSCRIBE:NOPERM No permissions to access a channel");
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&b, 1), report, {}), Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(f.states[1]->result().value(), "b");
}

}  // namespace
}  // namespace redmux::detail
