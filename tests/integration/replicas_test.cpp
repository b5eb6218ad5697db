// A primary with two replicas, all real redis-server processes: roles discovered from the
// endpoint list, reads spread over replicas under PreferReplica, writes only on the primary,
// and roles rediscovered after a failover.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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

void replicate(const RedisServer& replica, const RedisServer& primary) {
  replica.cli({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
}

bool in_sync(const RedisServer& replica) {
  return replica.info_field("master_link_status") == "up";
}

/// A primary and one replica of it, in sync.
struct PrimaryAndReplica {
  RedisServer primary;
  RedisServer replica;
  PrimaryAndReplica() {
    replicate(replica, primary);
    EXPECT_TRUE(wait_until([&] { return in_sync(replica); }, 20s));
  }
};

struct ReplicaSet {
  RedisServer primary;
  RedisServer replica1;
  RedisServer replica2;
  ReplicaSet() {
    replicate(replica1, primary);
    replicate(replica2, primary);
    EXPECT_TRUE(wait_until([&] { return in_sync(replica1) && in_sync(replica2); }, 20s));
  }
  /// Replicas first: the first endpoint listed is not assumed to be the primary.
  std::string config() const {
    return replica1.address() + "," + primary.address() + "," + replica2.address();
  }
};

TEST(ReplicasTest, RolesAreDiscoveredAndWritesGoToThePrimaryOnly) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(db.set("k" + std::to_string(i), std::to_string(i)).get()) << i;
  }
  // Writes and plain reads (PreferMaster, the default) ran on the primary only.
  EXPECT_EQ(db.get("k7").get(), std::optional<std::string>("7"));
  EXPECT_EQ(set.primary.command_calls("set"), 50);
  EXPECT_EQ(set.primary.command_calls("get"), 1);
  EXPECT_EQ(set.replica1.command_calls("get"), 0);
  EXPECT_EQ(set.replica2.command_calls("get"), 0);
  // A write with PreferReplica still goes to the primary (never to a replica).
  EXPECT_TRUE(db.set("pr", "x", {}, Flags::PreferReplica).get());
  EXPECT_EQ(set.primary.command_calls("set"), 51);
}

TEST(ReplicasTest, PreferReplicaSpreadsReadsRoundRobinOverReplicas) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  ASSERT_TRUE(db.set("shared", "v").get());
  ASSERT_TRUE(wait_until([&] { return set.replica1.cli({"GET", "shared"}) == "v"; }));
  ASSERT_TRUE(wait_until([&] { return set.replica2.cli({"GET", "shared"}) == "v"; }));
  const long long before1 = set.replica1.command_calls("get");  // the wait_until GETs above
  const long long before2 = set.replica2.command_calls("get");
  constexpr int kReads = 100;
  for (int i = 0; i < kReads; ++i) {
    EXPECT_EQ(db.get("shared", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  }
  const long long on1 = set.replica1.command_calls("get") - before1;
  const long long on2 = set.replica2.command_calls("get") - before2;
  EXPECT_EQ(on1 + on2, kReads);
  EXPECT_EQ(on1, kReads / 2);  // strict round-robin, one caller
  EXPECT_EQ(on2, kReads / 2);
  EXPECT_EQ(set.primary.command_calls("get"), 0);
  // DemandReplica reads go to replicas too; DemandMaster reads to the primary.
  EXPECT_EQ(db.get("shared", Flags::DemandReplica).get(), std::optional<std::string>("v"));
  EXPECT_EQ(db.get("shared", Flags::DemandMaster).get(), std::optional<std::string>("v"));
  EXPECT_EQ(set.primary.command_calls("get"), 1);
}

TEST(ReplicasTest, AReplicaOfAnotherPrimaryThanTheOneWrittenToGetsNoReads) {
  // As in the middle of a graceful failover: `other` still says it is a primary, and
  // `stale` follows it; writes go to `primary`, whose replica is `fresh`. Reads from
  // `stale` would miss every write made here.
  RedisServer primary;
  RedisServer fresh;
  RedisServer other;
  RedisServer stale;
  replicate(fresh, primary);
  replicate(stale, other);
  ASSERT_TRUE(wait_until([&] { return in_sync(fresh) && in_sync(stale); }, 20s));
  other.cli({"SET", "k", "other's"});
  auto mux = Multiplexer::connect(primary.address() + "," + fresh.address() + "," +
                                  other.address() + "," + stale.address());
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "written here").get());
  ASSERT_TRUE(wait_until([&] { return fresh.cli({"GET", "k"}) == "written here"; }));
  ASSERT_TRUE(wait_until([&] {
    return mux->topology().to_string().find(
               stale.address() + " replica connected (it replicates from " + other.address() +
               ", which says it is a primary but is not the one written to (a failover in "
               "progress?))") != std::string::npos;
  })) << mux->topology().to_string();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(db.get("k", Flags::PreferReplica).get(), std::optional<std::string>("written here"))
        << i;
  }
  EXPECT_EQ(stale.command_calls("get"), 0);
  // Once it follows the primary written to, it serves reads again.
  replicate(stale, primary);
  ASSERT_TRUE(wait_until(
      [&] {
        return mux->topology().to_string().find(
                   stale.address() + " replica connected serves-reads") != std::string::npos;
      },
      20s))
      << mux->topology().to_string();
}

TEST(ReplicasTest, PreferReplicaFallsBackToThePrimaryAndDemandReplicaFails) {
  PrimaryAndReplica servers;
  RedisServer& primary = servers.primary;
  RedisServer& replica = servers.replica;
  auto mux = Multiplexer::connect(primary.address() + "," + replica.address() +
                                  ",abortConnect=false,connectTimeout=500");
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  ASSERT_TRUE(wait_until([&] { return db.get("k", Flags::DemandReplica).result().has_value(); }));
  replica.kill();
  // The replica is gone: PreferReplica falls back to the primary; DemandReplica says why.
  ASSERT_TRUE(wait_until([&] {
    Result<std::optional<std::string>> r = db.get("k", Flags::DemandReplica).result();
    return !r.has_value() && r.error().code() == errc::not_allowed;
  }));
  Result<std::optional<std::string>> demanded = db.get("k", Flags::DemandReplica).result();
  ASSERT_FALSE(demanded.has_value());
  EXPECT_NE(demanded.error().message().find("DemandReplica"), std::string::npos)
      << demanded.error().message();
  EXPECT_TRUE(demanded.error().safe_to_retry());  // never sent; a replica may come back
  // A command that is not read-only never goes to a replica; only a write is said to write.
  Result<std::string> ping = db.ping(CallOptions(Flags::DemandReplica)).result();
  ASSERT_FALSE(ping.has_value());
  EXPECT_FALSE(ping.error().safe_to_retry());  // it never can
  EXPECT_EQ(ping.error().message(),
            "PING is not a read-only command and cannot run on a replica (DemandReplica)");
  Result<bool> set = db.set("k", "w", CallOptions(Flags::DemandReplica)).result();
  ASSERT_FALSE(set.has_value());
  EXPECT_EQ(set.error().message(), "SET writes and cannot run on a replica (DemandReplica)");
  // topology() names the replica's connection state in status()'s words.
  const Topology topology = mux->topology();
  ASSERT_EQ(topology.servers.size(), 2u);
  EXPECT_FALSE(topology.servers[1].connected);
  EXPECT_TRUE(topology.servers[1].state == "reconnecting" ||
              topology.servers[1].state == "connecting")
      << topology.to_string();
  EXPECT_NE(topology.to_string().find(replica.address() + " unknown " + topology.servers[1].state),
            std::string::npos)
      << topology.to_string();
  EXPECT_NE(mux->status_text().find(topology.servers[1].state), std::string::npos)
      << mux->status_text();
  const long long before = primary.command_calls("get");
  EXPECT_EQ(db.get("k", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  EXPECT_EQ(primary.command_calls("get"), before + 1);
  // A write demanding a replica is refused before it is sent.
  Result<bool> write = db.set("w", "x", {}, Flags::DemandReplica).result();
  ASSERT_FALSE(write.has_value());
  EXPECT_EQ(write.error().code(), errc::not_allowed);
}

TEST(ReplicasTest, EachDemandFlagIsRefusedByALoneServerOfTheOtherRole) {
  // One endpoint, and it is a replica: DemandMaster must not read there, as DemandReplica
  // must not read from a lone primary.
  PrimaryAndReplica set;
  RedisServer& primary = set.primary;
  RedisServer& replica = set.replica;
  auto mux = Multiplexer::connect(replica.address());
  Database db = mux->database();
  const long long before = replica.command_calls("get");
  Result<std::optional<std::string>> demanded = db.get("k", Flags::DemandMaster).result();
  ASSERT_FALSE(demanded.has_value());
  EXPECT_EQ(demanded.error().code(), errc::not_allowed) << demanded.error().message();
  EXPECT_EQ(demanded.error().message(),
            "GET demands the primary, but the only endpoint listed, " + replica.address() +
                ", is a replica of " + primary.address() +
                " (a primary is not discovered: list it among the endpoints) (DemandMaster)");
  EXPECT_EQ(replica.command_calls("get"), before);  // never sent
  EXPECT_EQ(db.get("k").get(), std::nullopt);       // without the flag it reads there

  // The lone primary, whose replica is not listed: DemandReplica says replicas are not
  // discovered.
  auto on_primary = Multiplexer::connect(primary.address());
  Result<std::optional<std::string>> replica_read =
      on_primary->database().get("k", Flags::DemandReplica).result();
  ASSERT_FALSE(replica_read.has_value());
  EXPECT_EQ(replica_read.error().code(), errc::not_allowed);
  EXPECT_EQ(replica_read.error().message(),
            "GET demands a replica, but the only endpoint listed, " + primary.address() +
                ", is not one (replicas are not discovered: list them among the endpoints) "
                "(DemandReplica)");
}

TEST(ReplicasTest, WritesFollowAFailoverWithoutAcknowledgedWritesLost) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config() + ",heartbeatInterval=200");
  // Each role change is logged, where the connection that saw it says so.
  std::mutex log_mutex;
  std::vector<std::string> role_records;
  mux->on_log(LogLevel::Info, [&](const LogRecord& record) {
    if (record.message.find("role changed") == std::string_view::npos) return;
    std::lock_guard lock(log_mutex);
    role_records.push_back(std::string(record.endpoint) + " " + std::string(record.message));
  });
  // And reported as an event: which server, and its new role.
  std::vector<std::string> role_events;
  mux->on_connection_event([&](const ConnectionEvent& event) {
    if (event.kind != ConnectionEventKind::RoleChanged) return;
    std::lock_guard lock(log_mutex);
    role_events.push_back(event.endpoint + (event.primary ? " primary" : " replica of ") +
                          event.master);
  });
  Database db = mux->database();
  long long acknowledged = 0;
  for (int i = 0; i < 100; ++i) acknowledged = db.incr("counter").get();
  ASSERT_EQ(acknowledged, 100);
  // Let replica1 catch up, then promote it by hand, as a failover would: the old primary and
  // replica2 follow it.
  ASSERT_TRUE(wait_until([&] { return set.replica1.cli({"GET", "counter"}) == "100"; }));
  set.replica1.cli({"REPLICAOF", "NO", "ONE"});
  replicate(set.primary, set.replica1);
  replicate(set.replica2, set.replica1);
  // Writes succeed again once the new roles are seen (a READONLY reply from the old primary
  // is typed and safe to retry; the role probes follow the promotion).
  ASSERT_TRUE(wait_until(
      [&] {
        Result<long long> r = db.incr("counter").result();
        if (r.has_value()) {
          acknowledged = *r;
          return true;
        }
        EXPECT_TRUE(r.error().safe_to_retry()) << r.error().message();
        return false;
      },
      15s));
  // From now on every write lands on the new primary, and none was lost.
  for (int i = 0; i < 50; ++i) {
    Result<long long> r = db.incr("counter").result();
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(*r, acknowledged + 1);
    acknowledged = *r;
  }
  EXPECT_EQ(std::stoll(set.replica1.cli({"GET", "counter"})), acknowledged);
  EXPECT_GE(acknowledged, 151);
  EXPECT_EQ(set.primary.info_field("role"), "slave");
  const std::string promoted =
      set.replica1.address() + " role changed: now the primary; writes go here";
  const std::string demoted = set.primary.address() + " role changed: now a replica of 127.0.0.1:" +
                              std::to_string(set.replica1.port()) + "; writes go to the primary";
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(log_mutex);
    return std::count(role_records.begin(), role_records.end(), promoted) +
               std::count(role_records.begin(), role_records.end(), demoted) ==
           2;
  })) << ::testing::PrintToString(role_records);
  std::lock_guard lock(log_mutex);
  EXPECT_EQ(std::count(role_events.begin(), role_events.end(), set.replica1.address() + " primary"),
            1)
      << ::testing::PrintToString(role_events);
  EXPECT_EQ(std::count(role_events.begin(), role_events.end(),
                       set.primary.address() +
                           " replica of 127.0.0.1:" + std::to_string(set.replica1.port())),
            1)
      << ::testing::PrintToString(role_events);
  EXPECT_EQ(to_string(ConnectionEventKind::RoleChanged), "role changed");
}

TEST(ReplicasTest, EveryConnectionToAServerLearnsItsNewRoleAndTheChangeIsReportedOnce) {
  // Two connections per server: the one that sees the failover asks the other at once (a
  // primary's own probe is 30 s away), and the change is one event however many learn it.
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config() + ",connectionsPerEndpoint=2");
  std::mutex mutex;
  std::vector<std::string> events;
  mux->on_connection_event([&](const ConnectionEvent& event) {
    if (event.kind != ConnectionEventKind::RoleChanged) return;
    std::lock_guard lock(mutex);
    events.push_back(event.endpoint + (event.primary ? " primary" : " replica of " + event.master));
  });
  Database db = mux->database();
  ASSERT_EQ(db.incr("n").get(), 1);
  set.replica1.cli({"REPLICAOF", "NO", "ONE"});
  replicate(set.primary, set.replica1);
  replicate(set.replica2, set.replica1);
  auto roles_of = [&](const RedisServer& server) {
    std::vector<ConnectionStatus::Role> roles;
    for (const ConnectionStatus& one : mux->status().per_connection) {
      if (one.endpoint == server.address() && one.purpose == ConnectionStatus::Purpose::Interactive)
        roles.push_back(one.role);
    }
    return roles;
  };
  using Role = ConnectionStatus::Role;
  ASSERT_TRUE(wait_until(
      [&] {
        return roles_of(set.primary) == std::vector<Role>{Role::Replica, Role::Replica} &&
               roles_of(set.replica1) == std::vector<Role>{Role::Primary, Role::Primary};
      },
      10s))
      << mux->status_text();
  ASSERT_TRUE(wait_until([&] { return db.incr("n").result().has_value(); }, 10s));
  std::lock_guard lock(mutex);
  const std::vector<std::string> expected = {
      set.replica1.address() + " primary",
      set.primary.address() + " replica of 127.0.0.1:" + std::to_string(set.replica1.port())};
  for (const std::string& one : expected) {
    EXPECT_EQ(std::count(events.begin(), events.end(), one), 1)
        << one << " in " << ::testing::PrintToString(events);
  }
  EXPECT_EQ(events.size(), 2u) << ::testing::PrintToString(events);
}

TEST(ReplicasTest, TheSubscriptionAndDedicatedConnectionsShowTheirServersRoleAfterAFailover) {
  // Neither asks its server's role after its handshake; status() shows what the connections
  // commands are routed over know now, not the role from before the failover.
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  Subscription subscription = mux->subscriber().subscribe("news", [](const Message&) {});
  subscription.confirmed().get();
  ASSERT_EQ(db.blpop("nothing", 50ms).get(), std::nullopt);
  using Role = ConnectionStatus::Role;
  using Purpose = ConnectionStatus::Purpose;
  // endpoint and role of each subscription and dedicated connection
  auto others = [&] {
    std::vector<std::pair<std::string, Role>> out;
    for (const ConnectionStatus& one : mux->status().per_connection) {
      if (one.purpose == Purpose::Subscription || one.purpose == Purpose::Dedicated)
        out.emplace_back(one.endpoint, one.role);
    }
    return out;
  };
  // The subscription rides the first endpoint listed, a replica; the blocking command the
  // primary.
  auto role_at = [&](const RedisServer& server) -> Role {
    return server.address() == set.primary.address() ? Role::Primary : Role::Replica;
  };
  const auto before = others();
  ASSERT_EQ(before.size(), 2u) << mux->status_text();
  for (const auto& [endpoint, role] : before) {
    const RedisServer& server = endpoint == set.primary.address()    ? set.primary
                                : endpoint == set.replica1.address() ? set.replica1
                                                                     : set.replica2;
    EXPECT_EQ(role, role_at(server)) << mux->status_text();
  }
  set.replica1.cli({"REPLICAOF", "NO", "ONE"});
  replicate(set.primary, set.replica1);
  replicate(set.replica2, set.replica1);
  // Each now has its server's new role: the promoted replica1 primary, the others replicas.
  auto swapped = [&] {
    const auto now = others();
    if (now.size() != before.size()) return false;
    for (const auto& [endpoint, role] : now) {
      if (role != (endpoint == set.replica1.address() ? Role::Primary : Role::Replica)) {
        return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(wait_until(swapped, 10s)) << mux->status_text();
}

TEST(ReplicasTest, AWriteToALoneReplicaSaysThePrimaryIsNotListed) {
  // One endpoint gets every command, whatever its role: the server's READONLY, with what
  // redmux knows and the server does not say.
  PrimaryAndReplica set;
  RedisServer& primary = set.primary;
  RedisServer& replica = set.replica;
  auto mux = Multiplexer::connect(replica.address());
  Database db = mux->database();
  Result<bool> write = db.set("k", "v").result();
  ASSERT_FALSE(write.has_value());
  const std::string message = write.error().message();
  EXPECT_EQ(write.error().code(), errc::server_error) << message;
  EXPECT_TRUE(message.starts_with("READONLY ")) << message;
  EXPECT_NE(message.find("(reply to SET; " + replica.address() +
                         ", the only endpoint listed, is a replica of " + primary.address() +
                         ": list the primary among the endpoints"),
            std::string::npos)
      << message;
  EXPECT_TRUE(write.error().safe_to_retry()) << message;
  // Reads still go to it, as to any lone endpoint; the reply to them is untouched.
  EXPECT_EQ(db.get("k").get(), std::nullopt);
}

TEST(ReplicasTest, WritesQueuedForACrashedPrimaryGoToTheReplicaPromotedInItsPlace) {
  // The primary crashes; writes queue on its connection (reconnecting). A replica is then
  // promoted by hand: those writes, never sent, go to it once its new role is seen, instead
  // of waiting for a server that is the primary no more until their timeout.
  PrimaryAndReplica set;
  RedisServer& primary = set.primary;
  RedisServer& replica = set.replica;
  auto mux = Multiplexer::connect(primary.address() + "," + replica.address() +
                                  ",asyncTimeout=20000,reconnectBaseDelay=5000,"
                                  "reconnectMaxDelay=5000");
  Database db = mux->database();
  ASSERT_EQ(db.incr("n").get(), 1);
  // Replicated before the crash (replication is asynchronous: else it dies with the primary).
  ASSERT_TRUE(wait_until([&] { return replica.cli({"GET", "n"}) == "1"; }));
  primary.kill();
  ASSERT_TRUE(wait_until([&] { return !mux->topology().servers[0].connected; }));
  std::vector<Future<long long>> queued;
  for (int i = 0; i < 5; ++i) queued.push_back(db.incr("n"));
  replica.cli({"REPLICAOF", "NO", "ONE"});
  const auto promoted = std::chrono::steady_clock::now();
  long long last = 0;
  for (auto& write : queued) {
    Result<long long> r = write.result();
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_GT(*r, last);
    last = *r;
  }
  // Well before their 20 s timeout, and before the dead primary's 5 s backoff ran out.
  EXPECT_LT(std::chrono::steady_clock::now() - promoted, 4s);
  EXPECT_EQ(last, 6);
  EXPECT_EQ(replica.cli({"GET", "n"}), "6");
}

TEST(ReplicasTest, WritesAreRefusedWhenEveryEndpointIsAReplicaUnlessTheyWait) {
  RedisServer primary;
  RedisServer replica1;
  RedisServer replica2;
  replicate(replica1, primary);
  replicate(replica2, primary);
  // failoverWait=false: refused at once, before anything is sent.
  auto mux =
      Multiplexer::connect(replica1.address() + "," + replica2.address() + ",failoverWait=false");
  Database db = mux->database();
  Result<bool> write = db.set("k", "v").result();
  ASSERT_FALSE(write.has_value());
  EXPECT_EQ(write.error().code(), errc::not_sent);
  EXPECT_TRUE(write.error().safe_to_retry());
  EXPECT_NE(write.error().message().find("no primary"), std::string::npos)
      << write.error().message();
  EXPECT_EQ(replica1.command_calls("set") + replica2.command_calls("set"), 0);  // never sent
  // Reads still work (from a replica: there is no primary to prefer).
  EXPECT_TRUE(db.get("k").result().has_value());
  // DemandMaster is refused; never sent, and a failover ends with a primary: safe to retry.
  Result<std::optional<std::string>> demanded = db.get("k", Flags::DemandMaster).result();
  ASSERT_FALSE(demanded.has_value());
  EXPECT_EQ(demanded.error().code(), errc::not_allowed);
  EXPECT_TRUE(demanded.error().safe_to_retry()) << demanded.error().message();

  // The default waits for a primary, within the command's own deadline: never sent to a
  // replica, and a timeout that says so when none comes.
  auto waiting = Multiplexer::connect(replica1.address() + "," + replica2.address());
  Database wait_db = waiting->database();
  Result<bool> timed_out = wait_db.set("k", "v", {}, CallOptions(Flags::None, 300ms)).result();
  ASSERT_FALSE(timed_out.has_value());
  EXPECT_EQ(timed_out.error().code(), errc::timeout);
  EXPECT_NE(timed_out.error().message().find("not sent; it waited for a primary"),
            std::string::npos)
      << timed_out.error().message();
  EXPECT_EQ(replica1.command_calls("set") + replica2.command_calls("set"), 0);
  // A write that waits while a replica is promoted runs on it, once, and in order with the
  // commands behind it (a PreferMaster read queued after it sees it).
  Future<bool> set = wait_db.set("k", "v1", {}, CallOptions(Flags::None, 20s));
  Future<std::optional<std::string>> read = wait_db.get("k");
  EXPECT_EQ(waiting->topology().waiting_for_primary, 2u) << waiting->topology().to_string();
  replica1.cli({"REPLICAOF", "NO", "ONE"});
  EXPECT_TRUE(set.get());
  EXPECT_EQ(read.get(), std::optional<std::string>("v1"));
  EXPECT_EQ(replica1.command_calls("set"), 1);
  EXPECT_EQ(replica2.command_calls("set"), 0);
  EXPECT_EQ(waiting->topology().waiting_for_primary, 0u);
}

/// A primary with two replicas, the multiplexer given the replicas only: no primary known.
struct ReplicasOnly {
  RedisServer primary;
  RedisServer replica1;
  RedisServer replica2;
  ReplicasOnly() {
    primary.cli({"SET", "k", "old"});
    replicate(replica1, primary);
    replicate(replica2, primary);
    EXPECT_TRUE(wait_until([&] { return in_sync(replica1) && in_sync(replica2); }, 20s));
  }
  std::string config() const { return replica1.address() + "," + replica2.address(); }
  long long calls(std::string_view command) const {
    return replica1.command_calls(command) + replica2.command_calls(command);
  }
};

TEST(ReplicasTest, AFireAndForgetWriteWaitsForAPrimaryNoLongerThanAsyncTimeout) {
  // It has no deadline once sent; held for a primary it has asyncTimeout, else every
  // command bound for the primary (a default read too) would wait behind it for ever.
  ReplicasOnly set;
  auto mux = Multiplexer::connect(set.config() + ",asyncTimeout=500");
  std::mutex mutex;
  std::vector<Error> errors;
  mux->on_error([&](const Error& error) {
    std::lock_guard lock(mutex);
    errors.push_back(error);
  });
  Database db = mux->database();
  db.incr("n", Flags::FireAndForget);
  const auto start = std::chrono::steady_clock::now();
  Result<std::optional<std::string>> read =
      db.get("k", CallOptions(Flags::None, std::chrono::milliseconds(5000))).result();
  ASSERT_TRUE(read.has_value()) << read.error().message();
  EXPECT_EQ(*read, "old");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].code(), errc::timeout);
    EXPECT_TRUE(errors[0].safe_to_retry());
    EXPECT_NE(errors[0].message().find("INCR after"), std::string::npos) << errors[0].message();
    EXPECT_NE(errors[0].message().find("waited for a primary"), std::string::npos)
        << errors[0].message();
  }
  EXPECT_GE(mux->status().timeouts, 1u);
  EXPECT_EQ(mux->topology().waiting_for_primary, 0u);
  // Reported timed out: it never runs, not even once a primary is known.
  set.replica1.cli({"REPLICAOF", "NO", "ONE"});
  ASSERT_TRUE(wait_until([&] { return db.incr("m").result().has_value(); }, 10s));
  EXPECT_EQ(set.replica1.cli({"GET", "n"}), "");
  EXPECT_EQ(set.calls("incr"), set.replica1.command_calls("incr"));
  EXPECT_EQ(set.primary.command_calls("incr"), 0);
}

TEST(ReplicasTest, AReadHeldBehindAWriteThatTimedOutGoesToAReplica) {
  // A default (PreferMaster) read waits behind a write held for a primary (a caller's read
  // after its write); once nothing waits ahead of it, a replica serves it.
  ReplicasOnly set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  auto write = db.set("k", "new", CallOptions(Flags::None, std::chrono::milliseconds(300)));
  auto read = db.get("k", CallOptions(Flags::None, std::chrono::milliseconds(4000)));
  Result<bool> written = write.result();
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().code(), errc::timeout) << written.error().message();
  const auto timed_out = std::chrono::steady_clock::now();
  Result<std::optional<std::string>> value = read.result();
  ASSERT_TRUE(value.has_value()) << value.error().message();
  EXPECT_EQ(*value, "old");
  EXPECT_LT(std::chrono::steady_clock::now() - timed_out, 1500ms);
  EXPECT_EQ(set.calls("set"), 0);
}

TEST(ReplicasTest, ACommandThatIsNotReadOnlyNeedsThePrimaryAsAWriteDoes) {
  // EVAL may write, and a transaction's EXEC is not read-only: neither goes to a replica
  // while no primary is known.
  ReplicasOnly set;
  auto refusing = Multiplexer::connect(set.config() + ",failoverWait=false");
  Database db = refusing->database();
  Result<long long> script =
      db.eval<long long>("return redis.call('INCR', KEYS[1])", {"n"}).result();
  ASSERT_FALSE(script.has_value());
  EXPECT_EQ(script.error().code(), errc::not_sent) << script.error().message();
  EXPECT_TRUE(script.error().safe_to_retry());
  EXPECT_NE(script.error().message().find(
                "EVAL is not read-only and needs the primary, but every endpoint is a replica"),
            std::string::npos)
      << script.error().message();
  Transaction tx = db.transaction();
  auto incr = tx.incr("n");
  Result<TransactionResult> ran = tx.execute_async().result();
  ASSERT_FALSE(ran.has_value());
  EXPECT_EQ(ran.error().code(), errc::not_sent) << ran.error().message();
  EXPECT_TRUE(ran.error().safe_to_retry());
  EXPECT_FALSE(incr.result().has_value());
  // Read-only ones still run on a replica.
  EXPECT_EQ(
      db.eval_ro<std::optional<std::string>>("return redis.call('GET', KEYS[1])", {"k"}).get(),
      "old");
  // Under failoverWait (the default) the script waits for a primary instead.
  auto waiting = Multiplexer::connect(set.config() + ",asyncTimeout=300");
  Result<long long> waited =
      waiting->database().eval<long long>("return redis.call('INCR', KEYS[1])", {"n"}).result();
  ASSERT_FALSE(waited.has_value());
  EXPECT_EQ(waited.error().code(), errc::timeout) << waited.error().message();
  EXPECT_NE(waited.error().message().find("waited for a primary"), std::string::npos)
      << waited.error().message();
  EXPECT_EQ(set.calls("eval") + set.calls("exec") + set.calls("multi"), 0);
}

TEST(ReplicasTest, ABatchThatWritesAfterReadsThatChoseAReplicaRunsOnThePrimary) {
  // One batch, one connection: its write takes it to the primary, reads and all.
  PrimaryAndReplica servers;
  auto mux = Multiplexer::connect(servers.primary.address() + "," + servers.replica.address());
  Database db = mux->database();
  const long long replica_gets = servers.replica.command_calls("get");
  Batch batch = db.batch();
  auto read = batch.get("k", Flags::PreferReplica);
  auto write = batch.incr("n");
  batch.execute();
  EXPECT_EQ(read.get(), std::nullopt);
  Result<long long> written = write.result();
  ASSERT_TRUE(written.has_value()) << written.error().message();
  EXPECT_EQ(*written, 1);
  EXPECT_EQ(servers.primary.command_calls("incr"), 1);
  EXPECT_EQ(servers.replica.command_calls("get"), replica_gets);
}

/// A refusal by redmux (NotAllowedError) whose message says `text`.
template <class T>
void expect_not_allowed(const Result<T>& result, std::string_view text) {
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), errc::not_allowed) << result.error().message();
  EXPECT_NE(result.error().message().find(text), std::string::npos) << result.error().message();
}

TEST(ReplicasTest, ABatchNeverRunsADemandReplicaReadOnThePrimary) {
  // One batch, one connection: a read that demands a replica and a command that needs or
  // prefers the primary cannot share one; the later of the two is refused, never sent.
  PrimaryAndReplica servers;
  auto mux = Multiplexer::connect(servers.primary.address() + "," + servers.replica.address());
  Database db = mux->database();
  const long long primary_gets = servers.primary.command_calls("get");
  const long long replica_gets = servers.replica.command_calls("get");
  {
    Batch batch = db.batch();
    auto read = batch.get("k", Flags::DemandReplica);
    auto write = batch.incr("n");
    batch.execute();
    EXPECT_EQ(read.get(), std::nullopt);
    Result<long long> written = write.result();
    expect_not_allowed(written,
                       "INCR needs the primary, but this batch holds a read that "
                       "demands a replica");
    EXPECT_FALSE(written.error().safe_to_retry());  // the same batch would be refused again
  }
  {
    Batch batch = db.batch();
    auto write = batch.incr("n");
    auto read = batch.get("k", Flags::DemandReplica);
    batch.execute();
    EXPECT_EQ(write.get(), 1);
    expect_not_allowed(read.result(),
                       "GET demands a replica (DemandReplica), but this batch runs on the primary");
  }
  {
    // A read that prefers the primary (PreferMaster, the default) keeps the batch there.
    Batch batch = db.batch();
    auto first = batch.get("a");
    auto second = batch.get("b", Flags::DemandReplica);
    batch.execute();
    EXPECT_EQ(first.get(), std::nullopt);
    expect_not_allowed(second.result(), "which a command before it needs or prefers");
  }
  {
    // Reads that accept a replica follow a DemandReplica read there.
    Batch batch = db.batch();
    auto first = batch.get("a", Flags::PreferReplica);
    auto second = batch.get("b", Flags::DemandReplica);
    batch.execute();
    EXPECT_EQ(first.get(), std::nullopt);
    EXPECT_EQ(second.get(), std::nullopt);
  }
  EXPECT_EQ(servers.primary.command_calls("get"), primary_gets + 1);
  EXPECT_EQ(servers.replica.command_calls("get"), replica_gets + 3);
  EXPECT_EQ(servers.primary.command_calls("incr"), 1);
}

TEST(ReplicasTest, ABatchOfDemandReplicaReadsWhoseReplicaIsLostIsNotSentToThePrimary) {
  PrimaryAndReplica servers;
  auto mux = Multiplexer::connect(servers.primary.address() + "," + servers.replica.address() +
                                  ",asyncTimeout=3000");
  Database db = mux->database();
  const long long primary_gets = servers.primary.command_calls("get");
  Batch batch = db.batch();
  auto first = batch.get("k", Flags::DemandReplica);
  auto second = batch.get("k2", Flags::DemandReplica);
  servers.replica.kill();
  ASSERT_TRUE(wait_until([&] { return !mux->topology().servers[1].connected; }));
  batch.execute();
  for (auto* read : {&first, &second}) {
    Result<std::optional<std::string>> got = read->result();
    ASSERT_FALSE(got.has_value());
    EXPECT_EQ(got.error().code(), errc::not_sent) << got.error().message();
    EXPECT_NE(got.error().message().find("no other replica is in sync (DemandReplica)"),
              std::string::npos)
        << got.error().message();
  }
  EXPECT_EQ(servers.primary.command_calls("get"), primary_gets);
}

TEST(ReplicasTest, DemandReplicaIsRefusedInATransactionAndWithDemandMaster) {
  PrimaryAndReplica servers;
  auto mux = Multiplexer::connect(servers.primary.address() + "," + servers.replica.address());
  Database db = mux->database();
  Transaction tx = db.transaction();
  auto read = tx.get("k", Flags::DemandReplica);
  auto write = tx.incr("n");
  const TransactionResult result = tx.execute();
  EXPECT_EQ(result.outcome, TransactionOutcome::Rejected) << result.reason;
  EXPECT_NE(result.reason.find("GET demands a replica (DemandReplica), but a transaction runs "
                               "on the primary"),
            std::string::npos)
      << result.reason;
  EXPECT_EQ(read.result().error().code(), errc::not_allowed);
  EXPECT_EQ(servers.primary.command_calls("incr"), 0);

  Result<std::optional<std::string>> both =
      db.get("k", Flags::DemandMaster | Flags::DemandReplica).result();
  ASSERT_FALSE(both.has_value());
  EXPECT_EQ(both.error().code(), errc::invalid_argument) << both.error().message();
  EXPECT_EQ(servers.primary.command_calls("get") + servers.replica.command_calls("get"), 0);
}

TEST(ReplicasTest, ABatchConflictOnALonePrimaryNamesTheMissingReplica) {
  // Where the read could not run alone either, its refusal says why, not the batch's.
  RedisServer primary;
  auto mux = Multiplexer::connect(primary.address());
  Database db = mux->database();
  Batch batch = db.batch();
  auto write = batch.incr("n");
  auto read = batch.get("k", Flags::DemandReplica);
  batch.execute();
  EXPECT_EQ(write.get(), 1);
  Result<std::optional<std::string>> got = read.result();
  ASSERT_FALSE(got.has_value());
  EXPECT_NE(got.error().message().find("the only endpoint listed"), std::string::npos)
      << got.error().message();
}

TEST(ReplicasTest, ABatchWriteIsRefusedWhileNoPrimaryIsKnownAndItsReadsRun) {
  ReplicasOnly set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  Batch batch = db.batch();
  auto read = batch.get("k");
  auto write = batch.incr("n");
  batch.execute();
  EXPECT_EQ(read.get(), "old");
  Result<long long> written = write.result();
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().code(), errc::not_sent) << written.error().message();
  EXPECT_NE(written.error().message().find("INCR writes, but every endpoint is a replica"),
            std::string::npos)
      << written.error().message();
  EXPECT_EQ(set.calls("incr"), 0);
}

TEST(ReplicasTest, APreferMasterReadGoesToAReplicaWhileThePrimaryIsDown) {
  // PreferMaster: the primary while it is connected; a replica meanwhile, rather than a
  // wait for the crashed primary's reconnection.
  PrimaryAndReplica servers;
  servers.primary.cli({"SET", "k", "v"});
  ASSERT_TRUE(wait_until([&] { return servers.replica.cli({"GET", "k"}) == "v"; }));
  auto mux = Multiplexer::connect(servers.primary.address() + "," + servers.replica.address() +
                                  ",asyncTimeout=3000,reconnectBaseDelay=5000,"
                                  "reconnectMaxDelay=5000");
  Database db = mux->database();
  EXPECT_EQ(db.get("k").get(), "v");
  EXPECT_EQ(servers.primary.command_calls("get"), 1);
  servers.primary.kill();
  ASSERT_TRUE(wait_until([&] { return !mux->topology().servers[0].connected; }));
  const auto start = std::chrono::steady_clock::now();
  Result<std::optional<std::string>> read = db.get("k").result();
  ASSERT_TRUE(read.has_value()) << read.error().message();
  EXPECT_EQ(*read, "v");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_GE(servers.replica.command_calls("get"), 1);
}

TEST(ReplicasTest, AWriteThatWaitedForAPrimaryAndWasSentIsNeverReportedAsNotSent) {
  // A write held while no primary is known is sent once one is; if that server then dies
  // before answering, the write may have run: outcome unknown, never "not sent" (which would
  // invite a retry that runs it twice).
  RedisServer primary;
  ServerOptions busy;
  busy.args = {"--busy-reply-threshold", "100"};
  RedisServer replica1(busy);
  RedisServer replica2;
  replicate(replica1, primary);
  replicate(replica2, primary);
  auto mux = Multiplexer::connect(replica1.address() + "," + replica2.address());
  // INCR, then two seconds of work before the reply.
  const Arg script[] = {"EVAL",
                        "local r = redis.call('INCR', KEYS[1]) "
                        "local t = tonumber(redis.call('TIME')[1]) "
                        "while tonumber(redis.call('TIME')[1]) < t + 3 do end return r",
                        "1", "slow"};
  Future<Reply> slow = mux->database().execute(script, CallOptions(Flags::DemandMaster, 30s));
  ASSERT_EQ(mux->topology().waiting_for_primary, 1u) << mux->topology().to_string();
  replica1.cli({"REPLICAOF", "NO", "ONE"});
  // The script runs once the promotion is seen (other clients get BUSY meanwhile).
  ASSERT_TRUE(wait_until(
      [&] {
        const test::ProcessResult ping = replica1.try_cli({"PING"});
        return (ping.out + ping.err).find("BUSY") != std::string::npos;
      },
      20s));
  replica1.kill();
  Result<Reply> outcome = slow.result();
  ASSERT_FALSE(outcome.has_value());
  EXPECT_EQ(outcome.error().code(), errc::outcome_unknown) << outcome.error().message();
  EXPECT_FALSE(outcome.error().safe_to_retry()) << outcome.error().message();
}

/// True once the multiplexer routes replica reads to exactly the servers `serving`.
bool serves_reads_from(const Multiplexer& mux, const std::vector<std::uint16_t>& serving) {
  const Topology topology = mux.topology();
  for (const ServerView& server : topology.servers) {
    const bool listed =
        std::find(serving.begin(), serving.end(), server.endpoint.port) != serving.end();
    if (server.serves_replica_reads != listed) return false;
  }
  return true;
}

TEST(ReplicasTest, ReadsStayOffAReplicaWhoseLinkToThePrimaryIsDown) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  ASSERT_TRUE(wait_until([&] { return set.replica2.cli({"GET", "k"}) == "v"; }));
  // connect() returned once both replicas had answered their first INFO replication.
  EXPECT_TRUE(serves_reads_from(*mux, {set.replica1.port(), set.replica2.port()}))
      << mux->topology().to_string();
  // replica2 loses its primary (pointed at a port nobody listens on): it still answers reads
  // from what it has (replica-serve-stale-data yes), but redmux stops sending them there
  // within the role check's second.
  const test::ClosedPort closed;
  const std::string dead = std::to_string(closed.port());
  set.replica2.cli({"REPLICAOF", "127.0.0.1", dead});
  ASSERT_TRUE(wait_until([&] { return serves_reads_from(*mux, {set.replica1.port()}); }, 10s))
      << mux->topology().to_string();
  EXPECT_NE(mux->topology().to_string().find("master_link_status:down"), std::string::npos)
      << mux->topology().to_string();
  const long long before1 = set.replica1.command_calls("get");
  const long long before2 = set.replica2.command_calls("get");
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(db.get("k", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  }
  EXPECT_EQ(set.replica1.command_calls("get") - before1, 20);
  EXPECT_EQ(set.replica2.command_calls("get") - before2, 0);
  // No replica in sync: PreferReplica reads go to the primary; DemandReplica says why.
  set.replica1.cli({"REPLICAOF", "127.0.0.1", dead});
  ASSERT_TRUE(wait_until([&] { return serves_reads_from(*mux, {}); }, 10s))
      << mux->topology().to_string();
  const long long on_primary = set.primary.command_calls("get");
  EXPECT_EQ(db.get("k", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  EXPECT_EQ(set.primary.command_calls("get"), on_primary + 1);
  Result<std::optional<std::string>> demanded = db.get("k", Flags::DemandReplica).result();
  ASSERT_FALSE(demanded.has_value());
  EXPECT_EQ(demanded.error().code(), errc::not_allowed);
  EXPECT_NE(demanded.error().message().find("none of those connected is in sync"),
            std::string::npos)
      << demanded.error().message();
  EXPECT_NE(demanded.error().message().find(set.replica1.address() + ": master_link_status:down"),
            std::string::npos)
      << demanded.error().message();
  // Back in sync: back in use.
  replicate(set.replica1, set.primary);
  replicate(set.replica2, set.primary);
  ASSERT_TRUE(wait_until(
      [&] {
        return serves_reads_from(*mux, {set.replica1.port(), set.replica2.port()});
      },
      20s))
      << mux->topology().to_string();
}

/// How many commands `server` has refused with -MASTERDOWN (INFO errorstats).
long long master_down_refusals(const RedisServer& server) {
  const std::string stats = server.cli({"INFO", "errorstats"});
  constexpr std::string_view kField = "errorstat_MASTERDOWN:count=";  // absent until one
  const std::size_t at = stats.find(kField);
  return at == std::string::npos ? 0 : std::stoll(stats.substr(at + kField.size()));
}

TEST(ReplicasTest, APreferReplicaReadRefusedWithMasterDownRunsOnThePrimary) {
  // A replica with replica-serve-stale-data no refuses reads with -MASTERDOWN once it loses
  // its primary. Until redmux's next look at the replica, reads sent there are refused
  // without running. The first time, they fail (safe to retry); from then on redmux knows
  // the replica may refuse, and under PreferReplica they run on the primary instead.
  PrimaryAndReplica pair;
  pair.replica.cli({"CONFIG", "SET", "replica-serve-stale-data", "no"});
  auto mux = Multiplexer::connect(pair.primary.address() + "," + pair.replica.address());
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  const test::ClosedPort closed;
  // One round: the link is broken just before a burst of reads. redmux's role check (every
  // second, and at once after the first MASTERDOWN) may now and then see it first, and then
  // no read is refused: such a round is tried again. Returns the reads the replica refused.
  auto round = [&](bool learned) -> long long {
    replicate(pair.replica, pair.primary);
    EXPECT_TRUE(wait_until([&] { return in_sync(pair.replica); }, 20s));
    EXPECT_TRUE(wait_until([&] { return serves_reads_from(*mux, {pair.replica.port()}); }, 10s))
        << mux->topology().to_string();
    const long long refused_before = master_down_refusals(pair.replica);
    const long long on_primary = pair.primary.command_calls("get");
    pair.replica.cli({"REPLICAOF", "127.0.0.1", std::to_string(closed.port())});
    std::vector<Future<std::optional<std::string>>> reads;
    for (int i = 0; i < 200; ++i) reads.push_back(db.get("k", Flags::PreferReplica));
    long long failed = 0;
    for (auto& read : reads) {
      Result<std::optional<std::string>> value = read.result();
      if (value.has_value()) {
        EXPECT_EQ(*value, std::optional<std::string>("v"));
        continue;
      }
      ++failed;
      EXPECT_FALSE(learned) << value.error().message();
      EXPECT_EQ(value.error().message().rfind("MASTERDOWN", 0), 0u) << value.error().message();
      EXPECT_TRUE(value.error().safe_to_retry()) << value.error().message();
    }
    const long long refused = master_down_refusals(pair.replica) - refused_before;
    if (learned) {  // every refused read ran on the primary (and those sent after the check)
      EXPECT_GE(pair.primary.command_calls("get") - on_primary, refused);
    } else if (refused > 0) {
      // The first refusal fails its read; reads issued after it may already go elsewhere.
      EXPECT_GT(failed, 0);
      EXPECT_LE(failed, refused);
    }
    return refused;
  };
  long long refused = 0;
  for (int attempt = 0; attempt < 5 && refused == 0; ++attempt) refused = round(false);
  ASSERT_GT(refused, 0) << "no read reached the replica between its link's loss and redmux's "
                           "role check in five rounds";
  refused = 0;
  for (int attempt = 0; attempt < 5 && refused == 0; ++attempt) refused = round(true);
  EXPECT_GT(refused, 0) << "no read reached the replica between its link's loss and redmux's "
                           "role check in five rounds";
  // DemandReplica: nowhere else to go, so the refusal (or, once the check has seen the link
  // down, redmux's own) is the caller's, safe to retry.
  Result<std::optional<std::string>> demanded = db.get("k", Flags::DemandReplica).result();
  ASSERT_FALSE(demanded.has_value());
  EXPECT_TRUE(demanded.error().safe_to_retry()) << demanded.error().message();
}

TEST(ReplicasTest, ReplicasKeepServingReadsWhileThePrimaryIsDown) {
  // A primary that fails takes its replicas' links down with it; their data is then the
  // newest there is, so replica reads keep going to them (a failover is coming) instead of
  // queueing for the dead primary.
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config() + ",connectTimeout=500");
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  ASSERT_TRUE(wait_until([&] {
    return set.replica1.cli({"GET", "k"}) == "v" && set.replica2.cli({"GET", "k"}) == "v";
  }));
  set.primary.kill();
  ASSERT_TRUE(wait_until([&] {
    return set.replica1.info_field("master_link_status") == "down" &&
           set.replica2.info_field("master_link_status") == "down";
  }));
  // Past the replicas' next INFO replication (every second): they say their link is down.
  const auto until = std::chrono::steady_clock::now() + 2500ms;
  int reads = 0;
  while (std::chrono::steady_clock::now() < until) {
    Result<std::optional<std::string>> r = db.get("k", Flags::DemandReplica).result();
    ASSERT_TRUE(r.has_value()) << r.error().message() << "; " << mux->topology().to_string();
    EXPECT_EQ(*r, std::optional<std::string>("v"));
    ++reads;
  }
  EXPECT_GT(reads, 0);
  EXPECT_NE(mux->topology().to_string().find("master_link_status:down"), std::string::npos)
      << mux->topology().to_string();
}

TEST(ReplicasTest, ReadsStayOffAReplicaThatIsResynchronising) {
  // A replica that joins (or rejoins after a crash) answers from its own data set until the
  // primary's snapshot is loaded; here the primary waits 5 s before it sends it (a diskless
  // sync's delay), and the new replica has none of the primary's keys meanwhile.
  ServerOptions slow_sync;
  slow_sync.args = {"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "5"};
  RedisServer primary(slow_sync);
  RedisServer replica;
  RedisServer joining;
  replicate(replica, primary);
  ASSERT_TRUE(wait_until([&] { return in_sync(replica); }, 20s));
  primary.cli({"SET", "k", "v"});
  ASSERT_TRUE(wait_until([&] { return replica.cli({"GET", "k"}) == "v"; }));
  replicate(joining, primary);
  ASSERT_EQ(joining.info_field("master_link_status"), "down");
  auto mux =
      Multiplexer::connect(primary.address() + "," + replica.address() + "," + joining.address());
  Database db = mux->database();
  EXPECT_TRUE(serves_reads_from(*mux, {replica.port()})) << mux->topology().to_string();
  // Every PreferReplica read sees the key while `joining` still has an empty data set.
  // The GETs it served are counted before each look at its link: a count followed by "down"
  // was all served while it resynchronised (a read sent once it is up may go to it).
  int reads = 0;
  long long served_while_down = 0;
  for (;;) {
    const long long served = joining.command_calls("get");
    if (joining.info_field("master_link_status") == "up" || reads >= 2000) break;
    served_while_down = served;
    ASSERT_EQ(db.get("k", Flags::PreferReplica).get(), std::optional<std::string>("v"))
        << "read " << reads << " returned a resynchronising replica's data; "
        << mux->topology().to_string();
    ++reads;
  }
  EXPECT_GT(reads, 0);
  EXPECT_EQ(served_while_down, 0);
  // Once it has loaded the snapshot it serves reads too.
  ASSERT_TRUE(wait_until(
      [&] {
        return serves_reads_from(*mux, {replica.port(), joining.port()});
      },
      20s))
      << mux->topology().to_string();
}

TEST(ReplicasTest, AStoppedReplicaStopsGettingReadsOnceItsInfoProbeIsOverdue) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  ASSERT_TRUE(wait_until([&] { return set.replica2.cli({"GET", "k"}) == "v"; }));
  ASSERT_TRUE(serves_reads_from(*mux, {set.replica1.port(), set.replica2.port()}))
      << mux->topology().to_string();
  // Frozen (SIGSTOP): its connection stays up and its probe unanswered. Reads leave it once
  // the probe is 2 s overdue, long before the dead-connection rule would close it.
  set.replica2.pause();
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until([&] { return serves_reads_from(*mux, {set.replica1.port()}); }, 10s))
      << mux->topology().to_string();
  const auto left = std::chrono::steady_clock::now() - stopped;
  EXPECT_LT(left, 4s);
  EXPECT_NE(mux->topology().to_string().find("INFO replication has gone unanswered"),
            std::string::npos)
      << mux->topology().to_string();
  for (int i = 0; i < 20; ++i) {
    // None goes to the frozen one: each would time out there.
    EXPECT_EQ(db.get("k", CallOptions(Flags::PreferReplica, 1000ms)).get(),
              std::optional<std::string>("v"));
  }
  // While it is stopped the primary takes writes it does not have.
  ASSERT_TRUE(db.set("k", "v2").get());
  set.replica2.resume();
  // The probe it had pending is answered at once (SIGCONT). The next probe comes at the next
  // health tick, up to a second later, and would end the state checked below after anything
  // from 0 to 1 s: hold it with a pause of 1.5 s, under the 2 s that makes a probe overdue.
  set.replica2.cli({"CLIENT", "PAUSE", "1500", "ALL"});
  // Its first answer after the stall (to the probe it had pending) is from a server that may
  // not have read its primary's backlog yet, the link reported up: not back in use on that
  // answer, only on the next one.
  ASSERT_TRUE(wait_until([&] {
    return mux->topology().to_string().find("answering again after a stall") != std::string::npos;
  })) << mux->topology().to_string();
  EXPECT_TRUE(serves_reads_from(*mux, {set.replica1.port()})) << mux->topology().to_string();
  ASSERT_TRUE(wait_until(
      [&] {
        return serves_reads_from(*mux, {set.replica1.port(), set.replica2.port()});
      },
      10s))
      << mux->topology().to_string();
  EXPECT_EQ(set.replica2.cli({"GET", "k"}), "v2");
}

}  // namespace
}  // namespace redmux
