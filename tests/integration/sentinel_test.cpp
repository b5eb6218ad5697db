// Sentinel (serviceName=): a primary, its replica and three Sentinels, all real processes.
// The multiplexer asks the Sentinels where the servers are, routes by role, skips Sentinels
// that are down or do not know the service, authenticates with the Sentinel credentials, and
// follows a failover under load without losing an acknowledged write.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/ports.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::ServerOptions;
using test::wait_until;

constexpr const char* kService = "mymaster";

// True once `server` reports role:master. During a failover the server closes its clients'
// connections (redis-cli's INFO then fails with "Server closed the connection"): that is
// "not yet", not an error.
bool reports_master(const RedisServer& server) {
  try {
    return server.info_field("role") == "master";
  } catch (const std::exception&) {
    return false;
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

/// How many entries of a SENTINEL REPLICAS / SENTINELS listing (redis-cli prints each map as
/// key, value, key, value … one a line) have exactly these flags.
int count_flags(const std::string& listing, const std::string& flags) {
  const std::vector<std::string> lines = lines_of(listing);
  int count = 0;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i] == "flags" && lines[i + 1] == flags) ++count;
  }
  return count;
}

ServerOptions sentinel_options(std::uint16_t primary_port, int quorum,
                               const std::string& password) {
  ServerOptions options;
  options.args = {"--sentinel"};
  options.config_file_contents = "sentinel monitor " + std::string(kService) + " 127.0.0.1 " +
                                 std::to_string(primary_port) + " " + std::to_string(quorum) +
                                 "\n"
                                 "sentinel down-after-milliseconds mymaster 1000\n"
                                 "sentinel failover-timeout mymaster 5000\n"
                                 "sentinel parallel-syncs mymaster 1\n";
  if (!password.empty()) {
    // Sentinels that require a password use it with each other too.
    options.config_file_contents +=
        "requirepass " + password + "\nsentinel sentinel-pass " + password + "\n";
    options.cli_password = password;
  }
  return options;
}

/// A primary, one replica of it and `count` Sentinels monitoring them as "mymaster", settled:
/// every Sentinel names the primary and sees the replica and the other Sentinels.
struct SentinelSet {
  RedisServer primary;
  RedisServer replica;
  std::vector<std::unique_ptr<RedisServer>> sentinels;

  explicit SentinelSet(int count = 3, const std::string& password = "") {
    replica.cli({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
    // The replica's link first, so each Sentinel finds it in its first INFO of the primary.
    EXPECT_TRUE(wait_until([&] { return replica.info_field("master_link_status") == "up"; }, 30s));
    const int quorum = count >= 2 ? 2 : 1;
    for (int i = 0; i < count; ++i) {
      sentinels.push_back(
          std::make_unique<RedisServer>(sentinel_options(primary.port(), quorum, password)));
    }
    for (const auto& sentinel : sentinels) {
      EXPECT_TRUE(wait_until(
          [&] {
            return sentinel->cli({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", kService}) ==
                       "127.0.0.1\n" + std::to_string(primary.port()) &&
                   count_flags(sentinel->cli({"SENTINEL", "REPLICAS", kService}), "slave") == 1 &&
                   count_flags(sentinel->cli({"SENTINEL", "SENTINELS", kService}), "sentinel") ==
                       count - 1;
          },
          60s, 100ms))
          << "Sentinel " << sentinel->address() << " did not settle:\n"
          << sentinel->log_tail(30);
    }
  }

  std::string sentinel_list() const {
    std::string list;
    for (const auto& sentinel : sentinels) list += (list.empty() ? "" : ",") + sentinel->address();
    return list;
  }
  /// The configuration string: the Sentinels, then the service name.
  std::string config(const std::string& service = kService) const {
    return sentinel_list() + ",serviceName=" + service;
  }
};

TEST(SentinelTest, FindsThePrimaryAndReplicaAndRoutesByRole) {
  SentinelSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(db.set("k" + std::to_string(i), "v").get());
  EXPECT_EQ(set.primary.command_calls("set"), 20);
  EXPECT_EQ(db.get("k3").get(), std::optional<std::string>("v"));
  EXPECT_EQ(set.primary.command_calls("get"), 1);
  // The data servers are the primary first, then the replica (not the Sentinels).
  ASSERT_EQ(mux->config().endpoints.size(), 2u);
  EXPECT_EQ(mux->config().endpoints[0].port, set.primary.port());
  EXPECT_EQ(mux->config().endpoints[1].port, set.replica.port());
  // PreferReplica reads go to the replica once it is connected and known to be one.
  ASSERT_TRUE(wait_until([&] { return set.replica.cli({"GET", "k19"}) == "v"; }));
  const long long before = set.replica.command_calls("get");
  constexpr int kReads = 30;
  for (int i = 0; i < kReads; ++i) {
    EXPECT_EQ(db.get("k19", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  }
  EXPECT_EQ(set.replica.command_calls("get") - before, kReads);
  EXPECT_EQ(set.primary.command_calls("get"), 1);
  // Writes never go to the replica, whatever the flag.
  EXPECT_TRUE(db.set("w", "x", {}, Flags::PreferReplica).get());
  EXPECT_EQ(set.primary.command_calls("set"), 21);
}

TEST(SentinelTest, AnUnknownServiceNameIsAClearError) {
  SentinelSet set;
  try {
    Multiplexer::connect(set.config("nosuchservice"));
    FAIL() << "connected to a service no Sentinel knows";
  } catch (const ConnectionError& e) {
    const std::string message = e.what();
    for (const auto& sentinel : set.sentinels) {
      EXPECT_NE(message.find(sentinel->address() + ": it does not know a service named "
                                                   "\"nosuchservice\""),
                std::string::npos)
          << message;
    }
  }
}

TEST(SentinelTest, ASentinelThatIsDownIsSkipped) {
  SentinelSet set(1);
  const std::string dead = "127.0.0.1:" + std::to_string(test::free_loopback_port());
  auto mux = Multiplexer::connect(dead + "," + set.config() + ",connectTimeout=2000");
  EXPECT_TRUE(mux->database().set("k", "v").get());
  EXPECT_EQ(set.primary.command_calls("set"), 1);
  // When none answers, the error names each Sentinel and why.
  const std::string dead2 = "127.0.0.1:" + std::to_string(test::free_loopback_port());
  try {
    Multiplexer::connect(dead + "," + dead2 + ",serviceName=mymaster,connectTimeout=2000");
    FAIL() << "connected without a Sentinel";
  } catch (const ConnectionError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("none answered"), std::string::npos) << message;
    EXPECT_NE(message.find(dead + ": connecting to " + dead + " failed"), std::string::npos)
        << message;
    EXPECT_NE(message.find(dead2 + ": connecting to " + dead2 + " failed"), std::string::npos)
        << message;
  }
}

TEST(SentinelTest, SentinelCredentialsAreUsedForTheSentinelsOnly) {
  SentinelSet set(1, "s3ntinel-pw");
  // The data servers have no password: password= is not sent to the Sentinels and
  // sentinelPassword= not to the data servers.
  auto mux = Multiplexer::connect(set.config() + ",sentinelPassword=s3ntinel-pw");
  EXPECT_TRUE(mux->database().set("k", "v").get());
  EXPECT_EQ(set.primary.command_calls("set"), 1);
  try {
    Multiplexer::connect(set.config());  // no credentials for the Sentinel
    FAIL() << "a Sentinel with requirepass answered without a password";
  } catch (const ConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find(set.sentinels[0]->address()), std::string::npos)
        << e.what();
  }
  try {
    Multiplexer::connect(set.config() + ",sentinelPassword=wrong");
    FAIL() << "a wrong Sentinel password was accepted";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(e.code(), errc::authentication_failed) << e.what();
    EXPECT_NE(std::string(e.what()).find("sentinelPassword"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << "password leaked";
  }
}

/// INCRs from a few threads until stopped, each outcome counted: acknowledged (a value), did
/// not run (not sent, READONLY), or may have run (sent and lost, timed out).
struct IncrLoad {
  Database db;
  std::atomic<bool> stop{false};
  std::atomic<long long> acknowledged{0};
  std::atomic<long long> maybe_ran{0};
  std::atomic<long long> did_not_run{0};
  std::atomic<long long> max_value{0};
  std::mutex mutex;
  std::string outcome_unknown_message;  ///< the first one (guarded by mutex)
  std::vector<std::thread> threads;

  explicit IncrLoad(Database database, int count) : db(std::move(database)) {
    for (int t = 0; t < count; ++t) {
      threads.emplace_back([this] {
        while (!stop.load()) {
          Result<long long> r = db.incr("counter").result();
          if (r.has_value()) {
            ++acknowledged;
            long long seen = max_value.load();
            while (*r > seen && !max_value.compare_exchange_weak(seen, *r)) {
            }
            continue;
          }
          const errc code = r.error().code();
          if (code == errc::not_sent ||
              (code == errc::server_error &&
               r.error().message().find("READONLY") != std::string::npos)) {
            ++did_not_run;
          } else {
            ++maybe_ran;  // outcome_unknown, timeout, anything else: counted as possibly run
            std::lock_guard lock(mutex);
            if (code == errc::outcome_unknown && outcome_unknown_message.empty()) {
              outcome_unknown_message = r.error().message();
            }
          }
          std::this_thread::sleep_for(1ms);  // not synchronisation: no busy loop on errors
        }
      });
    }
  }
  void finish() {
    stop = true;
    for (std::thread& thread : threads) thread.join();
    threads.clear();
  }
  ~IncrLoad() { finish(); }
};

TEST(SentinelTest, FollowsAFailoverUnderLoadWithoutLosingAcknowledgedWrites) {
  SentinelSet set;
  auto mux = Multiplexer::connect(set.config());
  IncrLoad load(mux->database(), 4);
  ASSERT_TRUE(wait_until([&] { return load.acknowledged.load() >= 500; }, 60s));

  EXPECT_EQ(set.sentinels[1]->cli({"SENTINEL", "FAILOVER", kService}), "OK");
  ASSERT_TRUE(wait_until([&] { return reports_master(set.replica); }, 60s));
  // Writes resume on the new primary without anything done by the user.
  const long long at_promotion = load.acknowledged.load();
  ASSERT_TRUE(wait_until([&] { return load.acknowledged.load() >= at_promotion + 500; }, 60s))
      << mux->status_text();
  load.finish();  // every INCR has completed one way or another

  const long long acknowledged = load.acknowledged.load();
  const long long final_value = std::stoll(set.replica.cli({"GET", "counter"}));
  EXPECT_GE(final_value, acknowledged) << "acknowledged INCRs were lost";
  EXPECT_GE(final_value, load.max_value.load());
  EXPECT_LE(final_value, acknowledged + load.maybe_ran.load());
  // A write lost with the moved connection names the server it was sent to.
  if (!load.outcome_unknown_message.empty()) {
    EXPECT_NE(load.outcome_unknown_message.find("connection to " + set.primary.address() +
                                                " lost after INCR was sent (moved to " +
                                                set.replica.address()),
              std::string::npos)
        << load.outcome_unknown_message;
  }
  // And the multiplexer writes there now.
  Database db = mux->database();
  EXPECT_EQ(db.incr("counter").get(), final_value + 1);
  EXPECT_EQ(set.replica.cli({"GET", "counter"}), std::to_string(final_value + 1));
  std::cout << "[          ] acknowledged=" << acknowledged << " maybe-ran=" << load.maybe_ran
            << " did-not-run=" << load.did_not_run << " final=" << final_value << "\n";
}

TEST(SentinelTest, FollowsAFailoverWhileTheFirstSentinelIsDown) {
  SentinelSet set;
  // RESP2 as well: SENTINEL REPLICAS as flat arrays, messages as arrays on subscribers.
  auto mux = Multiplexer::connect(set.config() + ",protocol=resp2");
  Database db = mux->database();
  ASSERT_EQ(db.incr("counter").get(), 1);
  ASSERT_EQ(mux->config().endpoints.size(), 2u);  // the replica was found under RESP2 too
  set.sentinels[0]->kill();
  EXPECT_EQ(set.sentinels[2]->cli({"SENTINEL", "FAILOVER", kService}), "OK");
  ASSERT_TRUE(wait_until([&] { return reports_master(set.replica); }, 60s));
  ASSERT_TRUE(wait_until(
      [&] {
        Result<long long> r = db.incr("counter").result();
        return r.has_value() && set.replica.cli({"GET", "counter"}) == std::to_string(*r);
      },
      60s))
      << mux->status_text();
}

TEST(SentinelTest, WithoutAbortConnectItStartsBeforeAnySentinelAnswers) {
  SentinelSet set(1);
  set.sentinels[0]->kill();
  auto mux = Multiplexer::connect(set.config() + ",abortConnect=false");
  EXPECT_FALSE(mux->is_connected());
  set.sentinels[0]->restart();
  // Once the Sentinel answers, the primary it names is connected and commands run there.
  Database db = mux->database();
  ASSERT_TRUE(wait_until([&] { return db.set("k", "v").result().has_value(); }, 60s))
      << mux->status_text();
  EXPECT_EQ(set.primary.cli({"GET", "k"}), "v");
}

}  // namespace
}  // namespace redmux
