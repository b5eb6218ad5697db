// The batch hook against a real server: a Batch is one event when executed (its commands,
// bytes, database and server) and one write; a transaction is one event when it ends, with
// its outcome (committed, stopped by a condition, refused by EXEC); none is raised once the
// hook is removed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/recorder.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using test::RedisServer;
using test::wait_until;

struct SeenBatch {
  BatchKind kind{};
  std::string name;
  int db = -1;
  std::string address;
  int port = 0;
  std::size_t size = 0;
  std::size_t bytes = 0;
  CommandOutcome outcome{};
  bool committed = false;
  std::string status_code;
  std::string error_type;
  std::chrono::steady_clock::time_point created, ended;
};

class BatchRecorder : public test::Recorder<SeenBatch> {
 public:
  void install(Multiplexer& mux) {
    mux.on_batch([this](const BatchEvent& e) {
      add({e.kind, std::string(e.operation_name), e.db_namespace, std::string(e.server_address),
           e.server_port, e.batch_size, e.bytes_written, e.outcome, e.committed,
           std::string(e.response_status_code), std::string(e.error_type), e.created, e.ended});
    });
  }
  std::vector<SeenBatch> seen() const { return all(); }
};

TEST(BatchEventsTest, ABatchIsOneEventWithItsCommandsAndBytesAndOneWrite) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database(2);
  ASSERT_EQ(db.incr("warm").get(), 1);  // connected and idle: the batch goes out as one write
  BatchRecorder batches;
  batches.install(*mux);
  test::Recorder<std::size_t> write_sizes;
  mux->on_write([&](const WriteEvent& e) { write_sizes.add(e.batch_size); });
  constexpr std::size_t kCommands = 25;
  Batch batch = db.batch();
  std::vector<Future<long long>> futures;
  for (std::size_t i = 0; i < kCommands; ++i) futures.push_back(batch.incr("b"));
  // What those commands are on the wire: "*2\r\n$4\r\nINCR\r\n$1\r\nb\r\n", 21 bytes each.
  const std::size_t bytes = kCommands * 21;
  const auto before = std::chrono::steady_clock::now();
  batch.execute();
  for (auto& future : futures) future.get();
  const std::vector<SeenBatch> seen = batches.seen();
  ASSERT_EQ(seen.size(), 1u);
  const SeenBatch& one = seen[0];
  EXPECT_EQ(one.kind, BatchKind::Batch);
  EXPECT_EQ(one.name, "BATCH");
  EXPECT_EQ(one.db, 2);
  EXPECT_EQ(one.address, "127.0.0.1");
  EXPECT_EQ(one.port, server.port());
  EXPECT_EQ(one.size, kCommands);
  EXPECT_EQ(one.bytes, bytes);
  EXPECT_EQ(one.outcome, CommandOutcome::Value);
  EXPECT_GE(one.created, before);
  EXPECT_GE(one.ended, one.created);
  // The write that carried it: every command of the batch in one write (the connection was
  // idle, so nothing else shares it).
  ASSERT_TRUE(wait_until([&] {
    return write_sizes.count_if([](std::size_t size) { return size >= kCommands; }) > 0;
  }));
  // Removed: no more events, and an empty batch raises none.
  mux->on_batch({});
  Batch again = db.batch();
  auto last = again.incr("b");
  again.execute();
  EXPECT_EQ(last.get(), static_cast<long long>(kCommands + 1));
  EXPECT_EQ(batches.seen().size(), 1u);
}

TEST(BatchEventsTest, ABatchRefusedWhileItsConnectionIsDownWroteNothing) {
  // backlogPolicy=failFast: refused on the connection it was routed to, which the event
  // names; none of its bytes reached a socket.
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",backlogPolicy=failFast");
  Database db = mux->database();
  ASSERT_EQ(db.incr("warm").get(), 1);
  BatchRecorder batches;
  batches.install(*mux);
  server.kill();
  ASSERT_TRUE(wait_until([&] { return mux->status().connected == 0; }));
  Batch batch = db.batch();
  auto incr = batch.incr("b");
  batch.execute();
  EXPECT_THROW(incr.get(), ConnectionError);
  const std::vector<SeenBatch> seen = batches.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].outcome, CommandOutcome::ConnectionError);
  EXPECT_EQ(seen[0].port, server.port());
  EXPECT_EQ(seen[0].size, 1u);
  EXPECT_EQ(seen[0].bytes, 0u);
}

TEST(BatchEventsTest, ATransactionIsOneEventWithItsOutcome) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  BatchRecorder batches;
  batches.install(*mux);

  Transaction committed = db.transaction();
  committed.incr("t");
  committed.set("u", "1");
  const auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(committed.execute());

  Transaction stopped = db.transaction();
  stopped.add_condition(Condition::key_exists("absent"));
  stopped.incr("t");
  ASSERT_EQ(stopped.execute().outcome, TransactionOutcome::ConditionFailed);

  // EXEC refuses the transaction: the server would not queue a command (wrong arity).
  Transaction refused = db.transaction();
  refused.incr("t");
  refused.execute({"GET", "a", "b"});
  ASSERT_EQ(refused.execute().outcome, TransactionOutcome::Rejected);

  // Each event is raised before execute() returns its result.
  const std::vector<SeenBatch> seen = batches.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].kind, BatchKind::Transaction);
  EXPECT_EQ(seen[0].name, "MULTI");
  EXPECT_EQ(seen[0].size, 2u);
  EXPECT_GT(seen[0].bytes, 0u);
  EXPECT_EQ(seen[0].outcome, CommandOutcome::Value);
  EXPECT_TRUE(seen[0].committed);
  EXPECT_EQ(seen[0].address, "127.0.0.1");
  EXPECT_EQ(seen[0].port, server.port());
  EXPECT_GE(seen[0].created, before);
  EXPECT_GE(seen[0].ended, seen[0].created);

  EXPECT_EQ(seen[1].outcome, CommandOutcome::Value);
  EXPECT_FALSE(seen[1].committed);
  EXPECT_EQ(seen[1].size, 1u);

  EXPECT_EQ(seen[2].outcome, CommandOutcome::ServerError);
  EXPECT_FALSE(seen[2].committed);
  EXPECT_FALSE(seen[2].error_type.empty());
  EXPECT_EQ(db.get("t").get(), std::optional<std::string>("1"));
}

}  // namespace
}  // namespace redmux
