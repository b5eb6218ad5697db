// Connections that are not there, go silent, or break with commands not yet on the wire:
// starting with the server unreachable (abortConnect=false, both backlog policies), a
// half-open connection (the proxy freezes it without closing), and commands that never left
// the client when the connection broke (resent after the reconnect, in order), and large
// commands that their callers write themselves while the connection is cut under them.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fault/fault_util.hpp"
#include "redmux/redmux.hpp"
#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fault::code_of;
using fault::OutcomeTally;

constexpr const char* kQuickReconnect = ",reconnectBaseDelay=20,reconnectMaxDelay=100";

// --- starting with the server unreachable -------------------------------------------------

// How the server is unreachable at first.
enum class Down {
  Refused,       // nothing listens (connect: ECONNREFUSED)
  ClosedAtOnce,  // a listener accepts and closes at once
  ServerKilled,  // the proxy accepts but the server behind it is gone
};

class StartDownTest : public ::testing::TestWithParam<Down> {
 protected:
  void go_down(test::RedisServer& server, test::FaultProxy& proxy) {
    switch (GetParam()) {
      case Down::Refused:
        proxy.set_admission(test::Admission::Refuse);
        break;
      case Down::ClosedAtOnce:
        proxy.set_admission(test::Admission::CloseAtOnce);
        break;
      case Down::ServerKilled:
        server.kill();
        break;
    }
  }
  void come_up(test::RedisServer& server, test::FaultProxy& proxy) {
    if (GetParam() == Down::ServerKilled) server.restart();
    proxy.set_admission(test::Admission::Forward);
  }
  // The multiplexer has been trying (and failing) for a while: three attempts the proxy saw,
  // or (nothing listens, so nothing to count) half a second.
  bool attempts_seen(const test::FaultProxy& proxy, Clock::time_point since) const {
    if (GetParam() == Down::Refused) return Clock::now() - since >= 500ms;
    return proxy.connections_accepted() >= 3;
  }
};

TEST_P(StartDownTest, QueuePolicyHoldsCommandsAndSendsThemInOrderOnceUp) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  go_down(server, proxy);
  auto mux = fault::connect_to(
      proxy.address(), std::string(",abortConnect=false,asyncTimeout=20000") + kQuickReconnect);
  const auto started = Clock::now();
  EXPECT_FALSE(mux->is_connected());
  Database db = mux->database();
  std::vector<Future<long long>> pushes;
  for (int i = 0; i < 200; ++i) pushes.push_back(db.rpush("start:list", std::to_string(i)));
  ASSERT_TRUE(test::wait_until([&] { return attempts_seen(proxy, started); }, 10s));
  for (const auto& f : pushes)
    EXPECT_FALSE(f.ready()) << "failed while the backlog policy is queue";

  come_up(server, proxy);
  for (int i = 0; i < 200; ++i) {
    Result<long long> r = pushes[i].result();
    ASSERT_TRUE(r) << "#" << i << ": " << r.error().message();
    EXPECT_EQ(*r, i + 1);  // sent in order, each exactly once
  }
  EXPECT_TRUE(mux->is_connected());
  const auto list = db.lrange("start:list", 0, -1).get();
  ASSERT_EQ(list.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(list[i], std::to_string(i));
}

TEST_P(StartDownTest, FailFastPolicyFailsAtOnceUntilUp) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  go_down(server, proxy);
  auto mux =
      fault::connect_to(proxy.address(), std::string(",abortConnect=false,asyncTimeout=20000,"
                                                     "backlogPolicy=failFast") +
                                             kQuickReconnect);
  Database db = mux->database();
  for (int i = 0; i < 50; ++i) {
    const auto start = Clock::now();
    Result<long long> r = db.incr("start:n").result();
    ASSERT_FALSE(r) << "a value while no server is reachable";
    EXPECT_EQ(r.error().code(), errc::disconnected) << r.error().message();
    EXPECT_LT(Clock::now() - start, 1s) << "not at once (asyncTimeout is 20 s)";
  }
  // Fire-and-forget is refused the same way: its future holds the reason (it was dropped
  // without a word).
  Result<long long> dropped = db.incr("start:n", Flags::FireAndForget).result();
  ASSERT_FALSE(dropped) << "a fire-and-forget command accepted while no server is reachable";
  EXPECT_EQ(dropped.error().code(), errc::disconnected) << dropped.error().message();
  EXPECT_NE(dropped.error().message().find("backlogPolicy=failFast"), std::string::npos)
      << dropped.error().message();
  come_up(server, proxy);
  ASSERT_TRUE(test::wait_until([&] { return mux->is_connected(); }, 10s)) << mux->status_text();
  EXPECT_EQ(db.incr("start:n").get(), 1);  // none of the failed INCRs ran
}

INSTANTIATE_TEST_SUITE_P(Unreachable, StartDownTest,
                         ::testing::Values(Down::Refused, Down::ClosedAtOnce, Down::ServerKilled),
                         [](const ::testing::TestParamInfo<Down>& info) {
                           switch (info.param) {
                             case Down::Refused:
                               return "Refused";
                             case Down::ClosedAtOnce:
                               return "ClosedAtOnce";
                             case Down::ServerKilled:
                               return "ServerKilled";
                           }
                           return "Unknown";
                         });

TEST(FailFastTest, ABatchATransactionAndABlockingCommandAreRefusedAtOnceLikeALoneCommand) {
  // The next attempt is 5 s away: a refusal that waited for it would not come at once.
  test::RedisServer server;
  auto mux = fault::connect_to(server.address(),
                               ",backlogPolicy=failFast,asyncTimeout=20000,"
                               "reconnectBaseDelay=5000,reconnectMaxDelay=5000");
  // Refusals at the call reach the command hook, as the caller gets them.
  std::mutex mutex;
  std::vector<std::string> refused;
  mux->on_command([&](const CommandEvent& event) {
    if (event.error_type != "connection_error" || !event.server_address.empty()) return;
    std::lock_guard lock(mutex);
    refused.emplace_back(event.operation_name);
  });
  Database db = mux->database();
  ASSERT_EQ(db.incr("ff:n").get(), 1);
  server.kill();
  ASSERT_TRUE(test::wait_until([&] { return !mux->is_connected(); })) << mux->status_text();
  auto at_once = [](auto&& call) {
    const auto start = Clock::now();
    auto result = call();
    EXPECT_LT(Clock::now() - start, 1s) << "not at once (the next attempt is 5 s away)";
    return result;
  };
  const Result<long long> lone = at_once([&] { return db.incr("ff:n").result(); });
  ASSERT_FALSE(lone);
  EXPECT_EQ(lone.error().code(), errc::disconnected) << lone.error().message();
  std::vector<CommandOutcome> batch_outcomes;
  mux->on_batch([&](const BatchEvent& event) {
    if (event.kind != BatchKind::Batch) return;
    std::lock_guard lock(mutex);
    batch_outcomes.push_back(event.outcome);
  });
  Batch batch = db.batch();
  Future<long long> batched = batch.incr("ff:n");
  const Result<long long> in_batch = at_once([&] {
    batch.execute();
    return batched.result();
  });
  ASSERT_FALSE(in_batch);
  EXPECT_EQ(in_batch.error().code(), errc::disconnected) << in_batch.error().message();
  EXPECT_NE(in_batch.error().message().find("backlogPolicy=failFast"), std::string::npos)
      << in_batch.error().message();
  Transaction transaction = db.transaction();
  Future<long long> transacted = transaction.incr("ff:n");
  const Result<TransactionResult> outcome =
      at_once([&] { return transaction.execute_async().result(); });
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code(), errc::disconnected) << outcome.error().message();
  const Result<long long> in_transaction = transacted.result();
  ASSERT_FALSE(in_transaction);
  EXPECT_TRUE(in_transaction.error().safe_to_retry()) << in_transaction.error().message();
  const Result<Reply> blocking = at_once([&] {
    return db.send<Reply>(CallOptions(), std::vector<Arg>{"BLPOP", "ff:q", "5"}).result();
  });
  ASSERT_FALSE(blocking);
  EXPECT_EQ(blocking.error().code(), errc::disconnected) << blocking.error().message();
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(refused, (std::vector<std::string>{"INCR", "BLPOP"}));
    EXPECT_EQ(batch_outcomes, std::vector<CommandOutcome>{CommandOutcome::ConnectionError});
  }
  server.restart();
  ASSERT_TRUE(test::wait_until([&] { return mux->is_connected(); }, 15s)) << mux->status_text();
  EXPECT_EQ(db.get("ff:n").get(), std::nullopt);  // a restarted server, and nothing ran since
}

// --- half-open connections ----------------------------------------------------------------

// The documented rule (docs/resilience.md, "Health"): when something in flight is overdue (a
// caller's command timed out, or the idle PING had no answer for asyncTimeout) and nothing has
// been read for 2 × asyncTimeout, the connection is declared dead and replaced, within
// 3 × heartbeatInterval + 2 × asyncTimeout — 1.6 s here. 6 s is the generous bound asserted.
constexpr const char* kHalfOpenOptions =
    ",asyncTimeout=500,heartbeatInterval=200,reconnectBaseDelay=20,reconnectMaxDelay=100";
constexpr auto kHalfOpenBound = 6s;

TEST(HalfOpenTest, FrozenConnectionWithCommandsOverdueIsReplaced) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  auto mux = fault::connect_to(proxy.address(), kHalfOpenOptions);
  Database db = mux->database();
  ASSERT_EQ(db.incr("half:n").get(), 1);
  const auto reconnects = mux->status().reconnects;
  ASSERT_EQ(proxy.pairs_started(), 1u);

  proxy.stall_existing();  // the socket stays open; nothing comes back, nothing gets through
  const auto stalled_at = Clock::now();
  Result<long long> frozen = db.incr("half:n").result();
  ASSERT_FALSE(frozen);
  EXPECT_EQ(frozen.error().code(), errc::timeout) << frozen.error().message();

  // The timed-out INCR is still overdue on the frozen connection: that is what gets it replaced.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      kHalfOpenBound - (Clock::now() - stalled_at));
  const bool replaced = test::wait_until(
      [&] { return mux->status().reconnects > reconnects && proxy.pairs_started() >= 2; },
      std::max(left, 0ms), 50ms);
  EXPECT_TRUE(replaced) << "the half-open connection was not replaced within "
                        << std::chrono::duration_cast<std::chrono::seconds>(kHalfOpenBound).count()
                        << " s: " << mux->status_text();
  if (!replaced) return;
  fault::report("replaced " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stalled_at)
                        .count()) +
                " ms after the stall");
  EXPECT_GT(mux->status().dead_connections, 0u) << "replaced, but not as a dead connection";
  Result<long long> after = db.incr("half:n").result();
  ASSERT_TRUE(after) << after.error().message();
  // The first INCR ran; the frozen one never reached the server (the proxy held it).
  EXPECT_EQ(*after, 2);
}

TEST(HalfOpenTest, IdleFrozenConnectionIsFoundByTheHeartbeat) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  auto mux = fault::connect_to(proxy.address(), kHalfOpenOptions);
  Database db = mux->database();
  ASSERT_EQ(db.ping().get(), "PONG");
  const auto reconnects = mux->status().reconnects;
  proxy.stall_existing();
  // No command of ours: only the idle PING can notice.
  EXPECT_TRUE(
      test::wait_until([&] { return mux->status().reconnects > reconnects && mux->is_connected(); },
                       kHalfOpenBound, 50ms))
      << "an idle half-open connection was not replaced within 6 s: " << mux->status_text();
  EXPECT_GE(proxy.pairs_started(), 2u);
  EXPECT_GT(mux->status().heartbeats, 0u);
  EXPECT_GT(mux->status().dead_connections, 0u);
  EXPECT_EQ(db.ping().get(), "PONG");
}

// --- commands not yet on the wire when the connection breaks ------------------------------

TEST(ResendTest, NeverSentCommandsAreResentInOrderAfterReconnect) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  auto mux = fault::connect_to(
      proxy.address(),
      std::string(",asyncTimeout=30000,maxQueuedCommands=10000") + kQuickReconnect);
  Database db = mux->database();
  ASSERT_EQ(db.ping().get(), "PONG");

  // Freeze the connection, then push more than the socket buffers hold (~26 MB): the first
  // commands fill the kernel buffers (written, so their outcome will be unknown), the rest
  // stay in the client, taken for writing or queued — never sent.
  proxy.stall_existing();
  constexpr int kCommands = 800;
  constexpr std::size_t kValueSize = 32 * 1024;
  std::vector<Future<long long>> pushes;
  for (int i = 0; i < kCommands; ++i) {
    std::string value = std::to_string(i) + ":";
    value.resize(kValueSize, 'x');
    pushes.push_back(db.rpush("resend:list", value));
  }
  // Wait until the client cannot write more (bytes written stop growing).
  std::uint64_t last = 0;
  ASSERT_TRUE(test::wait_until(
      [&] {
        const auto now = mux->status().bytes_written;
        const bool settled = now == last && now > 0;
        last = now;
        return settled;
      },
      20s, 300ms));
  ASSERT_LT(last, kCommands * kValueSize) << "everything fit in the socket buffers";
  proxy.cut_all();  // the frozen pair goes; its held bytes never reach the server

  OutcomeTally tally;
  int first_ok = -1;
  std::vector<int> succeeded;
  for (int i = 0; i < kCommands; ++i) {
    ASSERT_TRUE(pushes[i].wait_for(45s)) << "#" << i << " never resolved";
    Result<long long> r = pushes[i].result();
    tally.add(code_of(r));
    if (r) {
      if (first_ok < 0) first_ok = i;
      succeeded.push_back(i);
      // The k-th command to reach the server makes the list k long.
      EXPECT_EQ(*r, static_cast<long long>(succeeded.size())) << "#" << i;
    } else {
      if (first_ok >= 0) {
        ADD_FAILURE() << "#" << i << " failed after #" << first_ok
                      << " succeeded: " << r.error().message();
      }
      EXPECT_EQ(r.error().code(), errc::outcome_unknown)
          << "#" << i << " (never on the wire) was not resent: " << r.error().message();
    }
  }
  fault::report("wrote " + std::to_string(last) + " of ~" + std::to_string(kCommands * kValueSize) +
                " bytes before the cut; outcomes: " + tally.describe());
  SCOPED_TRACE("outcomes: " + tally.describe());
  EXPECT_GT(tally.count(errc::ok), 0u);
  EXPECT_EQ(tally.count(errc::not_sent), 0u);
  // Only the resent commands ran, each once, in the order they were issued.
  const auto list = db.lrange("resend:list", 0, -1).get();
  ASSERT_EQ(list.size(), succeeded.size());
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string expected_prefix = std::to_string(succeeded[k]) + ":";
    EXPECT_EQ(list[k].substr(0, expected_prefix.size()), expected_prefix) << "position " << k;
  }
}

// --- large commands written by their callers while replies are awaited --------------------

TEST(LargeCommandCutTest, CallersWritingLargeCommandsKeepOrderAndNeverRunWhatWasNotSent) {
  // A command of 1 MiB or more is written by its caller's thread whenever no other thread is
  // writing, even with replies awaited (SubmissionQueue::kInlineWriteBytes), so callers and
  // the I/O thread take turns on the socket under load. Four threads each keep a window of
  // three INCRs of one counter whose key is 1 MiB long (large commands, small replies) while
  // the proxy cuts the connection three times. Afterwards the counter is at least the INCRs
  // that returned a value and at most those plus the ones whose outcome was unknown (an INCR
  // reported "not sent" never ran); no value was returned twice; and within each window the
  // values rise in the order its INCRs were issued, whoever wrote them.
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  auto mux =
      fault::connect_to(proxy.address(), std::string(",asyncTimeout=10000") + kQuickReconnect);
  std::atomic<std::uint64_t> caller_writes{0};
  mux->on_write([&](const WriteEvent& write) {
    if (write.from_caller) caller_writes.fetch_add(1, std::memory_order_relaxed);
  });
  Database db = mux->database();
  ASSERT_EQ(db.ping().get(), "PONG");
  const std::string key = "large:" + std::string(1024 * 1024, 'k');

  constexpr int kThreads = 4;
  constexpr int kWindow = 3;
  std::atomic<bool> stop{false};
  std::atomic<long long> unknown_timeouts{0};  // timeouts of commands that were (being) sent
  std::atomic<long long> out_of_order{0};
  OutcomeTally tally;
  std::mutex values_mutex;
  std::vector<long long> values;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<long long> mine;
      while (!stop.load()) {
        std::array<Future<long long>, kWindow> window;
        for (auto& f : window) f = db.incr(key);
        long long previous = 0;
        for (auto& f : window) {
          Result<long long> r = f.result();
          tally.add(code_of(r));
          if (r) {
            if (*r <= previous) out_of_order.fetch_add(1);
            previous = *r;
            mine.push_back(*r);
          } else if (r.error().code() == errc::timeout &&
                     r.error().message().find("not sent") == std::string::npos) {
            unknown_timeouts.fetch_add(1);
          }
        }
      }
      std::lock_guard lock(values_mutex);
      values.insert(values.end(), mine.begin(), mine.end());
    });
  }
  for (int round = 0; round < 3; ++round) {
    const auto ok_before = tally.count(errc::ok);
    ASSERT_TRUE(test::wait_until([&] { return tally.count(errc::ok) > ok_before + 60; }, 30s))
        << tally.describe() << "\n"
        << mux->status_text();
    const auto reconnects_before = mux->status().reconnects;
    proxy.cut_all();
    EXPECT_TRUE(test::wait_until([&] { return mux->status().reconnects > reconnects_before; }, 10s))
        << mux->status_text();
  }
  const auto ok_after_cuts = tally.count(errc::ok);
  EXPECT_TRUE(test::wait_until([&] { return tally.count(errc::ok) > ok_after_cuts + 60; }, 30s))
      << tally.describe();
  stop = true;
  for (auto& th : threads) th.join();

  const std::uint64_t writes = mux->status().writes;
  const std::string writers = ", writes by callers " + std::to_string(caller_writes.load()) +
                              " of " + std::to_string(writes);
  // Read straight from the server (a key of 1 MiB is too long for redis-cli's command line).
  auto direct = fault::connect_to("127.0.0.1:" + std::to_string(server.port()));
  const std::optional<std::string> counter = direct->database().get(key).get();
  ASSERT_TRUE(counter.has_value());
  fault::expect_counter_matches_outcomes(std::stoll(*counter), tally, unknown_timeouts.load(),
                                         values, writers);
  SCOPED_TRACE("outcomes: " + tally.describe() + writers);
  // Callers wrote a fair share: 28-33 % of the writes here (12-16 % under TSan), about 1 % when
  // only a lone caller on an idle connection writes its own command.
  EXPECT_GE(caller_writes.load() * 40, writes) << "large commands were handed off";
  EXPECT_EQ(out_of_order.load(), 0);
  // Only connection trouble: no other kind of failure, and no command stuck until its 10 s
  // deadline in a run of a fraction of a second.
  EXPECT_EQ(tally.count(errc::timeout), 0u);
  EXPECT_EQ(tally.errors(), tally.count(errc::outcome_unknown) + tally.count(errc::not_sent) +
                                tally.count(errc::disconnected))
      << tally.describe();
}

}  // namespace
}  // namespace redmux
