// Observability against a real server: the latency histograms count every command, per name
// and per endpoint, and status_text() prints them; the command hook sees each command with
// its OpenTelemetry fields and phases in order; the write hook counts what the writes
// carried; the log hears of a reconnect; status() per connection has writes and times.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/ports.hpp"
#include "support/recorder.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::wait_until;

TEST(ObservabilityTest, HistogramsCountEveryCommandPerNameAndPerEndpoint) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",latencyHistograms=true");
  Database db = mux->database();
  constexpr int kIncrs = 2000;
  std::vector<Future<long long>> futures;
  for (int i = 0; i < kIncrs; ++i) futures.push_back(db.incr("observed"));
  for (auto& future : futures) future.get();
  ASSERT_EQ(db.get("observed").get(), std::optional<std::string>(std::to_string(kIncrs)));
  // The GET's delivery is recorded right after its future completes: wait for it.
  ASSERT_TRUE(wait_until([&] {
    const Latencies now = mux->latencies();  // command() points into it
    const LatencyStats* get = now.command("GET");
    return get && get->to_delivery.count() == 1;
  }));
  const Latencies latencies = mux->latencies();
  const LatencyStats* incr = latencies.command("INCR");
  ASSERT_NE(incr, nullptr);
  EXPECT_EQ(incr->to_reply.count(), static_cast<std::uint64_t>(kIncrs));
  EXPECT_EQ(incr->to_delivery.count(), static_cast<std::uint64_t>(kIncrs));
  EXPECT_GT(incr->to_reply.percentile(0.5).count(), 0);
  EXPECT_LE(incr->to_reply.percentile(0.5), incr->to_reply.percentile(0.99));
  EXPECT_LE(incr->to_reply.percentile(0.99), incr->to_reply.max());
  const LatencyStats* endpoint = latencies.endpoint(server.address());
  ASSERT_NE(endpoint, nullptr);
  EXPECT_EQ(endpoint->to_reply.count(), static_cast<std::uint64_t>(kIncrs + 1));
  const std::string text = mux->status_text();
  EXPECT_NE(text.find("latency INCR: reply n=" + std::to_string(kIncrs) + " p50="),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("latency " + server.address() + ": reply n="), std::string::npos) << text;
}

TEST(ObservabilityTest, WithoutTheOptionThereAreNoHistograms) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  ASSERT_EQ(mux->database().incr("n").get(), 1);
  EXPECT_TRUE(mux->latencies().by_command.empty());
  EXPECT_EQ(mux->status_text().find("latency "), std::string::npos);
}

struct Recorded {
  std::string name;
  int db = -1;
  std::string address;
  int port = 0;
  CommandOutcome outcome{};
  std::string status_code;
  std::size_t bytes_written = 0;
  std::size_t bytes_read = 0;
  CommandPhases phases;
};

Recorded recorded(const CommandEvent& event) {
  return {std::string(event.operation_name),
          event.db_namespace,
          std::string(event.server_address),
          event.server_port,
          event.outcome,
          std::string(event.response_status_code),
          event.bytes_written,
          event.bytes_read,
          event.phases};
}

TEST(ObservabilityTest, TheCommandHookSeesEachCommandWithItsFieldsAndPhasesInOrder) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",defaultDatabase=3");
  std::mutex mutex;
  std::vector<Recorded> seen;
  mux->on_command([&](const CommandEvent& event) {
    std::lock_guard lock(mutex);
    seen.push_back(recorded(event));
  });
  std::atomic<std::size_t> writes{0}, written{0};
  mux->on_write([&](const WriteEvent& event) {
    writes.fetch_add(1);
    written.fetch_add(event.batch_size);
  });
  Database db = mux->database();
  ASSERT_TRUE(db.set("text", "value").get());
  EXPECT_THROW(db.lpush("text", "x").get(), ServerError);
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return seen.size() == 2;
  }));
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen[0].name, "SET");
  EXPECT_EQ(seen[0].db, 3);
  EXPECT_EQ(seen[0].address, server.host());
  EXPECT_EQ(seen[0].port, server.port());
  EXPECT_EQ(seen[0].outcome, CommandOutcome::Value);
  EXPECT_EQ(seen[0].bytes_read, 5u);  // +OK\r\n
  EXPECT_GT(seen[0].bytes_written, 0u);
  EXPECT_EQ(seen[1].name, "LPUSH");
  EXPECT_EQ(seen[1].outcome, CommandOutcome::ServerError);
  EXPECT_EQ(seen[1].status_code, "WRONGTYPE");
  for (const Recorded& one : seen) {
    EXPECT_LE(one.phases.created, one.phases.written) << one.name;
    EXPECT_LE(one.phases.written, one.phases.reply_read) << one.name;
    EXPECT_LE(one.phases.reply_read, one.phases.delivered) << one.name;
  }
  EXPECT_GE(writes.load(), 2u);
  EXPECT_GE(written.load(), 2u);
}

TEST(ObservabilityTest, TheCommandHookSeesACommandRefusedAtTheCallOnTheCallersThread) {
  // A queue full, an admin command without allowAdmin, a closed multiplexer: each refusal
  // reaches the hook as it is made, with no server (nothing was sent anywhere).
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() +
                                  ",defaultDatabase=2,maxQueuedCommands=1,asyncTimeout=10000");
  struct Refused {
    std::string name;
    int db = -1;
    std::string address;
    int port = 0;
    CommandOutcome outcome{};
    std::string error_type;
    std::string message;
    bool on_caller = false;
  };
  std::mutex mutex;
  std::vector<Refused> refused;
  const std::thread::id caller = std::this_thread::get_id();
  mux->on_command([&](const CommandEvent& event) {
    if (event.outcome == CommandOutcome::Value) return;
    std::lock_guard lock(mutex);
    refused.push_back({std::string(event.operation_name), event.db_namespace,
                       std::string(event.server_address), event.server_port, event.outcome,
                       std::string(event.error_type), std::string(event.error_message),
                       std::this_thread::get_id() == caller});
    EXPECT_EQ(event.phases.created, event.phases.delivered);
    EXPECT_EQ(event.phases.written, CommandPhases::TimePoint{});
  });
  Database db = mux->database();
  server.pause();
  Future<long long> accepted = db.incr("n");
  EXPECT_THROW(db.incr("n").get(), QueueFullError);
  server.resume();
  EXPECT_EQ(accepted.get(), 1);
  EXPECT_THROW(db.send<Reply>(CallOptions(), std::vector<Arg>{"FLUSHALL"}).get(), AdminModeError);
  // The same refusals when a Batch or a Transaction is given the command.
  Batch batch = db.batch();
  EXPECT_THROW(batch.send<Reply>(CallOptions(), std::vector<Arg>{"FLUSHALL"}).get(),
               AdminModeError);
  Transaction transaction = db.transaction();
  EXPECT_THROW(transaction.send<Reply>(CallOptions(), std::vector<Arg>{"SELECT", "1"}).get(),
               NotAllowedError);
  // Executed, such a transaction sends nothing; the batch hook hears of it all the same.
  std::vector<std::string> batches;  // kind, error type, size, server, message
  mux->on_batch([&](const BatchEvent& event) {
    std::lock_guard lock(mutex);
    batches.push_back(std::string(to_string(event.kind)) + " " + std::string(event.error_type) +
                      " " + std::to_string(event.batch_size) + " [" +
                      std::string(event.server_address) + "] " + std::string(event.error_message));
  });
  Future<long long> not_run = transaction.incr("n");
  EXPECT_EQ(transaction.execute().outcome, TransactionOutcome::Rejected);
  EXPECT_THROW(not_run.get(), TransactionAbortedError);
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_EQ(
        batches[0].rfind("transaction refused 1 [] a command was refused before sending: ", 0), 0u)
        << batches[0];
    EXPECT_NE(batches[0].find("SELECT"), std::string::npos) << batches[0];
  }
  mux->close();
  EXPECT_THROW(db.get("n").get(), ConnectionError);
  std::lock_guard lock(mutex);
  const std::pair<const char*, const char*> expected[] = {{"INCR", "queue_full"},
                                                          {"FLUSHALL", "refused"},
                                                          {"FLUSHALL", "refused"},
                                                          {"SELECT", "refused"},
                                                          {"GET", "connection_error"}};
  ASSERT_EQ(refused.size(), std::size(expected));
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_EQ(refused[i].name, expected[i].first);
    EXPECT_EQ(refused[i].error_type, expected[i].second) << refused[i].name;
    EXPECT_EQ(refused[i].outcome, CommandOutcome::ConnectionError) << refused[i].name;
    EXPECT_EQ(refused[i].db, 2) << refused[i].name;
    EXPECT_EQ(refused[i].address, "") << refused[i].name;
    EXPECT_EQ(refused[i].port, 0) << refused[i].name;
    EXPECT_FALSE(refused[i].message.empty()) << refused[i].name;
    EXPECT_TRUE(refused[i].on_caller) << refused[i].name;
  }
}

TEST(ObservabilityTest, EachConnectionSaysWhatItsWritesCarriedAndWhenItLastReadAndWrote) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  std::vector<Future<long long>> futures;
  for (int i = 0; i < 500; ++i) futures.push_back(db.incr("n"));
  for (auto& future : futures) future.get();
  const MultiplexerStatus status = mux->status();
  ASSERT_EQ(status.per_connection.size(), 1u);
  const ConnectionStatus& one = status.per_connection[0];
  EXPECT_GE(one.writes, 1u);
  EXPECT_GE(one.commands_written, 500u);
  EXPECT_GE(one.commands_per_write(), 1.0);
  EXPECT_LE(one.writes, status.writes);
  EXPECT_NE(one.last_read, std::chrono::steady_clock::time_point{});
  EXPECT_NE(one.last_write, std::chrono::steady_clock::time_point{});
  EXPECT_LE(one.last_write, std::chrono::steady_clock::now());
  const std::string text = mux->status_text();
  EXPECT_NE(text.find(" commands/write) last read "), std::string::npos) << text;
}

TEST(ObservabilityTest, TheLogIsSilentUntilInstalledThenHearsOfABreakAndTheReconnect) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",reconnectBaseDelay=20ms");
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> logged;
  mux->on_log(LogLevel::Info, [&](const LogRecord& record) {
    std::lock_guard lock(mutex);
    logged.emplace_back(record.level, std::string(record.message));
  });
  server.kill();
  server.restart();
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    for (const auto& [level, message] : logged) {
      if (message == "connection restored") return true;
    }
    return false;
  })) << mux->status_text();
  std::lock_guard lock(mutex);
  bool warned = false;
  for (const auto& [level, message] : logged) {
    if (level == LogLevel::Warning && message.starts_with("connection failed")) warned = true;
  }
  EXPECT_TRUE(warned);
}

TEST(ObservabilityTest, TimeoutsReachTheLogAtMostOnceASecondWithTheirCount) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  std::mutex mutex;
  std::vector<std::string> warnings;
  mux->on_log(LogLevel::Warning, [&](const LogRecord& record) {
    std::lock_guard lock(mutex);
    if (record.endpoint == server.address()) warnings.emplace_back(record.message);
  });
  const auto count_of = [](const std::string& record) -> std::uint64_t {
    // "12 commands timed out …; the latest: …", or one timeout's own message.
    const std::size_t at = record.find(" commands timed out");
    return at == std::string::npos ? 1 : std::stoull(record.substr(0, at));
  };
  const auto records = [&] {
    std::lock_guard lock(mutex);
    return warnings;
  };
  server.pause();  // every command now times out
  const CallOptions short_timeout(Flags::None, 100ms);
  std::vector<Future<long long>> burst;
  for (int i = 0; i < 20; ++i) burst.push_back(db.incr("k", short_timeout));
  for (auto& one : burst) EXPECT_THROW(one.get(), TimeoutError);
  ASSERT_TRUE(wait_until([&] { return !records().empty(); })) << mux->status_text();
  // More timeouts until a second record comes, which is at least a second after the first.
  const auto first_seen = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until(
      [&] {
        EXPECT_THROW(db.incr("k", short_timeout).get(), TimeoutError);
        return records().size() >= 2;
      },
      10s));
  EXPECT_GE(std::chrono::steady_clock::now() - first_seen, 800ms);
  const std::vector<std::string> logged = records();
  EXPECT_EQ(logged.size(), 2u);
  for (const std::string& record : logged) {
    EXPECT_NE(record.find("Timeout awaiting reply to INCR"), std::string::npos) << record;
  }
  EXPECT_NE(logged[1].find("since the last such record"), std::string::npos) << logged[1];
  // The two records account for every timeout so far: the burst's 20 and those after it, but
  // for the one the loop may have sent after the second record's timeout failed its caller
  // and before the record was logged (the future completes first).
  const std::uint64_t logged_count = count_of(logged[0]) + count_of(logged[1]);
  const std::uint64_t timeouts = mux->status().timeouts;
  EXPECT_GE(logged_count, 21u) << logged[0] << "\n" << logged[1];
  EXPECT_LE(logged_count, timeouts);
  EXPECT_GE(logged_count + 1, timeouts) << logged[0] << "\n" << logged[1];
  server.resume();
}

TEST(ObservabilityTest, AFailedCommandsEventCountsOnlyTheBytesThatReachedTheSocket) {
  // "*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n": 21 bytes.
  constexpr std::size_t kIncrBytes = 21;
  std::mutex mutex;
  std::vector<std::pair<CommandOutcome, std::size_t>> seen;
  const auto record = [&](const CommandEvent& event) {
    std::lock_guard lock(mutex);
    seen.emplace_back(event.outcome, event.bytes_written);
  };
  const auto events = [&] {
    std::lock_guard lock(mutex);
    return seen;
  };
  {
    // Written, then timed out: the server is stopped.
    RedisServer server;
    auto mux = Multiplexer::connect(server.address());
    mux->on_command(record);
    server.pause();
    EXPECT_THROW(mux->database().incr("k", CallOptions(Flags::None, 100ms)).get(), TimeoutError);
    ASSERT_TRUE(wait_until([&] { return events().size() == 1; }));
    EXPECT_EQ(events()[0], std::make_pair(CommandOutcome::Timeout, kIncrBytes));
    server.resume();
  }
  {
    // Never sent: nothing listens, so it timed out in the queue.
    const test::ClosedPort closed;
    auto mux = Multiplexer::connect(closed.address() + ",abortConnect=false");
    mux->on_command(record);
    EXPECT_THROW(mux->database().incr("k", CallOptions(Flags::None, 100ms)).get(), TimeoutError);
    ASSERT_TRUE(wait_until([&] { return events().size() == 2; }));
    EXPECT_EQ(events()[1], std::make_pair(CommandOutcome::Timeout, std::size_t{0}));
    EXPECT_EQ(mux->status().bytes_written, 0u);
  }
}

// A command that failed after it was written says when it was written, and every failed
// command when its future was failed (delivered): a span built from the event has its real
// length. Neither is logged again as a slow command.
TEST(ObservabilityTest, AFailedCommandsPhasesSayWhenItWasWrittenAndWhenItFailed) {
  std::mutex mutex;
  std::vector<Recorded> seen;
  const auto record = [&](const CommandEvent& event) {
    std::lock_guard lock(mutex);
    seen.push_back(recorded(event));
  };
  const auto events = [&] {
    std::lock_guard lock(mutex);
    return seen;
  };
  const auto expect_failed = [](const Recorded& event, bool written) {
    EXPECT_NE(event.phases.created, CommandPhases::TimePoint{});
    EXPECT_EQ(event.phases.written != CommandPhases::TimePoint{}, written);
    if (written) {
      EXPECT_LE(event.phases.created, event.phases.written);
    }
    EXPECT_EQ(event.phases.reply_read, CommandPhases::TimePoint{});  // no reply came
    EXPECT_NE(event.phases.delivered, CommandPhases::TimePoint{});
    EXPECT_LE(std::max(event.phases.created, event.phases.written), event.phases.delivered);
  };
  {
    // Written (by its caller, the connection being idle), then timed out.
    RedisServer server;
    auto mux = Multiplexer::connect(server.address() + ",slowCommandThreshold=10ms");
    mux->on_command(record);
    server.pause();
    EXPECT_THROW(mux->database().incr("k", CallOptions(Flags::None, 100ms)).get(), TimeoutError);
    ASSERT_TRUE(wait_until([&] { return events().size() == 1; }));
    EXPECT_EQ(events()[0].outcome, CommandOutcome::Timeout);
    expect_failed(events()[0], /*written=*/true);
    EXPECT_GE(events()[0].phases.delivered - events()[0].phases.created, 100ms);
    // Then its connection killed under a second one, sent and awaiting its reply.
    auto lost = mux->database().incr("k", CallOptions(Flags::None, 10s));
    ASSERT_TRUE(wait_until([&] { return mux->status().bytes_written >= 2 * 21; }));
    server.kill();
    EXPECT_THROW(lost.get(), ConnectionError);
    ASSERT_TRUE(wait_until([&] { return events().size() == 2; }));
    EXPECT_EQ(events()[1].outcome, CommandOutcome::ConnectionError);
    expect_failed(events()[1], /*written=*/true);
    EXPECT_EQ(mux->status().slow_commands, 0u);  // logged as what they were, not as slow
  }
  {
    // Never sent: nothing listens, so it timed out in the queue.
    const test::ClosedPort closed;
    auto mux = Multiplexer::connect(closed.address() + ",abortConnect=false");
    mux->on_command(record);
    EXPECT_THROW(mux->database().incr("k", CallOptions(Flags::None, 100ms)).get(), TimeoutError);
    ASSERT_TRUE(wait_until([&] { return events().size() == 3; }));
    expect_failed(events()[2], /*written=*/false);
  }
}

// A write the caller's thread made itself is reported by the I/O thread later, but dated when
// it was made.
TEST(ObservabilityTest, ACallersOwnWriteIsDatedWhenItWasMade) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  std::mutex mutex;
  std::vector<WriteEvent> writes;
  mux->on_write([&](const WriteEvent& event) {
    std::lock_guard lock(mutex);
    writes.push_back(event);
  });
  ASSERT_EQ(mux->database().incr("warm").get(), 1);  // the connection is idle between them
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return writes.size() == 1;
  }));
  server.pause();  // the reply, and with it the I/O thread's next turn, comes later
  Future<long long> incr = mux->database().incr("k");
  const auto issued = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(50ms);  // a gap between the write and the reply, not a wait
  server.resume();
  ASSERT_EQ(incr.get(), 1);
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return writes.size() == 2;
  }));
  std::lock_guard lock(mutex);
  EXPECT_TRUE(writes[1].from_caller);
  EXPECT_EQ(writes[1].batch_size, 1u);
  EXPECT_LE(writes[1].at, issued);
}

// What the hooks and histograms say is the callers' commands and the server's time: not
// redmux's own lookup of an unknown command (COMMAND INFO), not the wait a blocking command
// asked for; and a command failed by close() is heard of as one failed by a break.
TEST(ObservabilityTest, RedmuxsOwnLookupIsNotObserved) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",latencyHistograms=true");
  std::mutex mutex;
  std::vector<std::string> names;
  mux->on_command([&](const CommandEvent& event) {
    std::lock_guard lock(mutex);
    names.emplace_back(event.operation_name);
  });
  Database db = mux->database();
  EXPECT_THROW(db.execute({"NOSUCHCOMMAND", "x"}).get(), ServerError);
  // Its lookup rides the same connection, right behind it: answered before this INCR.
  ASSERT_EQ(db.incr("n").get(), 1);
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return std::find(names.begin(), names.end(), "INCR") != names.end();
  }));
  EXPECT_EQ(server.command_calls("command|info"), 1);  // it was sent
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(std::count(names.begin(), names.end(), "COMMAND INFO"), 0)
        << ::testing::PrintToString(names);
  }
  const Latencies latencies = mux->latencies();
  EXPECT_EQ(latencies.command("COMMAND INFO"), nullptr);
  EXPECT_EQ(mux->status().commands, 2u);
}

TEST(ObservabilityTest, ABlockingCommandsWaitIsNeitherSlowNorTheEndpointsLatency) {
  RedisServer server;
  auto mux =
      Multiplexer::connect(server.address() + ",latencyHistograms=true,slowCommandThreshold=50ms");
  std::atomic<int> blocking_events{0};
  mux->on_command([&](const CommandEvent& event) {
    if (event.blocking && event.operation_name == "BLPOP") blocking_events.fetch_add(1);
  });
  Database db = mux->database();
  EXPECT_EQ(db.blpop("empty", 200ms).get(), std::nullopt);
  ASSERT_EQ(db.incr("n").get(), 1);
  ASSERT_TRUE(wait_until([&] {
    const Latencies now = mux->latencies();
    const LatencyStats* blpop = now.command("BLPOP");
    const LatencyStats* incr = now.command("INCR");
    return blpop && blpop->to_delivery.count() == 1 && incr && incr->to_delivery.count() == 1;
  }));
  EXPECT_EQ(blocking_events.load(), 1);
  EXPECT_EQ(mux->status().slow_commands, 0u);
  const Latencies latencies = mux->latencies();
  const LatencyStats* endpoint = latencies.endpoint(server.address());
  ASSERT_NE(endpoint, nullptr);
  EXPECT_EQ(endpoint->to_reply.count(), 1u);  // the INCR
  EXPECT_LT(endpoint->to_reply.max(), 150ms);
}

TEST(ObservabilityTest, CommandsFailedByCloseReachTheCommandHook) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  test::Recorder<Recorded> seen;
  mux->on_command([&](const CommandEvent& event) { seen.add(recorded(event)); });
  server.pause();
  Database db = mux->database();
  std::vector<Future<long long>> pending;
  for (int i = 0; i < 3; ++i) pending.push_back(db.incr("k"));
  mux->close();
  for (auto& future : pending) EXPECT_THROW(future.get(), ConnectionError);
  server.resume();
  ASSERT_TRUE(wait_until([&] { return seen.size() == 3; })) << seen.size();
  for (const Recorded& event : seen.all()) {
    EXPECT_EQ(event.name, "INCR");
    EXPECT_EQ(event.outcome, CommandOutcome::ConnectionError);
    EXPECT_NE(event.phases.delivered, CommandPhases::TimePoint{});
  }
}

}  // namespace
}  // namespace redmux
