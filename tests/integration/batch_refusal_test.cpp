// Commands a Batch or a Transaction refuses before sending: the future holds the refusal
// whether or not the command was fire-and-forget, and nothing is added behind the caller's
// back (a refused command is not part of the batch).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using test::RedisServer;
using namespace std::chrono_literals;

// Any command through a sink's send() (the generic execute() is hidden by Batch::execute()).
template <class Sink>
Future<void> raw(Sink& sink, std::initializer_list<Arg> args, Flags flags) {
  return sink.template send<void>(CallOptions(flags),
                                  std::span<const Arg>(args.begin(), args.size()));
}

template <class T>
errc code_of(Future<T>& future) {
  Result<T> result = future.result();
  return result ? errc{} : result.error().code();
}

// A command added to a moved-from Batch or Transaction is refused, not a crash (size() and
// execute() already treated a moved-from one as empty).
TEST(BatchRefusalTest, ACommandAddedToAMovedFromBatchOrTransactionIsRefused) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  Batch batch = db.batch();
  Batch kept = std::move(batch);
  auto incr = batch.incr("n");  // NOLINT(bugprone-use-after-move): what is tested
  ASSERT_TRUE(incr.ready());
  EXPECT_EQ(code_of(incr), errc::invalid_argument);
  EXPECT_EQ(raw(batch, {"PING"}, Flags::FireAndForget).result().error().message(),
            "redmux: a command added to a moved-from Batch");
  EXPECT_EQ(batch.size(), 0u);
  Transaction tx = db.transaction();
  Transaction kept_tx = std::move(tx);
  auto queued = tx.incr("n");  // NOLINT(bugprone-use-after-move): what is tested
  ASSERT_TRUE(queued.ready());
  EXPECT_EQ(queued.result().error().message(),
            "redmux: a command added to a moved-from Transaction");
  // The batch moved to goes on as if nothing happened.
  auto counted = kept.incr("n");
  kept.execute();
  EXPECT_EQ(counted.get(), 1);
}

// Under queueFullPolicy=wait, a batch whose own commands hold every slot is not made to wait
// for room only its own execute() can make: what does not fit is refused at once, saying
// why, and what was added runs.
TEST(BatchRefusalTest, ABatchThatHoldsEverySlotItselfIsRefusedAtOnceNotMadeToWaitOnItself) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() +
                                  ",maxQueuedCommands=5,queueFullPolicy=wait,asyncTimeout=2000");
  Database db = mux->database();
  Batch batch = db.batch();
  std::vector<Future<long long>> added;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i) added.push_back(batch.incr("n"));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 1s) << "an add waited for room its own batch held";
  EXPECT_EQ(batch.size(), 5u);
  for (int i = 5; i < 8; ++i) {
    ASSERT_TRUE(added[i].ready());
    EXPECT_EQ(added[i].result().error().message(),
              "INCR refused: this Batch's own 5 commands hold every slot of "
              "maxQueuedCommands=5 until execute() sends them; execute() it first, or raise "
              "maxQueuedCommands");
  }
  batch.execute();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(added[i].get(), i + 1);
}

TEST(BatchRefusalTest, RefusedFireAndForgetCommandsFailTheirFuturesAndAreNotAdded) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());  // allowAdmin=false
  Database db = mux->database();
  Batch batch = db.batch();
  auto admin = raw(batch, {"FLUSHALL"}, Flags::FireAndForget);
  auto state = raw(batch, {"CLIENT", "REPLY", "OFF"}, Flags::FireAndForget);
  auto blocking = raw(batch, {"BLPOP", "q", "0"}, Flags::FireAndForget);
  EXPECT_EQ(batch.size(), 0u) << "a refused command was added to the batch";
  ASSERT_TRUE(admin.ready());
  EXPECT_EQ(code_of(admin), errc::admin_required);
  EXPECT_EQ(code_of(state), errc::not_allowed);
  EXPECT_EQ(code_of(blocking), errc::not_allowed);

  // Accepted fire-and-forget commands still complete at once with success and run.
  auto incr = batch.incr("n", Flags::FireAndForget);
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_TRUE(incr.result().has_value());
  batch.execute();
  EXPECT_EQ(db.get("n").get(), std::optional<std::string>("1"));
}

TEST(BatchRefusalTest, ARefusedFireAndForgetCommandInATransactionFailsItsFutureAndTheTransaction) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  Transaction tx = db.transaction();
  auto refused = raw(tx, {"SELECT", "1"}, Flags::FireAndForget);
  ASSERT_TRUE(refused.ready());
  Result<void> result = refused.result();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), errc::not_allowed);
  // The advice fits a transaction, which has a connection of its own.
  EXPECT_NE(result.error().message().find("mux->database(index).transaction()"), std::string::npos)
      << result.error().message();
  EXPECT_EQ(result.error().message().find("shared by every caller"), std::string::npos)
      << result.error().message();
  auto incr = tx.incr("n");
  TransactionResult outcome = tx.execute();
  EXPECT_EQ(outcome.outcome, TransactionOutcome::Rejected);
  EXPECT_FALSE(incr.result().has_value());
  EXPECT_EQ(db.get("n").get(), std::nullopt);  // nothing ran
}

TEST(BatchRefusalTest, WaitingForACommandOfABatchOrTransactionNotExecutedFailsInsteadOfHanging) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",asyncTimeout=1000");
  Database db = mux->database();
  Batch batch = db.batch();
  Future<bool> set = batch.set("k", "v");
  EXPECT_FALSE(set.wait_for(std::chrono::milliseconds(10)));
  try {
    (void)set.get();
    ADD_FAILURE() << "get() returned for a command whose batch was not executed";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("call execute() first"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(set.valid());  // not consumed: once executed, it completes
  batch.execute();
  EXPECT_TRUE(set.get());

  Transaction tx = db.transaction();
  Future<long long> incr = tx.incr("n");
  Result<long long> early = incr.result();
  ASSERT_FALSE(early.has_value());
  EXPECT_EQ(early.error().code(), errc::invalid_argument);
  EXPECT_TRUE(tx.execute().committed());
  EXPECT_EQ(incr.get(), 1);
}

// A batch destroyed without execute(): each command fails not sent, naming itself, and
// nothing ran.
TEST(BatchRefusalTest, ABatchDestroyedUnexecutedFailsEachCommandByName) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  Future<long long> incr;
  Future<bool> set;
  {
    Batch batch = db.batch();
    incr = batch.incr("destroyed:n");
    set = batch.set("destroyed:k", "v");
  }
  const Result<long long> counted = incr.result();
  ASSERT_FALSE(counted.has_value());
  EXPECT_EQ(counted.error().code(), errc::not_sent);
  EXPECT_EQ(counted.error().message(), "INCR not sent: the batch was destroyed before execute()");
  const Result<bool> stored = set.result();
  ASSERT_FALSE(stored.has_value());
  EXPECT_EQ(stored.error().message(), "SET not sent: the batch was destroyed before execute()");
  EXPECT_EQ(server.cli({"EXISTS", "destroyed:n", "destroyed:k"}), "0");
}

// A future chained from a batched command (then(), twice; when_all()) cannot complete before
// execute() either: waiting for it fails the same way, naming the command it continues.
TEST(BatchRefusalTest, WaitingForAFutureChainedFromACommandNotExecutedFailsInsteadOfHanging) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",asyncTimeout=1000");
  Database db = mux->database();
  Batch batch = db.batch();
  Future<std::size_t> length =
      batch.set("k", "value")
          .then([](Result<bool> set) { return set.value() ? std::string("value") : ""; })
          .then([](Result<std::string> text) { return text.value().size(); });
  std::vector<Future<long long>> counters;
  counters.push_back(batch.incr("a"));
  counters.push_back(batch.incr("b"));
  Future<std::vector<Result<long long>>> both = when_all(std::move(counters));
  try {
    (void)length.get();
    ADD_FAILURE() << "get() returned for a continuation of a command not executed";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("it continues SET, which is in a Batch"),
              std::string::npos)
        << e.what();
  }
  ASSERT_TRUE(length.valid());
  const Result<std::vector<Result<long long>>> early = both.result();
  ASSERT_FALSE(early.has_value());
  EXPECT_EQ(early.error().code(), errc::invalid_argument);
  EXPECT_NE(early.error().message().find("it continues INCR"), std::string::npos)
      << early.error().message();

  batch.execute();
  EXPECT_EQ(length.get(), 5u);
  const std::vector<Result<long long>> counted = both.get();
  ASSERT_EQ(counted.size(), 2u);
  EXPECT_EQ(counted[0].value(), 1);
  EXPECT_EQ(counted[1].value(), 1);

  // Futures of two batches: executing the first leaves the second's to wait for; waiting for
  // the whole fails, naming a command still waiting, until the second is executed too.
  Batch first = db.batch();
  Batch second = db.batch();
  std::vector<Future<long long>> across;
  across.push_back(first.incr("c"));
  across.push_back(second.decr("d"));
  Future<std::vector<Result<long long>>> all = when_all(std::move(across));
  first.execute();
  const Result<std::vector<Result<long long>>> half = all.result();
  ASSERT_FALSE(half.has_value());
  EXPECT_NE(half.error().message().find("it continues DECR, which is in a Batch"),
            std::string::npos)
      << half.error().message();
  ASSERT_TRUE(all.valid());
  second.execute();
  const std::vector<Result<long long>> both_ran = all.get();
  ASSERT_EQ(both_ran.size(), 2u);
  EXPECT_EQ(both_ran[0].value(), 1);
  EXPECT_EQ(both_ran[1].value(), -1);
  // And a continuation of such a when_all() the same.
  Batch third = db.batch();
  Batch fourth = db.batch();
  std::vector<Future<long long>> later;
  later.push_back(third.incr("c"));
  later.push_back(fourth.decr("d"));
  Future<std::size_t> counted_later =
      when_all(std::move(later)).then([](Result<std::vector<Result<long long>>> all) {
        return all.value().size();
      });
  third.execute();
  const Result<std::size_t> early_count = counted_later.result();
  ASSERT_FALSE(early_count.has_value());
  EXPECT_NE(early_count.error().message().find("it continues DECR, which is in a Batch"),
            std::string::npos)
      << early_count.error().message();
  fourth.execute();
  EXPECT_EQ(counted_later.get(), 2u);

  Transaction tx = db.transaction();
  Future<long long> doubled = tx.incr("n").then([](Result<long long> n) { return 2 * n.value(); });
  EXPECT_FALSE(doubled.result().has_value());
  EXPECT_TRUE(tx.execute().committed());
  EXPECT_EQ(doubled.get(), 2);
}

TEST(BatchRefusalTest, ABatchedCommandWhoseTimeoutPassedBeforeExecuteIsNotSent) {
  // Its timeout counts from when it was added: at execute() it is over, and the command must
  // not run behind the caller's TimeoutError.
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  const std::uint64_t timeouts_before = mux->status().timeouts;
  Batch batch = db.batch();
  Future<long long> late =
      batch.incr("late", CallOptions(Flags::None, std::chrono::milliseconds(1)));
  Future<long long> fine = batch.incr("fine");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // its 1 ms passes
  batch.execute();
  Result<long long> result = late.result();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), errc::timeout);
  EXPECT_NE(result.error().message().find("not sent"), std::string::npos)
      << result.error().message();
  EXPECT_EQ(fine.get(), 1);
  EXPECT_EQ(server.cli({"EXISTS", "late"}), "0");
  EXPECT_EQ(server.command_calls("incr"), 1);
  // One TimeoutError, one timeout counted.
  EXPECT_EQ(mux->status().timeouts - timeouts_before, 1u);
}

}  // namespace
}  // namespace redmux
