// The cluster redirect follower (mux/cluster_redirect.hpp) against the pieces a connection is
// made of — a submission queue, a pipeline — driven by hand, no server: the rule "a command
// whose future has completed is never written afterwards", on the redirect path.
#include <gtest/gtest.h>

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <future>
#include <memory>
#include <vector>

#include "conn/pipeline.hpp"
#include "conn/submission_queue.hpp"
#include "mux/cluster.hpp"
#include "redmux/convert.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

class ClusterSendTest : public ::testing::Test {
 protected:
  ClusterSendTest() {
    Config config;
    config.endpoints.push_back(Endpoint{"127.0.0.1", 7000, {}});
    shared_ = std::make_shared<SharedContext>(config);
    pool_ = IoPool::create(1);
    router_ = std::make_shared<ClusterRouter>(shared_, pool_, nullptr,
                                              std::vector<std::shared_ptr<Connection>>{});
    asio::io_context& io = pool_->next_context();
    // Never started: it only lends its endpoint to the follower.
    node_ = std::make_shared<Connection>(io, pool_->load_of(io), shared_,
                                         Endpoint{"127.0.0.1", 7000, {}});
  }
  ~ClusterSendTest() override {
    router_->close(nullptr);
    for (auto* target : targets_) target->release();
  }

  /// An INCR as a batch queues it on a cluster node: its entry, bytes in `bytes`, holding
  /// one slot of maxQueuedCommands.
  PendingCommand incr(std::string& bytes, std::chrono::milliseconds timeout) {
    EXPECT_TRUE(shared_->acquire_slot(Clock::now()));
    auto* target = new FutureState<long long>();
    targets_.push_back(target);
    const Arg args[] = {"INCR", "k"};
    PendingCommand command;
    command.name = "INCR";
    command.deadline = Clock::now() + timeout;
    command.timeout_ms = static_cast<std::uint32_t>(timeout.count());
    command.bytes_begin = bytes.size();
    resp::encode_command(bytes, args);
    command.bytes_end = bytes.size();
    prepare_cluster_entry(*router_, target, args, command, 0, node_.get());
    return command;
  }

  std::shared_ptr<SharedContext> shared_;
  std::shared_ptr<IoPool> pool_;
  std::shared_ptr<ClusterRouter> router_;
  std::shared_ptr<Connection> node_;
  std::vector<FutureState<long long>*> targets_;
};

Error timeout(const PendingCommand& command, Clock::time_point) {
  return Error(errc::timeout, "Timeout awaiting reply to " + std::string(command.name));
}

// Issue: the follower never marked itself complete, so a command that timed out while queued
// for a dead node stayed in its queue and was written when the node came back.
TEST_F(ClusterSendTest, ACommandThatTimedOutWhileQueuedIsNeverWritten) {
  SubmissionQueue queue;
  std::string bytes;
  PendingCommand command = incr(bytes, 50ms);
  queue.push_batch(-1, bytes, std::span<PendingCommand>(&command, 1));
  EXPECT_EQ(shared_->outstanding(), 1u);
  EXPECT_EQ(queue.tally().queued, 1u);

  // What Connection::on_timer does with the queue.
  std::vector<PendingCommand> expired;
  queue.collect_expired(Clock::now() + 1s, expired);
  ASSERT_EQ(expired.size(), 1u);
  for (PendingCommand& one : expired) {
    if (one.counted) shared_->release_slots(1);
    one.state->fail(timeout(one, Clock::now()));
    one.state->release();
  }
  ASSERT_TRUE(targets_[0]->ready());
  EXPECT_EQ(targets_[0]->result().error().code(), errc::timeout);
  EXPECT_EQ(shared_->outstanding(), 0u);  // its slot is back, once
  EXPECT_EQ(queue.tally().queued, 0u);

  // A later scan fails nothing again (status().timeouts must not keep rising) …
  expired.clear();
  queue.collect_expired(Clock::now() + 2s, expired);
  EXPECT_TRUE(expired.empty());
  // … and the node coming back writes nothing of it.
  std::string written;
  std::vector<PendingCommand> taken, dropped;
  queue.take(written, taken, dropped);
  EXPECT_TRUE(written.empty());
  EXPECT_TRUE(taken.empty());
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_FALSE(dropped[0].counted);
  for (PendingCommand& one : dropped) one.state->release();
  EXPECT_EQ(shared_->outstanding(), 0u);
}

Node error_reply(std::string_view text) {
  Node node;
  node.type = ReplyType::SimpleError;
  node.size = text.size();
  node.value = text;
  return node;
}

// A command that timed out while in flight may still get its reply; a MOVED for it must not
// be followed (that would write a command whose caller was told "timeout" elsewhere).
TEST_F(ClusterSendTest, ALateRedirectForACommandThatTimedOutIsNeverFollowed) {
  Pipeline pipeline;
  std::string bytes;
  PendingCommand command = incr(bytes, 50ms);
  pipeline.push(std::span<const PendingCommand>(&command, 1));
  EXPECT_EQ(pipeline.awaited(), 1u);
  std::size_t released = 0;
  EXPECT_EQ(pipeline.expire(Clock::now() + 1s, timeout, [&] { ++released; }), 1u);
  EXPECT_EQ(released, 0u);                // the follower's slot, not the entry's …
  EXPECT_EQ(shared_->outstanding(), 0u);  // … given back by the follower as it failed
  EXPECT_EQ(pipeline.awaited(), 0u);
  ASSERT_TRUE(targets_[0]->ready());

  const Node moved = error_reply("MOVED 3999 127.0.0.1:7001");
  EXPECT_EQ(pipeline.on_reply(NodeSpan(&moved, 1), {}, [&] { ++released; }),
            Pipeline::ReplyOutcome::Delivered);
  EXPECT_EQ(shared_->counters().redirects.load(), 0u);
  EXPECT_TRUE(router_->nodes().empty());  // no connection opened to follow it
  EXPECT_EQ(targets_[0]->result().error().code(), errc::timeout);
  EXPECT_EQ(shared_->outstanding(), 0u);
}

// CLUSTERDOWN says the command did not run: it is sent again after a pause if its deadline
// leaves time for that, else the caller gets the refusal at once — never a resend past it.
TEST_F(ClusterSendTest, ClusterDownWithNoTimeLeftGoesToTheCallerAtOnce) {
  Pipeline pipeline;
  std::string bytes;
  PendingCommand command = incr(bytes, 10ms);  // shorter than the first pause
  pipeline.push(std::span<const PendingCommand>(&command, 1));
  const Node down = error_reply("CLUSTERDOWN The cluster is down");
  pipeline.on_reply(NodeSpan(&down, 1), {}, {});
  ASSERT_TRUE(targets_[0]->ready());
  const Error error = targets_[0]->result().error();
  EXPECT_EQ(error.code(), errc::server_error);
  EXPECT_TRUE(error.safe_to_retry()) << error.message();
  EXPECT_EQ(shared_->counters().cluster_retries.load(), 0u);
  EXPECT_EQ(shared_->outstanding(), 0u);
}

TEST_F(ClusterSendTest, ACommandWaitingOutClusterDownFailsAsNotSentWhenTheRouterCloses) {
  // The I/O thread is kept busy, so the pause cannot end (and the resend happen) before the
  // router closes, however slow this machine is.
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  asio::post(pool_->next_context(), [gate] { gate.wait(); });
  Pipeline pipeline;
  std::string bytes;
  PendingCommand command = incr(bytes, 10s);
  pipeline.push(std::span<const PendingCommand>(&command, 1));
  const Node down = error_reply("CLUSTERDOWN The cluster is down");
  pipeline.on_reply(NodeSpan(&down, 1), {}, {});
  EXPECT_FALSE(targets_[0]->ready());  // parked for a retry
  EXPECT_EQ(shared_->counters().cluster_retries.load(), 1u);
  EXPECT_EQ(shared_->outstanding(), 1u);  // still holds its slot while it waits
  router_->close(nullptr);
  ASSERT_TRUE(targets_[0]->ready());
  const Error error = targets_[0]->result().error();
  EXPECT_EQ(error.code(), errc::shut_down);
  EXPECT_EQ(error.message(), "INCR not sent: the multiplexer was closed");
  EXPECT_EQ(shared_->outstanding(), 0u);
  // The pause's end, once the I/O thread gets to it, finds the command complete: a timer
  // due after the pause's tells when it has run.
  asio::steady_timer later(pool_->next_context(), 100ms);
  std::promise<void> after_pause;
  later.async_wait([&](const asio::error_code&) { after_pause.set_value(); });
  go.set_value();
  after_pause.get_future().wait();
  EXPECT_EQ(node_->queued_count(), 0u);
}

}  // namespace
}  // namespace redmux::detail
