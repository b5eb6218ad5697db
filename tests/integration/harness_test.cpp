// Tests of the test harness itself (tests/support): if RedisServer lies about pausing,
// killing or restarting, every resilience test built on it proves nothing.
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "support/ports.hpp"
#include "support/process.hpp"
#include "support/raw_connection.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux::test {
namespace {

using namespace std::chrono_literals;

TEST(HarnessTest, ServerStartsOnLoopbackAndAnswersCli) {
  RedisServer server;
  EXPECT_GT(server.port(), 0);
  EXPECT_GT(server.pid(), 0);
  EXPECT_EQ(server.host(), "127.0.0.1");
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  EXPECT_EQ(server.cli({"SET", "greeting", "hello world"}), "OK");
  EXPECT_EQ(server.cli({"GET", "greeting"}), "hello world");
  EXPECT_EQ(server.info_int("tcp_port"), server.port());
  EXPECT_EQ(server.info_field("process_id"), std::to_string(server.pid()));
  EXPECT_TRUE(std::filesystem::is_directory(server.data_dir()));
}

TEST(HarnessTest, ArgumentsNeedNoQuoting) {
  RedisServer server;
  const std::string awkward = "two words; $HOME 'quoted' \"double\" \\ *";
  EXPECT_EQ(server.cli({"SET", "key with spaces", awkward}), "OK");
  EXPECT_EQ(server.cli({"GET", "key with spaces"}), awkward);
}

TEST(HarnessTest, ErrorReplyMakesCliThrow) {
  RedisServer server;
  EXPECT_THROW(server.cli({"NO-SUCH-COMMAND"}), std::runtime_error);
  const ProcessResult result = server.try_cli({"NO-SUCH-COMMAND"});
  EXPECT_FALSE(result.ok());
  EXPECT_NE((result.out + result.err).find("unknown command"), std::string::npos)
      << result.out << result.err;
}

TEST(HarnessTest, TwoServersGetDifferentPortsAndDirectories) {
  RedisServer first;
  RedisServer second;
  EXPECT_NE(first.port(), second.port());
  EXPECT_NE(first.data_dir(), second.data_dir());
  first.cli({"SET", "where", "first"});
  EXPECT_EQ(second.cli({"EXISTS", "where"}), "0");
}

TEST(HarnessTest, PauseStallsRepliesUntilResume) {
  RedisServer server;
  RawConnection connection(server.port());
  connection.send("PING\r\n");
  EXPECT_EQ(connection.read_until("\r\n", 5s), "+PONG\r\n");

  server.pause();
  EXPECT_TRUE(server.paused());
  connection.send("PING\r\n");
  EXPECT_EQ(connection.read_some(300ms), "") << "a stopped server answered";
  const ProcessResult stalled = server.try_cli({"PING"}, 1s);
  EXPECT_TRUE(stalled.timed_out);

  server.resume();
  EXPECT_FALSE(server.paused());
  EXPECT_EQ(connection.read_until("+PONG\r\n", 5s), "+PONG\r\n");
  EXPECT_EQ(server.cli({"PING"}), "PONG");
}

TEST(HarnessTest, KillThenRestartOnTheSamePort) {
  RedisServer server;
  const auto port = server.port();
  const pid_t old_pid = server.pid();
  server.cli({"SET", "survives", "no"});
  RawConnection connection(port);

  server.kill();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
  EXPECT_EQ(::kill(old_pid, 0), -1);
  EXPECT_EQ(connection.read_some(5s), "");
  EXPECT_TRUE(connection.closed());
  EXPECT_FALSE(loopback_port_accepts(port));
  EXPECT_FALSE(server.try_cli({"PING"}, 5s).ok());

  server.restart();
  EXPECT_TRUE(server.running());
  EXPECT_NE(server.pid(), old_pid);
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  EXPECT_EQ(server.cli({"EXISTS", "survives"}), "0") << "no persistence: data is gone";
}

TEST(HarnessTest, RestartWhileRunningAndWhilePaused) {
  RedisServer server;
  const auto port = server.port();
  server.restart();
  EXPECT_EQ(server.cli({"PING"}), "PONG");
  server.pause();
  server.restart();
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.cli({"PING"}), "PONG");
}

TEST(HarnessTest, DestructorStopsServerAndRemovesDirectory) {
  pid_t pid = -1;
  std::filesystem::path dir;
  {
    RedisServer server;
    server.pause();  // must not keep the destructor from stopping it
    pid = server.pid();
    dir = server.data_dir();
  }
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(HarnessTest, CliAuthenticatesWithRequirepass) {
  ServerOptions options;
  options.args = {"--requirepass", "s3cret pass"};
  options.cli_password = "s3cret pass";
  RedisServer server(options);
  EXPECT_EQ(server.cli({"ACL", "WHOAMI"}), "default");

  RawConnection anonymous(server.port());
  anonymous.send("PING\r\n");
  EXPECT_EQ(anonymous.read_until("\r\n", 5s).rfind("-NOAUTH", 0), 0u);
}

TEST(HarnessTest, CliAuthenticatesAsAclUser) {
  ServerOptions options;
  options.acl_file_contents =
      "user default off\n"
      "user alice on >wonderland ~app:* +@all\n";
  options.cli_user = "alice";
  options.cli_password = "wonderland";
  RedisServer server(options);
  EXPECT_EQ(server.cli({"ACL", "WHOAMI"}), "alice");
  EXPECT_EQ(server.cli({"SET", "app:1", "x"}), "OK");
  const ProcessResult denied = server.try_cli({"SET", "other:1", "x"});
  EXPECT_FALSE(denied.ok());
  EXPECT_NE((denied.out + denied.err).find("NOPERM"), std::string::npos)
      << denied.out << denied.err;
}

TEST(HarnessTest, StartupFailureThrowsWithServerOutput) {
  ServerOptions options;
  options.args = {"--no-such-directive", "1"};
  try {
    RedisServer server(options);
    FAIL() << "a server with a bad directive started";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("exited during startup"), std::string::npos) << message;
    EXPECT_NE(message.find("no-such-directive"), std::string::npos) << message;
  }
}

TEST(HarnessTest, MissingBinaryIsReportedClearly) {
  ServerOptions options;
  options.binary = "/nonexistent/redis-server";
  try {
    RedisServer server(options);
    FAIL() << "started a server from a missing binary";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("REDMUX_TEST_SERVER"), std::string::npos) << e.what();
  }
}

TEST(HarnessTest, InfoCountsConnections) {
  RedisServer server;
  const long long before = server.info_int("total_connections_received");
  { RawConnection connection(server.port()); }
  // The cli call that reads INFO is itself a connection: at least two more.
  EXPECT_GE(server.info_int("total_connections_received"), before + 2);
  EXPECT_TRUE(wait_until([&] { return server.info_int("connected_clients") == 1; }, 10s));
  EXPECT_THROW(server.info_int("no_such_field"), std::runtime_error);
  EXPECT_THROW(server.info_int("redis_mode"), std::runtime_error);
}

TEST(HarnessTest, LogTailShowsTheServerLog) {
  RedisServer server;
  EXPECT_NE(server.log_tail(50).find("Ready to accept connections"), std::string::npos)
      << server.log_tail(50);
}

TEST(HarnessTest, FreeLoopbackPortAndWaitUntil) {
  const auto port = free_loopback_port();
  EXPECT_GT(port, 0);
  EXPECT_FALSE(loopback_port_accepts(port));
  {
    // Held: refused to a connection and to another bind (a server started there).
    const ClosedPort closed;
    EXPECT_FALSE(loopback_port_accepts(closed.port()));
    const ProcessResult server =
        run_process({"redis-server", "--port", std::to_string(closed.port()), "--bind", "127.0.0.1",
                     "--save", "", "--appendonly", "no"},
                    10s);
    EXPECT_FALSE(server.timed_out) << "a server listened on a held port";
    EXPECT_NE(server.out.find("Address already in use"), std::string::npos) << server.out;
  }

  int calls = 0;
  EXPECT_TRUE(wait_until([&] { return ++calls == 3; }, 5s, 1ms));
  EXPECT_EQ(calls, 3);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(wait_until([] { return false; }, 50ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

}  // namespace
}  // namespace redmux::test
