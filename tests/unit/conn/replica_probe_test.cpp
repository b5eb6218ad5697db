// What a connection learns about its server after the handshake, and what it hands back when
// it loses the server: the INFO replication probe (a replica's health, the ROLE fallback when
// the server refuses INFO, start()'s first result waiting for the first answer), and the down
// hook with take_queued() (a retarget, a failed attempt). Scripted: no server, no clock.
#include <gtest/gtest.h>

#include "conn/connection_machine.hpp"
#include "scripted_runner.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using testing::bulk;
using testing::handshake_replies;
using testing::ScriptedRunner;

constexpr std::string_view kInfoReplication = "*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n";
constexpr std::string_view kRole = "*1\r\n$4\r\nROLE\r\n";
constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";

std::string get_bytes(std::string_view key) {
  return test::command_bytes({"GET", key});
}

std::string info_reply(std::string_view link_status, std::string_view role = "slave") {
  return bulk("# Replication\r\nrole:" + std::string(role) + "\r\nmaster_host:10.0.0.2\r\n" +
              "master_link_status:" + std::string(link_status) +
              "\r\nmaster_last_io_seconds_ago:1\r\nmaster_sync_in_progress:0\r\n" +
              "master_link_down_since_seconds:-1\r\n");
}

/// What the runner wrote since the last call (an inline write, or a Write it completes).
std::string written(ScriptedRunner& r) {
  if (r.writing) r.complete_write();
  return r.take_wire();
}

/// Hands commands taken out of a connection back to nobody: fails and releases each.
void drop(std::vector<PendingCommand>& commands) {
  for (PendingCommand& command : commands) {
    command.state->fail(Error(errc::shut_down, "test: dropped"));
    command.state->release();
  }
  commands.clear();
}

// A replica serves reads only once its INFO replication says it is in sync; start()'s first
// result waits for that answer, so reads sent right after connect() find it.
TEST(ReplicaProbeTest, AReplicaIsUnfitUntilItsFirstInfoReplicationSaysItIsInSync) {
  ScriptedRunner r;
  r.ready(false, "replica");
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  EXPECT_TRUE(r.machine.server().is_replica());
  EXPECT_EQ(r.machine.server().health(), ReplicaHealth::Unfit);
  EXPECT_EQ(r.machine.server().replication_state(),
            "its first INFO replication is not answered yet");
  EXPECT_FALSE(r.first_result.has_value()) << "connect() reported before the replica's state";
  EXPECT_EQ(written(r), kInfoReplication);
  r.feed(info_reply("up"));
  ASSERT_TRUE(r.first_result.has_value());
  EXPECT_FALSE(*r.first_result) << r.first_result->message();
  EXPECT_EQ(r.machine.server().health(), ReplicaHealth::InSync);
  EXPECT_EQ(r.machine.server().replication_state(), "");
  // On the role's schedule (a replica: every second) it asks INFO replication again.
  r.advance(1000ms);
  EXPECT_EQ(written(r),
            std::string(kInfoReplication) + std::string(kPing));  // and the idle heartbeat
  r.feed(info_reply("down") + "+PONG\r\n");
  EXPECT_EQ(r.machine.server().health(), ReplicaHealth::Unfit);
  EXPECT_NE(r.machine.server().replication_state(), "");
}

// An ACL without INFO: the role comes from ROLE from then on, and the replica is trusted as
// before the check existed (connect() does not wait forever for an answer that never comes).
TEST(ReplicaProbeTest, ARefusedInfoReplicationFallsBackToRole) {
  ScriptedRunner r;
  r.ready(false, "replica");
  EXPECT_EQ(written(r), kInfoReplication);
  r.feed("-NOPERM this user has no permissions to run the 'info' command\r\n");
  ASSERT_TRUE(r.first_result.has_value());
  EXPECT_FALSE(*r.first_result) << r.first_result->message();
  EXPECT_EQ(r.machine.server().health(), ReplicaHealth::InSync);
  EXPECT_EQ(written(r), kRole) << "the refusal asks ROLE at once";
  r.feed("*5\r\n" + bulk("slave") + bulk("10.0.0.2") + ":6379\r\n" + bulk("connected") + ":42\r\n");
  EXPECT_TRUE(r.machine.server().is_replica());
  r.advance(1000ms);
  EXPECT_EQ(written(r), std::string(kRole) + std::string(kPing)) << "INFO is not asked again";
}

// A replica promoted by a failover: INFO replication's role says so, and the role hook runs
// (routing sends writes there), with the health already known.
TEST(ReplicaProbeTest, InfoReplicationSayingMasterPromotesTheConnection) {
  ScriptedRunner r;
  int role_changes = 0;
  r.machine.set_role_hook([&] { ++role_changes; });
  r.ready(false, "replica");
  EXPECT_EQ(written(r), kInfoReplication);
  r.feed(info_reply("up"));
  r.advance(1000ms);
  EXPECT_EQ(written(r), std::string(kInfoReplication) + std::string(kPing));
  r.feed(bulk("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n") + "+PONG\r\n");
  EXPECT_FALSE(r.machine.server().is_replica());
  EXPECT_EQ(r.machine.server().health(), ReplicaHealth::InSync);
  EXPECT_EQ(role_changes, 1);
}

// The connection breaks before the replica answered its first probe: start() waited for a
// moot answer, and reports the connection it had.
TEST(ReplicaProbeTest, ABreakBeforeTheFirstAnswerReportsConnected) {
  ScriptedRunner r;
  r.ready(false, "replica");
  EXPECT_FALSE(r.first_result.has_value());
  r.server_closes();
  ASSERT_TRUE(r.first_result.has_value());
  EXPECT_FALSE(*r.first_result) << r.first_result->message();
}

// Sentinel moves a ready connection to the new primary: what was queued is handed back in
// order by the down hook (to go where its flags allow; what was written is settled by the
// break), and the server counts as a replica until the new one's handshake.
TEST(ReplicaProbeTest, ARetargetHandsBackTheQueuedCallersCommands) {
  ScriptedRunner r;
  std::vector<bool> downs;
  std::string bytes;
  std::vector<PendingCommand> taken;
  r.machine.set_down_hook([&](bool retargeted) {
    downs.push_back(retargeted);
    EXPECT_NE(r.machine.state(), ConnectionState::Ready);
    r.machine.take_queued(bytes, taken);
  });
  r.ready();
  ASSERT_TRUE(r.first_result.has_value());
  auto& a = r.get("a");  // inline: on the wire
  EXPECT_EQ(written(r), get_bytes("a"));
  r.defer_posts = true;  // the I/O thread has not taken them yet
  auto& b = r.get("b");
  auto& c = r.get("c");
  r.perform(r.machine.retarget(Endpoint{"10.0.0.2", 6379, {}}, r.now));
  r.run_posted();
  EXPECT_EQ(downs, std::vector<bool>{true});
  EXPECT_TRUE(a.state->ready()) << "written to the old server: settled by the break";
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].state, b.state);
  EXPECT_EQ(taken[1].state, c.state);
  EXPECT_EQ(bytes, get_bytes("b") + get_bytes("c"));
  EXPECT_EQ(r.machine.queued_count(), 0u);
  EXPECT_TRUE(r.machine.server().is_replica()) << "not known to be a primary before it answers";
  EXPECT_EQ(r.machine.server().health(), ReplicaHealth::Unfit);
  EXPECT_EQ(r.machine.server().identity().role, "") << "the role the old server gave";
  ASSERT_FALSE(r.connects.empty());
  EXPECT_EQ(r.connects.back().to_string(), "10.0.0.2:6379");
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  EXPECT_FALSE(r.machine.server().is_replica());
  EXPECT_EQ(written(r), "") << "nothing handed back is sent here";
  drop(taken);
}

// An attempt that fails hands back what waits for it (a replica's connection: its reads may
// run on another replica); the SELECT redmux queued stays out, each command keeps its `db`.
TEST(ReplicaProbeTest, AFailedAttemptRunsTheDownHook) {
  ScriptedRunner r;
  std::vector<bool> downs;
  std::string bytes;
  std::vector<PendingCommand> taken;
  r.machine.set_down_hook([&](bool retargeted) {
    downs.push_back(retargeted);
    r.machine.take_queued(bytes, taken);
  });
  r.start();
  auto& a = r.get("a", 5000ms, 2);  // queued behind a SELECT 2
  r.perform(r.machine.on_connect_failed("Connection refused", r.now));
  EXPECT_EQ(downs, std::vector<bool>{false});
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].state, a.state);
  EXPECT_EQ(taken[0].db, 2);
  EXPECT_EQ(bytes, get_bytes("a"));
  EXPECT_EQ(r.machine.queued_count(), 0u);
  drop(taken);
}

}  // namespace
}  // namespace redmux::detail
