// Faults delivered to the server process itself: SIGKILL then a restart on the same port under
// a 50-thread INCR load, and SIGSTOP for twice the command timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fault/fault_util.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fault::code_of;
using fault::OutcomeTally;

// The backlog policy: "queue" (the default) holds commands while the server is down,
// "failFast" refuses them at submit and fails those queued when the connection breaks, with
// `disconnected` (never sent).
class ServerKillTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ServerKillTest, CounterStaysWithinWhatCallersWereTold) {
  // Every INCR acknowledged by the server is on disk before its reply is sent (appendonly
  // with appendfsync always), so the counter survives SIGKILL exactly as far as the server
  // got. Afterwards the counter must be at least the number of INCRs that returned a value
  // and at most that plus the number whose outcome the callers were told is unknown; an INCR
  // reported "not sent" must not have run. Every value returned is distinct (each INCR of one
  // counter returns its own number): a reply delivered twice or to the wrong caller breaks it.
  test::ServerOptions options;
  options.args = {"--appendonly", "yes", "--appendfsync", "always"};
  test::RedisServer server(options);
  constexpr auto kTimeout = 2000ms;
  auto mux = fault::connect_to(
      server.address(),
      std::string(",asyncTimeout=2000,reconnectBaseDelay=20,reconnectMaxDelay=200,backlogPolicy=") +
          GetParam());
  const std::string counter = "fault:counter";

  constexpr int kThreads = 50;
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::atomic<long long> late{0};              // results that took longer than the deadline
  std::atomic<long long> unknown_timeouts{0};  // timeouts of commands that were (being) sent
  OutcomeTally tally;
  std::mutex values_mutex;
  std::vector<long long> values;
  std::vector<std::string> server_errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      Database db = mux->database();
      std::vector<long long> mine;
      while (!stop.load()) {
        const auto start = Clock::now();
        Result<long long> r = db.incr(counter).result();
        if (Clock::now() - start > kTimeout + 3s) ++late;
        tally.add(code_of(r));
        if (r) {
          mine.push_back(*r);
        } else if (r.error().code() == errc::server_error) {
          std::lock_guard lock(values_mutex);
          if (server_errors.size() < 3) server_errors.push_back(r.error().message());
        } else if (r.error().code() == errc::timeout &&
                   r.error().message().find("not sent") == std::string::npos) {
          ++unknown_timeouts;
        }
      }
      std::lock_guard lock(values_mutex);
      values.insert(values.end(), mine.begin(), mine.end());
      ++finished;
    });
  }

  for (int round = 0; round < 2; ++round) {
    const auto ok_before = tally.count(errc::ok);
    ASSERT_TRUE(test::wait_until([&] { return tally.count(errc::ok) > ok_before + 2000; }, 30s))
        << tally.describe();
    const auto errors_before = tally.errors();
    server.kill();
    // The callers notice (an error, not a hang) before the server comes back.
    EXPECT_TRUE(test::wait_until([&] { return tally.errors() > errors_before; }, 10s))
        << tally.describe();
    server.restart();
  }
  const auto ok_at_restart = tally.count(errc::ok);
  EXPECT_TRUE(test::wait_until([&] { return tally.count(errc::ok) > ok_at_restart + 2000; }, 30s))
      << "no INCR succeeded after the restart: " << tally.describe() << "\n"
      << mux->status_text();
  stop = true;
  ASSERT_TRUE(test::wait_until([&] { return finished.load() == kThreads; }, 30s))
      << "a thread hangs: " << kThreads - finished.load() << " of " << kThreads
      << " still waiting; " << mux->status_text();
  for (auto& th : threads) th.join();

  fault::expect_counter_matches_outcomes(std::stoll(server.cli({"GET", counter})), tally,
                                         unknown_timeouts.load(), values);
  SCOPED_TRACE("outcomes: " + tally.describe());
  EXPECT_EQ(late.load(), 0) << "results that came later than their deadline + 3 s";
  EXPECT_GT(tally.errors(), 0u);  // the kills were noticed
  // Only connection trouble and deadlines: no other kind of failure.
  EXPECT_EQ(tally.errors(), tally.count(errc::outcome_unknown) + tally.count(errc::not_sent) +
                                tally.count(errc::timeout) + tally.count(errc::disconnected))
      << tally.describe() << (server_errors.empty() ? "" : "; e.g. " + server_errors.front());
  if (std::string_view(GetParam()) == "failFast") {
    EXPECT_GT(tally.count(errc::disconnected), 0u) << "failFast refused nothing while down";
  }
}

INSTANTIATE_TEST_SUITE_P(BacklogPolicy, ServerKillTest, ::testing::Values("queue", "failFast"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST(ServerPauseTest, TimeoutsExplainThemselvesAndRepliesReachTheirOwnCallers) {
  test::RedisServer server;
  constexpr int kTimeoutMs = 500;
  auto mux = fault::connect_to(server.address(), ",asyncTimeout=" + std::to_string(kTimeoutMs));
  ASSERT_EQ(mux->database().ping().get(), "PONG");

  // Each thread sends values only it could know (thread, sequence number) and checks that the
  // reply carries exactly them: ECHO of its payload, SET then GET of its own key.
  constexpr int kThreads = 8;
  std::atomic<bool> stop{false};
  std::atomic<long long> wrong{0};
  OutcomeTally tally;
  std::mutex message_mutex;
  std::string timeout_message;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Database db = mux->database();
      for (long long i = 0; !stop.load(); ++i) {
        const std::string payload = "t" + std::to_string(t) + ":" + std::to_string(i);
        Result<std::string> echoed = db.echo(payload).result();
        tally.add(code_of(echoed));
        if (echoed && *echoed != payload) ++wrong;
        if (!echoed && echoed.error().code() == errc::timeout) {
          std::lock_guard lock(message_mutex);
          if (timeout_message.empty()) timeout_message = echoed.error().message();
        }
        const std::string key = "pause:" + std::to_string(t);
        Result<bool> set = db.set(key, payload).result();
        tally.add(code_of(set));
        Result<std::optional<std::string>> got = db.get(key).result();
        tally.add(code_of(got));
        // A GET after a successful SET of this thread's own key sees exactly that value.
        if (set && got && *got != std::optional<std::string>(payload)) ++wrong;
      }
    });
  }

  ASSERT_TRUE(test::wait_until([&] { return tally.count(errc::ok) > 3000; }, 30s));
  server.pause();
  const auto paused_at = Clock::now();
  // Paused for twice the timeout, and until the first timeouts were reported, an ECHO's among
  // them (a thread in SET or GET at the pause reaches its ECHO a timeout later).
  auto echo_timed_out = [&] {
    std::lock_guard lock(message_mutex);
    return !timeout_message.empty();
  };
  EXPECT_TRUE(test::wait_until(
      [&] {
        return tally.count(errc::timeout) >= kThreads && echo_timed_out() &&
               Clock::now() - paused_at >= std::chrono::milliseconds(2 * kTimeoutMs);
      },
      20s))
      << tally.describe();
  server.resume();
  const auto ok_at_resume = tally.count(errc::ok);
  EXPECT_TRUE(test::wait_until([&] { return tally.count(errc::ok) > ok_at_resume + 5000; }, 30s))
      << "no recovery after SIGCONT: " << tally.describe() << "\n"
      << mux->status_text();
  stop = true;
  for (auto& th : threads) th.join();

  EXPECT_EQ(wrong.load(), 0) << "replies matched to the wrong caller; " << tally.describe();
  EXPECT_GE(tally.count(errc::timeout), static_cast<std::uint64_t>(kThreads));
  // Deadlines (and, should the connection be given up as dead, connection errors) only.
  EXPECT_EQ(tally.errors(), tally.count(errc::timeout) + tally.count(errc::outcome_unknown) +
                                tally.count(errc::not_sent))
      << tally.describe();
  std::lock_guard lock(message_mutex);
  ASSERT_FALSE(timeout_message.empty());
  for (const std::string& field :
       {std::string("ECHO"), std::string("after "),
        "(asyncTimeout " + std::to_string(kTimeoutMs) + " ms)", server.address(),
        std::string("redmux-fault"), std::string("queued-unsent="),
        std::string("sent-awaiting-reply="), std::string("bytes-to-write="),
        std::string("bytes-unread="), std::string("connection="), std::string("last-read="),
        std::string("last-write="), std::string("io="), "redmux " + std::string(kVersion)}) {
    EXPECT_NE(timeout_message.find(field), std::string::npos)
        << "missing \"" << field << "\" in: " << timeout_message;
  }
}

}  // namespace
}  // namespace redmux
