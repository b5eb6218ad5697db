// redmux-cli as a subprocess against a real redis-server: the formats (raw when piped,
// human with --no-raw, JSON), exit statuses 0/1/2, the prompt fed through a pipe and typed
// on a pseudo-terminal (Tab completion, history, the history file), -n and SELECT, --scan
// (SCAN, never KEYS), --clients with a named client and a MONITOR, and the latency modes'
// output shapes. Where redis-cli can print the same reply, the two outputs must be
// identical.
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "redmux/redmux.hpp"
#include "support/local_cluster.hpp"
#include "support/ports.hpp"
#include "support/process.hpp"
#include "support/raw_connection.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::ProcessResult;
using test::RedisServer;

#ifdef REDMUX_CLI_PATH
constexpr const char* kCli = REDMUX_CLI_PATH;
#else
constexpr const char* kCli = nullptr;
#endif

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kCli == nullptr) GTEST_SKIP() << "redmux-cli was not built (REDMUX_BUILD_TOOLS=OFF)";
  }

  // redmux-cli -p <port> args… (stdout is a pipe: the raw format unless asked otherwise).
  ProcessResult cli(const RedisServer& server, std::vector<std::string> args) {
    args.insert(args.begin(), {kCli, "-p", std::to_string(server.port())});
    return test::run_process(args, 60s);
  }

  // The prompt with `input` piped to its stdin.
  ProcessResult prompt(const RedisServer& server, const std::string& input,
                       const std::string& extra = "") {
    const std::string script = "printf '%s' \"$REDMUX_TEST_INPUT\" | '" + std::string(kCli) +
                               "' -p " + std::to_string(server.port()) + " " + extra;
    return test::run_process({"/bin/sh", "-c", script}, 60s, {"REDMUX_TEST_INPUT=" + input});
  }
};

// A program on a pseudo-terminal: what a person at a terminal would type and see. The
// child's stdin, stdout and stderr are the terminal; expect() reads what it shows.
class Terminal {
 public:
  Terminal(std::vector<std::string> argv, const std::vector<std::string>& env) {
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ < 0) throw std::runtime_error("forkpty failed");
    if (pid_ == 0) {
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  /// Types `keys` once the program reads keys one by one (the terminal out of canonical
  /// mode): keys typed before that are edited by the terminal itself, and a Ctrl-D there is
  /// an end of file that the program never sees once it switches modes.
  void type(std::string_view keys) {
    const bool raw = test::wait_until(
        [&] {
          termios mode{};
          return tcgetattr(master_, &mode) == 0 && (mode.c_lflag & ICANON) == 0;
        },
        20s);
    if (!raw) throw std::runtime_error("the program never read keys from the terminal");
    while (!keys.empty()) {
      const ssize_t n = ::write(master_, keys.data(), keys.size());
      if (n <= 0) throw std::runtime_error("write to the terminal failed");
      keys.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  /// Waits until `text` appears in what the program shows after the last match; false
  /// after `timeout` or when the program ended first.
  bool expect(const std::string& text, std::chrono::milliseconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const std::size_t at = screen_.find(text, seen_);
      if (at != std::string::npos) {
        seen_ = at + text.size();
        return true;
      }
      if (!read_some(deadline)) return false;
    }
  }

  /// Reads until the program closes the terminal, then its exit status (-1: killed, timeout).
  int wait_exit(std::chrono::milliseconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (read_some(deadline)) {
    }
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(10ms);
    }
    return -1;
  }

  const std::string& screen() const noexcept { return screen_; }

 private:
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{master_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n <= 0) return false;  // EIO: the program closed the terminal
    screen_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  std::string screen_;
  std::size_t seen_ = 0;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(CliTest, RawWhenPipedHumanWithNoRaw) {
  RedisServer server;
  ProcessResult r = cli(server, {"SET", "greeting", "hello world"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\n");
  EXPECT_EQ(cli(server, {"GET", "greeting"}).out, "hello world\n");
  EXPECT_EQ(cli(server, {"--no-raw", "GET", "greeting"}).out, "\"hello world\"\n");
  EXPECT_EQ(cli(server, {"GET", "missing"}).out, "\n");
  EXPECT_EQ(cli(server, {"--no-raw", "GET", "missing"}).out, "(nil)\n");
  EXPECT_EQ(cli(server, {"--no-raw", "INCRBY", "n", "-5"}).out, "(integer) -5\n");
  EXPECT_EQ(cli(server, {"--raw", "INCR", "n"}).out, "-4\n");
}

TEST_F(CliTest, SameOutputAsRedisCli) {
  RedisServer server;
  server.cli({"RPUSH", "list", "a", "b c", "d\"e", "1", "2", "3", "4", "5", "6", "7", "8"});
  server.cli({"HSET", "hash", "field", "value", "n", "1"});
  server.cli({"SADD", "set", "x"});
  const std::vector<std::vector<std::string>> commands = {
      {"LRANGE", "list", "0", "-1"},
      {"HGETALL", "hash"},
      {"-3", "HGETALL", "hash"},
      {"-3", "SMEMBERS", "set"},
      {"-3", "HGETALL", "missing"},
      {"LRANGE", "missing", "0", "-1"},
      {"EVAL", "return {1,{2,{3,'x'}},'y'}", "0"},
      {"EVAL", "return '\\1\\2\\255 \\195\\169'", "0"},
      {"-3", "COMMAND", "DOCS", "get"},
      {"-3", "CONFIG", "GET", "maxmemory*"},
      {"-3", "EVAL", "return {double=1.5}", "0"},
      {"-3", "EVAL", "return true", "0"},
      // Printed raw by redis-cli even in its human format.
      {"INFO", "keyspace"},
      {"-3", "INFO", "keyspace"},
      {"MEMORY", "DOCTOR"},
      {"LATENCY", "DOCTOR"},
  };
  for (const auto& command : commands) {
    for (const char* format : {"--no-raw", "--raw"}) {
      std::vector<std::string> args = command;
      args.insert(args.begin(), format);
      const ProcessResult ours = cli(server, args);
      const ProcessResult theirs = server.try_cli(args);
      EXPECT_EQ(ours.exit_code, 0) << ours.err;
      EXPECT_EQ(ours.out, theirs.out) << format << " " << command.back();
    }
  }
}

TEST_F(CliTest, ErrorReplyExitsOneWithRedisCliText) {
  RedisServer server;
  server.cli({"SET", "s", "text"});
  ProcessResult r = cli(server, {"--no-raw", "LPUSH", "s", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "(error) WRONGTYPE Operation against a key holding the wrong kind of value\n");
  r = cli(server, {"LPUSH", "s", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "WRONGTYPE Operation against a key holding the wrong kind of value\n\n");
  r = cli(server, {"--json", "NOSUCHCOMMAND"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("{\"error\":\"ERR unknown command 'NOSUCHCOMMAND'", 0), 0u) << r.out;
}

TEST_F(CliTest, RefusedCommandsExitOneWithTheReasonOnStderr) {
  RedisServer server;
  // (Blocking commands are no longer refused: they run on a dedicated connection.)
  ProcessResult r = cli(server, {"WATCH", "queue"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("WATCH changes the state"), std::string::npos) << r.err;
  r = cli(server, {"SUBSCRIBE", "news"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("SUBSCRIBE"), std::string::npos) << r.err;
}

TEST_F(CliTest, UsageAndConnectionErrorsExitTwo) {
  RedisServer server;
  ProcessResult r = cli(server, {"--no-such-option", "PING"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option --no-such-option"), std::string::npos) << r.err;
  const test::ClosedPort closed;
  r = test::run_process({kCli, "-p", std::to_string(closed.port()), "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Connection refused"), std::string::npos) << r.err;
  // The library's advice on connecting in the background is for applications.
  EXPECT_EQ(r.err.find("abortConnect"), std::string::npos) << r.err;
  r = test::run_process({kCli, "-u", "localhost:6379,abortconect=false", "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("abortconect"), std::string::npos) << r.err;
  // The library's advice names its options; the CLI's messages name its flags.
  r = cli(server, {"--user", "app", "PING"});
  EXPECT_NE(r.err.find("a user (--user) is given without a password (-a)"), std::string::npos)
      << r.err;
  r = cli(server, {"AUTH", "app", "pw"});
  EXPECT_NE(r.err.find("give --user and -a when starting redmux-cli"), std::string::npos) << r.err;
  r = cli(server, {"HELLO", "3"});
  EXPECT_NE(r.err.find("start redmux-cli with -2 or -3"), std::string::npos) << r.err;
  for (const std::string& text : {r.err, r.out}) {
    EXPECT_EQ(text.find("in the configuration"), std::string::npos) << text;
  }
}

TEST_F(CliTest, AConfigurationWithTheClientCacheKeepsResp3) {
  // The CLI speaks RESP2 unless asked, like redis-cli; clientCache=true needs RESP3's pushes,
  // so such a configuration keeps RESP3 (and -2 with it is refused, saying why).
  RedisServer server;
  ProcessResult r = test::run_process(
      {kCli, "-u", server.address() + ",clientCache=true", "CLIENT", "TRACKINGINFO"}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on"), std::string::npos) << r.out;
  r = test::run_process(
      {kCli, "-2", "-u", server.address() + ",clientCache=true", "CLIENT", "TRACKINGINFO"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-2 cannot go with clientCache=true"), std::string::npos) << r.err;
  // -2/-3 against the protocol= of -u: refused, as -u with -h/-p is.
  r = test::run_process({kCli, "-3", "-u", server.address() + ",protocol=resp2", "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-3 and the protocol= of -u disagree"), std::string::npos) << r.err;
  r = test::run_process({kCli, "-3", "-u", server.address() + ",protocol=resp3", "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Option names are case-insensitive, and a value that holds the text "protocol=" names no
  // protocol.
  r = test::run_process({kCli, "-u", server.address() + ",Protocol=resp3", "CLIENT", "INFO"}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" resp=3"), std::string::npos) << r.out;
  r = test::run_process(
      {kCli, "-3", "-u", "redis://" + server.address() + "?PROTOCOL=resp2", "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  r = test::run_process({kCli, "-2", "-u", server.address() + ",name=protocol=x", "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = test::run_process({kCli, "-u", server.address() + ",name=protocol=x", "CLIENT", "INFO"}, 60s);
  EXPECT_NE(r.out.find(" resp=2"), std::string::npos) << r.out;  // the CLI's RESP2
}

TEST_F(CliTest, AFlagAndTheConfigurationOfDashUThatDisagreeAreRefused) {
  // As with -u and -h/-p: given two answers for one setting, the CLI picks neither.
  RedisServer server;
  const std::string url = "redis://" + server.address() + "/2";
  ProcessResult r = test::run_process({kCli, "-u", url, "-n", "5", "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-n and the database of -u disagree"), std::string::npos) << r.err;
  r = test::run_process({kCli, "-u", server.address() + ",db=2", "-n", "5", "PING"}, 60s);
  EXPECT_NE(r.err.find("-n and the database of -u disagree"), std::string::npos) << r.err;
  r = test::run_process({kCli, "-u", url, "-n", "2", "CLIENT", "INFO"}, 60s);  // they agree
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" db=2 "), std::string::npos) << r.out;
  r = test::run_process(
      {kCli, "-u", "redis://:first-secret@" + server.address(), "-a", "other-secret", "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-a and the password of -u disagree"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("secret"), std::string::npos) << "a password leaked: " << r.err;
  r = test::run_process(
      {kCli, "-u", server.address() + ",user=alice,password=pw", "--user", "bob", "PING"}, 60s);
  EXPECT_NE(r.err.find("--user and the user of -u disagree"), std::string::npos) << r.err;
  r = test::run_process({kCli, "-u", "rediss://" + server.address() + "?sslCaFile=/a.pem",
                         "--cacert", "/b.pem", "PING"},
                        60s);
  EXPECT_NE(r.err.find("--cacert and the sslCaFile= of -u disagree"), std::string::npos) << r.err;
  // One file named two ways agrees: the CLI goes on (and the TLS handshake with this plain
  // server fails instead).
  const std::string dir = ::testing::TempDir() + "cli-cacert-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/ca.pem") << "not a certificate\n";
  r = test::run_process(
      {kCli, "-u", "rediss://" + server.address() + "?sslCaFile=" + dir + "/ca.pem", "--cacert",
       dir + "/./ca.pem", "PING"},
      60s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.find("disagree"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST_F(CliTest, PasswordFromFlagOrEnvironment) {
  test::ServerOptions options;
  options.args = {"--requirepass", "s3cret"};
  options.cli_password = "s3cret";
  RedisServer server(options);
  EXPECT_EQ(cli(server, {"-a", "s3cret", "PING"}).out, "PONG\n");
  const ProcessResult r = test::run_process({kCli, "-p", std::to_string(server.port()), "PING"},
                                            60s, {"REDISCLI_AUTH=s3cret"});
  EXPECT_EQ(r.out, "PONG\n") << r.err;
  const ProcessResult wrong = cli(server, {"-a", "hunter2-xyzzy", "PING"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_EQ(wrong.err.find("hunter2-xyzzy"), std::string::npos)
      << "the password leaked: " << wrong.err;
}

// -u may name the user alone: the password then comes from -a, else REDISCLI_AUTH, as
// cli.md says (the library on its own refuses a user without a password). An authentication
// failure's advice names where the credentials came from, and never shows the password.
TEST_F(CliTest, AUserInDashUTakesItsPasswordFromDashAOrTheEnvironment) {
  test::ServerOptions options;
  options.args = {"--user", "alice", "on", ">alice-pw", "~*", "+@all"};
  RedisServer server(options);
  const std::string url = "redis://alice@" + server.address();
  ProcessResult r = test::run_process({kCli, "-u", url, "-a", "alice-pw", "ACL", "WHOAMI"}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "alice\n");
  const std::vector<std::string> auth = {"REDISCLI_AUTH=alice-pw"};
  for (const std::string& uri :
       {url, server.address() + ",user=alice", "redis://alice:@" + server.address()}) {
    r = test::run_process({kCli, "-u", uri, "ACL", "WHOAMI"}, 60s, auth);
    EXPECT_EQ(r.exit_code, 0) << uri << ": " << r.err;
    EXPECT_EQ(r.out, "alice\n") << uri;
  }
  // No password anywhere: refused, saying where one goes.
  r = test::run_process({kCli, "-u", url, "PING"}, 60s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the user of -u is given without a password: give it in -u, with -a, or "
                       "in REDISCLI_AUTH"),
            std::string::npos)
      << r.err;
  // A wrong password: the advice names the flags and -u parts that gave the credentials.
  const std::vector<std::string> wrong_auth = {"REDISCLI_AUTH=wrong-pw-xyzzy"};
  const std::pair<std::vector<std::string>, std::string> failures[] = {
      {{kCli, "-u", url, "-a", "wrong-pw-xyzzy", "PING"}, "(check the user in -u and -a)"},
      {{kCli, "-u", url, "PING"}, "(check the user in -u and REDISCLI_AUTH)"},
      {{kCli, "-u", "redis://alice:wrong-pw-xyzzy@" + server.address(), "PING"},
       "(check the user and password in -u)"},
      {{kCli, "-p", std::to_string(server.port()), "--user", "alice", "PING"},
       "(check --user and REDISCLI_AUTH)"},
      {{kCli, "-p", std::to_string(server.port()), "--user", "alice", "-a", "wrong-pw-xyzzy",
        "PING"},
       "(check --user and -a)"},
  };
  for (const auto& [argv, advice] : failures) {
    r = test::run_process(argv, 60s, wrong_auth);
    EXPECT_EQ(r.exit_code, 2) << advice;
    EXPECT_NE(r.err.find("WRONGPASS"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(advice), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("user="), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("xyzzy"), std::string::npos) << "the password leaked: " << r.err;
  }
}

// The library's advice names its options (defaultDatabase=, sslCaFile= …); the CLI's names
// the flag that set them.
TEST_F(CliTest, AdviceNamesTheFlagsThatWereGiven) {
  RedisServer server;
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{kCli, "-p", std::to_string(server.port()), "-n", "16", "PING"},
       "ERR DB index is out of range (check -n)"},
      {{kCli, "-u", "redis://" + server.address() + "/16", "PING"}, "(check the database of -u)"},
      {{kCli, "--tls", "--cacert", "/nonexistent/ca.crt", "PING"},
       "--cacert /nonexistent/ca.crt: cannot read it"},
      {{kCli, "--tls", "--cert", "/nonexistent/client.crt", "PING"}, "--cert needs --key too"},
      {{kCli, "--tls", "--key", "/nonexistent/client.key", "PING"}, "--key needs --cert too"},
  };
  for (const auto& [argv, advice] : cases) {
    const ProcessResult r = test::run_process(argv, 60s);
    EXPECT_EQ(r.exit_code, 2) << advice;
    EXPECT_NE(r.err.find(advice), std::string::npos) << r.err;
    for (const char* option : {"defaultDatabase", "sslCaFile", "sslCert", "sslKey"}) {
      EXPECT_EQ(r.err.find(option), std::string::npos) << r.err;
    }
  }
}

// A server that shuts down closes the connection instead of replying: like redis-cli, the
// CLI takes that as SHUTDOWN's success (nothing printed, status 0), one-shot and at the
// prompt.
TEST_F(CliTest, ShutdownSucceedsSilentlyWhenTheServerCloses) {
  RedisServer server;
  ProcessResult r = cli(server, {"SHUTDOWN", "NOSAVE"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(test::wait_until([&] { return server.try_cli({"PING"}, 5s).exit_code != 0; }, 20s));
  server.restart();
  r = prompt(server, "shutdown nosave\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(test::wait_until([&] { return server.try_cli({"PING"}, 5s).exit_code != 0; }, 20s));
}

TEST_F(CliTest, JsonOutput) {
  RedisServer server;
  server.cli({"HSET", "h", "f", "v"});
  server.cli({"RPUSH", "l", "a", "b"});
  EXPECT_EQ(cli(server, {"-3", "--json", "HGETALL", "h"}).out, "{\"f\":\"v\"}\n");
  EXPECT_EQ(cli(server, {"--json", "LRANGE", "l", "0", "-1"}).out, "[\"a\",\"b\"]\n");
  EXPECT_EQ(cli(server, {"--json", "GET", "missing"}).out, "null\n");
  EXPECT_EQ(cli(server, {"--json", "LLEN", "l"}).out, "2\n");
  EXPECT_EQ(cli(server, {"-3", "--json", "EVAL", "return {double=0.25}", "0"}).out, "0.25\n");
}

// Bytes that are not well-formed UTF-8 (Unicode 15, table 3-7) — a UTF-16 surrogate, overlong
// forms, a code point above U+10FFFF — are written one by one as U+00XX, in keys, values
// and --scan's list, as cli.md says; the JSON writer never sees them (it throws on them).
TEST_F(CliTest, JsonWritesIllFormedUtf8ByteByByte) {
  RedisServer server;
  const std::pair<std::string, std::string> cases[] = {
      {"\xed\xa0\x80", "\xc3\xad\xc2\xa0\xc2\x80"},
      {"\xe0\x80\xab", "\xc3\xa0\xc2\x80\xc2\xab"},
      {"\xf0\x80\x80\x80", "\xc3\xb0\xc2\x80\xc2\x80\xc2\x80"},
      {"\xf4\x90\x80\x80", "\xc3\xb4\xc2\x90\xc2\x80\xc2\x80"},
  };
  std::set<std::string> keys;
  for (const auto& [bytes, text] : cases) {
    server.cli({"SET", "k" + bytes, "v" + bytes});
    server.cli({"HSET", "h", "f" + bytes, "v" + bytes});
    keys.insert("\"k" + text + "\"");
    ProcessResult r = cli(server, {"--json", "GET", "k" + bytes});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "\"v" + text + "\"\n");
    r = cli(server, {"-3", "--json", "HGET", "h", "f" + bytes});
    EXPECT_EQ(r.out, "\"v" + text + "\"\n") << r.err;
  }
  keys.insert("\"h\"");
  ProcessResult r = cli(server, {"-3", "--json", "HGETALL", "h"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"f\xc3\xad\xc2\xa0\xc2\x80\":\"v\xc3\xad\xc2\xa0\xc2\x80\""),
            std::string::npos)
      << r.out;
  r = cli(server, {"--scan", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.size() > 2 && r.out.front() == '[' && r.out.substr(r.out.size() - 2) == "]\n",
            true)
      << r.out;
  std::set<std::string> listed;
  const std::string inner = r.out.substr(1, r.out.size() - 3);
  for (std::size_t start = 0; start <= inner.size();) {
    const std::size_t comma = std::min(inner.find(',', start), inner.size());
    listed.insert(inner.substr(start, comma - start));
    start = comma + 1;
  }
  EXPECT_EQ(listed, keys) << r.out;
}

TEST_F(CliTest, SelectInAClusterGetsRedisCliAnswer) {
  test::LocalCluster cluster;
  // What redis-cli 7.0 prints (the server's own refusal), not a refusal of a PING the user
  // never sent.
  ProcessResult ours = cli(cluster.node(0), {"--no-raw", "SELECT", "1"});
  EXPECT_EQ(ours.out, "(error) ERR SELECT is not allowed in cluster mode\n") << ours.err;
  // The server's own answers for the other indexes: 0 is allowed, a bad one is not a number.
  for (const char* index : {"0", "-1", "0x5", "00", "2147483648"}) {
    ours = cli(cluster.node(0), {"--no-raw", "SELECT", index});
    const ProcessResult theirs = cluster.node(0).try_cli({"--no-raw", "SELECT", index});
    // (The harness's redis-cli runs with -e: an error reply goes to its stderr, unprefixed.)
    EXPECT_EQ(ours.out, theirs.exit_code == 0 ? theirs.out : "(error) " + theirs.err) << index;
  }
  EXPECT_EQ(cli(cluster.node(0), {"--no-raw", "SELECT", "0"}).out, "OK\n");
  // --stat reads one node's INFO on every line (the one named), not whichever node INFO
  // reaches, so that each line's requests follow on from the last.
  RedisServer& named = cluster.node(1);
  ProcessResult stat = cli(named, {"--stat", "-i", "0.2", "--samples", "3"});
  EXPECT_EQ(stat.exit_code, 0) << stat.err;
  EXPECT_NE(stat.err.find("the server columns are node " + named.address() + "'s"),
            std::string::npos)
      << stat.err;
  const auto lines = lines_of(stat.out);
  ASSERT_EQ(lines.size(), 5u) << stat.out;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    EXPECT_FALSE(std::regex_search(lines[i], std::regex(" -[0-9]"))) << lines[i];
  }
  // --clients lists the named node's clients too, and says which node that is: a client
  // connected to that node alone is there, whichever node CLIENT LIST would reach otherwise.
  test::RawConnection only_there(named.port());
  only_there.send("*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$13\r\nonly-on-named\r\n");
  ASSERT_NE(only_there.read_until("+OK", 5s).find("+OK"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    ProcessResult clients = cli(named, {"--clients"});
    EXPECT_EQ(clients.exit_code, 0) << clients.err;
    EXPECT_NE(clients.err.find("the clients listed are node " + named.address() + "'s"),
              std::string::npos)
        << clients.err;
    EXPECT_NE(clients.out.find("only-on-named"), std::string::npos) << clients.out;
  }
}

TEST_F(CliTest, DatabaseFlagAndSelectAtThePrompt) {
  RedisServer server;
  EXPECT_EQ(cli(server, {"-n", "3", "SET", "k", "in-three"}).out, "OK\n");
  EXPECT_EQ(server.cli({"-n", "3", "GET", "k"}), "in-three");
  EXPECT_EQ(server.cli({"GET", "k"}), "");

  const ProcessResult r = prompt(server,
                                 "SET a zero\n"
                                 "SELECT 2\n"
                                 "SET b \"two words\"\n"
                                 "GET a\n"
                                 "SELECT 99\n"
                                 "GET b\n"
                                 "SET 'unbalanced\n"
                                 "quit\n"
                                 "GET never\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(r.out),
            (std::vector<std::string>{"OK", "OK", "OK", "", "ERR DB index is out of range", "",
                                      "two words", "Invalid argument(s)"}))
      << r.out;
  EXPECT_EQ(server.cli({"-n", "2", "GET", "b"}), "two words");
  EXPECT_EQ(server.cli({"GET", "a"}), "zero");
}

// SELECT's index is read as the server reads it (string2ll: no hex, no trailing text, no
// leading zeros, no '+'), answered in the server's words, and a refused SELECT never
// switches: the writes after each one land in database 0. redis-cli prints the same.
TEST_F(CliTest, SelectReadsItsIndexAsTheServerDoesAndStaysOnARefusal) {
  RedisServer server;
  const std::string input =
      "select 0x5\nset k-0x5 v\n"
      "select 3abc\nset k-3abc v\n"
      "select 07\nset k-07 v\n"
      "select 015\nset k-015 v\n"
      "select -1\nselect +1\nselect -0\nselect ' 1'\nselect 2147483648\nselect 1 2\n"
      "set k-last v\nselect 0\nget k-0x5\n";
  const ProcessResult ours = prompt(server, input);
  EXPECT_EQ(ours.exit_code, 0) << ours.err;
  const ProcessResult theirs = test::run_process(
      {"/bin/sh", "-c",
       "printf '%s' \"$REDMUX_TEST_INPUT\" | redis-cli -p " + std::to_string(server.port())},
      60s, {"REDMUX_TEST_INPUT=" + input});
  EXPECT_EQ(ours.out, theirs.out);
  const std::string refused = "ERR value is not an integer or out of range";
  // Each of the four refused SELECTs, then the SET that follows it (in db 0).
  std::vector<std::string> expected;
  for (int i = 0; i < 4; ++i) expected.insert(expected.end(), {refused, "", "OK"});
  expected.insert(expected.end(),
                  {"ERR DB index is out of range", "", refused, "", refused, "", refused, "",
                   "ERR value is out of range, value must between -2147483648 and 2147483647", "",
                   "ERR wrong number of arguments for 'select' command", "", "OK", "OK", "v"});
  EXPECT_EQ(lines_of(ours.out), expected) << ours.out;
  for (const char* db : {"1", "3", "5", "7", "13", "15"}) {
    EXPECT_EQ(server.cli({"-n", db, "DBSIZE"}), "0") << "db " << db;
  }
  EXPECT_EQ(server.cli({"DBSIZE"}), "5");
  // One command: the same answers, exit status 1, and nothing written elsewhere.
  for (const char* bad : {"0x5", "3abc", "07", "015"}) {
    const ProcessResult r = cli(server, {"--no-raw", "SELECT", bad});
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(r.out, "(error) " + refused + "\n") << bad;
  }
  const ProcessResult negative = cli(server, {"--no-raw", "SELECT", "-1"});
  EXPECT_EQ(negative.out, "(error) ERR DB index is out of range\n");
  EXPECT_EQ(cli(server, {"--no-raw", "SELECT", "5"}).out, "OK\n");
}

// A user whose ACL forbids SELECT gets the server's NOPERM for SELECT 1, as from redis-cli,
// and the connection goes on in database 0 undisturbed (no reset, nothing on stderr).
TEST_F(CliTest, ASelectTheUsersAclForbidsIsRefusedInTheServersWords) {
  test::ServerOptions options;
  options.acl_file_contents =
      "user default on nopass ~* &* +@all\n"
      "user app on >pw ~* &* +@all -select\n";
  RedisServer server(options);
  const std::string input = "SELECT 1\nSET k v\nPING\n";
  const std::string auth = "--user app --pass pw --no-auth-warning";
  const ProcessResult ours = prompt(server, input, auth);
  EXPECT_EQ(ours.exit_code, 0) << ours.err;
  EXPECT_EQ(ours.err, "");
  const ProcessResult theirs =
      test::run_process({"/bin/sh", "-c",
                         "printf '%s' \"$REDMUX_TEST_INPUT\" | redis-cli -p " +
                             std::to_string(server.port()) + " " + auth},
                        60s, {"REDMUX_TEST_INPUT=" + input});
  EXPECT_EQ(ours.out, theirs.out);
  EXPECT_EQ(
      lines_of(ours.out),
      (std::vector<std::string>{"NOPERM this user has no permissions to run the 'select' command",
                                "", "OK", "PONG"}))
      << ours.out;
  EXPECT_EQ(server.cli({"EXISTS", "k"}), "1");  // database 0
}

// A slow command (DEBUG SLEEP, SAVE, a long script) gets its reply however long the server
// takes, as in redis-cli, not a timeout after the library's 5 s asyncTimeout; --timeout
// bounds the wait, and its message names --timeout, not the library's C++ API.
TEST_F(CliTest, ASlowCommandWaitsAsLongAsTheServerTakes) {
  test::ServerOptions options;
  options.args = {"--enable-debug-command", "yes"};
  RedisServer server(options);
  const auto started = std::chrono::steady_clock::now();
  ProcessResult r = cli(server, {"DEBUG", "SLEEP", "6.5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\n");
  EXPECT_EQ(r.err, "");  // piped: no note about the wait
  EXPECT_GE(std::chrono::steady_clock::now() - started, 6s);
  r = cli(server, {"--timeout", "0.5", "DEBUG", "SLEEP", "2"});
  EXPECT_EQ(r.exit_code, 2);
  // The time waited is the timer's, which a loaded host fires a few ms late.
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(Timeout awaiting reply to DEBUG after 5\d\d ms \(--timeout 500 ms\))")))
      << r.err;
  EXPECT_NE(r.err.find("raise --timeout, or give --timeout 0 to wait for as long as it takes"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("CallOptions"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("callbacks"), std::string::npos) << r.err;
  EXPECT_EQ(cli(server, {"--timeout", "-1", "PING"}).exit_code, 2);
}

// A frozen server (SIGSTOP) looks like a busy one: the prompt waits, and after 5 s tells the
// person at the terminal why nothing happens and how to stop or bound the wait; the reply
// comes when the server resumes. With --timeout the wait ends there, in a message that
// names it.
TEST_F(CliTest, AFrozenServerAtThePromptIsExplainedAndBoundedByTimeout) {
  RedisServer server;
  server.cli({"SET", "k", "v"});
  const std::vector<std::string> env = {"REDMUX_HISTFILE=", "TERM=xterm"};
  {
    Terminal terminal({kCli, "-p", std::to_string(server.port())}, env);
    terminal.type("PING\r");
    ASSERT_TRUE(terminal.expect("PONG")) << terminal.screen();
    // A blocking command's wait was asked for: no note.
    terminal.type("BLPOP q 6\r");
    ASSERT_TRUE(terminal.expect("(nil)", 15s)) << terminal.screen();
    EXPECT_EQ(terminal.screen().find("still waiting"), std::string::npos) << terminal.screen();
    server.pause();
    terminal.type("GET k\r");
    EXPECT_TRUE(terminal.expect("still waiting for the reply to GET after 5 s", 15s))
        << terminal.screen();
    EXPECT_TRUE(terminal.expect("--timeout SECONDS bounds the wait")) << terminal.screen();
    server.resume();
    EXPECT_TRUE(terminal.expect("\"v\"")) << terminal.screen();
    terminal.type("quit\r");
    EXPECT_EQ(terminal.wait_exit(), 0) << terminal.screen();
  }
  {
    Terminal terminal({kCli, "-p", std::to_string(server.port()), "--timeout", "1"}, env);
    terminal.type("PING\r");
    ASSERT_TRUE(terminal.expect("PONG")) << terminal.screen();
    server.pause();
    terminal.type("GET k\r");
    EXPECT_TRUE(terminal.expect("Timeout awaiting reply to GET after 10", 10s))
        << terminal.screen();
    EXPECT_TRUE(terminal.expect(" ms (--timeout 1000 ms)", 10s)) << terminal.screen();
    server.resume();
    terminal.type("quit\r");
    EXPECT_EQ(terminal.wait_exit(), 0) << terminal.screen();
  }
}

TEST_F(CliTest, PromptUnderstandsRedisCliQuoting) {
  RedisServer server;
  const ProcessResult r = prompt(server, "SET \"a b\" '\\x41'\nSET x \"\\x41\\x42\"\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(server.cli({"GET", "a b"}), "\\x41");
  EXPECT_EQ(server.cli({"GET", "x"}), "AB");
}

// The prompt as a person uses it, on a terminal: Tab completes command names from the
// server's command table (a subcommand too), ↑ recalls the last line, Ctrl-D ends, and the
// history file carries the lines into the next session.
TEST_F(CliTest, PromptOnATerminalCompletesAndKeepsHistory) {
  RedisServer server;
  const auto history =
      std::filesystem::temp_directory_path() / ("redmux-cli-history-" + std::to_string(getpid()));
  std::filesystem::remove(history);
  const std::vector<std::string> env = {"REDMUX_HISTFILE=" + history.string(), "TERM=xterm"};
  const std::vector<std::string> argv = {kCli, "-p", std::to_string(server.port())};
  const std::string prompt = "127.0.0.1:" + std::to_string(server.port()) + "> ";
  {
    Terminal terminal(argv, env);
    ASSERT_TRUE(terminal.expect(prompt)) << terminal.screen();
    terminal.type("ECH\t hello\r");  // Tab: "ECH" has one completion, ECHO
    EXPECT_TRUE(terminal.expect("\"hello\"")) << terminal.screen();
    ASSERT_TRUE(terminal.expect(prompt)) << terminal.screen();
    terminal.type("client getn\t\r");  // the subcommand word: CLIENT GETNAME
    EXPECT_TRUE(terminal.expect("\"redmux-cli\"")) << terminal.screen();
    ASSERT_TRUE(terminal.expect(prompt)) << terminal.screen();
    terminal.type("\x1b[A\r");  // ↑, Enter: CLIENT GETNAME again
    EXPECT_TRUE(terminal.expect("\"redmux-cli\"")) << terminal.screen();
    ASSERT_TRUE(terminal.expect(prompt)) << terminal.screen();
    terminal.type("\x04");  // Ctrl-D on an empty line
    EXPECT_EQ(terminal.wait_exit(), 0) << terminal.screen();
  }
  const std::string stats = server.cli({"INFO", "commandstats"});
  EXPECT_NE(stats.find("cmdstat_echo:calls=1,"), std::string::npos) << stats;
  EXPECT_NE(stats.find("cmdstat_client|getname:calls=2,"), std::string::npos) << stats;
  ASSERT_TRUE(std::filesystem::exists(history));
  {
    // A new session: ↑ shows the last line, ↑ again the one before, ECHO hello.
    Terminal terminal(argv, env);
    ASSERT_TRUE(terminal.expect(prompt)) << terminal.screen();
    terminal.type("\x1b[A");
    ASSERT_TRUE(terminal.expect("GETNAME")) << terminal.screen();
    terminal.type("\x1b[A");
    ASSERT_TRUE(terminal.expect("hello")) << terminal.screen();
    terminal.type("\r");
    EXPECT_TRUE(terminal.expect("\"hello\"")) << terminal.screen();
    ASSERT_TRUE(terminal.expect(prompt)) << terminal.screen();
    terminal.type("quit\r");
    EXPECT_EQ(terminal.wait_exit(), 0) << terminal.screen();
  }
  EXPECT_NE(server.cli({"INFO", "commandstats"}).find("cmdstat_echo:calls=2,"), std::string::npos);
  std::filesystem::remove(history);
}

TEST_F(CliTest, PipedPromptWritesNoHistory) {
  RedisServer server;
  const auto history = std::filesystem::temp_directory_path() /
                       ("redmux-cli-piped-history-" + std::to_string(getpid()));
  std::filesystem::remove(history);
  const std::string script = "printf 'SET a 1\\nGET a\\n' | REDMUX_HISTFILE='" + history.string() +
                             "' '" + std::string(kCli) + "' -p " + std::to_string(server.port());
  const ProcessResult r = test::run_process({"/bin/sh", "-c", script}, 60s);
  EXPECT_EQ(r.out, "OK\n1\n") << r.err;
  EXPECT_FALSE(std::filesystem::exists(history));
}

TEST_F(CliTest, ScanListsKeysWithScanNeverKeys) {
  RedisServer server;
  std::set<std::string> expected;
  for (int i = 0; i < 120; ++i) {
    const std::string key = "user:" + std::to_string(i);
    server.cli({"SET", key, "x"});
    expected.insert(key);
  }
  for (int i = 0; i < 30; ++i) server.cli({"SET", "order:" + std::to_string(i), "x"});
  server.cli({"CONFIG", "RESETSTAT"});
  const ProcessResult r = cli(server, {"--scan", "--pattern", "user:*", "--count", "10"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()), expected);
  const std::string stats = server.cli({"INFO", "commandstats"});
  EXPECT_NE(stats.find("cmdstat_scan:calls="), std::string::npos) << stats;
  EXPECT_EQ(stats.find("cmdstat_keys"), std::string::npos) << stats;
}

TEST_F(CliTest, ClientsGroupsByNameAndWarnsAboutMonitor) {
  RedisServer server;
  auto api = Multiplexer::connect(server.address() + ",name=bookstore-api");
  auto other = Multiplexer::connect(server.address() + ",name=bookstore-api");
  ASSERT_EQ(api->database().ping().get(), "PONG");
  ASSERT_EQ(other->database().ping().get(), "PONG");
  ProcessResult r = cli(server, {"--clients"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\nbookstore-api +2 +N ")));
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\nredmux-cli +1 ")));
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;

  // A MONITOR that nobody reads: flagged, with the way to end it.
  test::RawConnection monitor(server.port());
  monitor.send("*1\r\n$7\r\nMONITOR\r\n");
  ASSERT_NE(monitor.read_until("+OK", 5s).find("+OK"), std::string::npos);
  r = cli(server, {"--clients"});
  EXPECT_NE(r.out.find("warning: client id="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MONITOR"), std::string::npos) << r.out;

  r = cli(server, {"--clients", "--json"});
  EXPECT_NE(r.out.find("{\"name\":\"bookstore-api\",\"clients\":2,"), std::string::npos) << r.out;
  // The JSON holds the groups; the MONITOR's warning goes to stderr, not nowhere.
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warning: client id="), std::string::npos) << r.err;
}

TEST_F(CliTest, LatencyModesPrintRedisCliShapes) {
  RedisServer server;
  const std::string number = "[0-9]+\\.[0-9]{3}";
  ProcessResult r = cli(server, {"--latency", "--samples", "20"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex("min: " + number + ", max: " + number +
                                                 ", avg: " + number + " \\(20 samples\\)\n")))
      << r.out;

  r = cli(server, {"--latency-percentiles", "50,99,99.9", "--samples", "30"});
  EXPECT_TRUE(std::regex_match(r.out, std::regex("min: .* \\(30 samples\\), p50: " + number +
                                                 ", p99: " + number + ", p99.9: " + number + "\n")))
      << r.out;

  r = cli(server, {"--latency-history", "-i", "0.2", "--duration", "0.7"});
  const auto lines = lines_of(r.out);
  EXPECT_GE(lines.size(), 3u) << r.out;
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(
        line, std::regex("min: .* \\([0-9]+ samples\\) -- [0-9]\\.[0-9]{2} seconds range")))
        << line;
  }

  r = cli(server, {"--latency", "--samples", "5", "--json"});
  EXPECT_EQ(r.out.rfind("{\"min\":", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\"samples\":5}"), std::string::npos) << r.out;
}

TEST_F(CliTest, StatPrintsALinePerIntervalFromTheServerAndTheMultiplexer) {
  RedisServer server;
  server.cli({"SET", "a", "1"});
  server.cli({"SET", "b", "2"});
  ProcessResult r = cli(server, {"--stat", "-i", "0.3", "--samples", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // two header lines, then one per interval
  EXPECT_EQ(lines[1].rfind("keys ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("p99"), std::string::npos) << lines[1];
  for (std::size_t i = 2; i < lines.size(); ++i) {
    EXPECT_TRUE(std::regex_match(lines[i], std::regex("2 +[0-9.]+[KMG]?B? +[0-9]+ +[0-9]+ "
                                                      "\\(\\+[0-9]+\\) +[0-9]+ +[0-9.]+ms +"
                                                      "[0-9.]+ms +[0-9]+ +[0-9]+\\.[0-9]{2}")))
        << lines[i];
  }
  // JSON: the server's requests in an interval are this client's commands in it (its PINGs
  // and INFO; the one just answered may not be in its histogram yet): each checks the other.
  r = cli(server, {"--stat", "-i", "0.3", "--samples", "2", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto rows = lines_of(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  for (const std::string& row : rows) {
    // A number field of the row's JSON object ({"keys":2,…}), NaN when absent.
    auto field = [&](const std::string& name) {
      std::smatch match;
      if (!std::regex_search(row, match, std::regex("\"" + name + "\":([-0-9.e+]+)"))) {
        return std::nan("");
      }
      return std::stod(match[1].str());
    };
    EXPECT_EQ(field("keys"), 2) << row;
    const double commands = field("commands");
    EXPECT_GT(commands, 5) << row;  // a PING every 10 ms for 0.3 s
    EXPECT_NEAR(commands, field("new_requests"), 1.0) << row;
    EXPECT_GT(field("p50_ms"), 0.0) << row;
    EXPECT_LE(field("p50_ms"), field("p99_ms")) << row;
    EXPECT_GE(field("commands_per_write"), 1.0) << row;
  }
  r = cli(server, {"--stat", "PING"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(CliTest, StatMarksTheIntervalOfAServerRestartInsteadOfANegativeRate) {
  RedisServer server;
  for (int i = 0; i < 50; ++i) server.cli({"INCR", "n"});  // the server has counted requests
  ProcessResult r;
  std::thread stat([&] { r = cli(server, {"--stat", "-i", "0.5", "--samples", "4"}); });
  // Once it is in its first interval (its first INFO answered, its PINGs under way).
  ASSERT_TRUE(test::wait_until([&] { return server.command_calls("ping") >= 3; }));
  server.kill();  // its request count starts over
  server.restart();
  stat.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;
  bool marked = false;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    EXPECT_FALSE(std::regex_search(lines[i], std::regex(" -[0-9]"))) << "negative: " << lines[i];
    if (lines[i].ends_with("(reconnected)")) marked = true;
  }
  EXPECT_TRUE(marked) << r.out;
}

}  // namespace
}  // namespace redmux

namespace redmux {
namespace {

// scripts/lab's standalone topology, reached with redmux-cli through the configuration
// string the lab prints; stop ends exactly the server it started.
TEST(LabTest, StandaloneStartsOnLoopbackAndStopsWhatItStarted) {
  if (kCli == nullptr) GTEST_SKIP() << "redmux-cli was not built";
  const std::filesystem::path lab = std::filesystem::path(REDMUX_SOURCE_DIR) / "scripts" / "lab";
  const auto dir =
      std::filesystem::temp_directory_path() / ("redmux-lab-test-" + std::to_string(::getpid()));
  const std::uint16_t port = test::free_loopback_port();
  const std::vector<std::string> env = {
      "REDMUX_LAB_DIR=" + dir.string(), "REDMUX_LAB_PORT=" + std::to_string(port),
      "REDMUX_SKIP_DEPS=1", "VALKEY_SERVER=/nonexistent/valkey-server"};
  ProcessResult r = test::run_process({lab.string(), "start"}, 60s, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string configuration = "127.0.0.1:" + std::to_string(port) + ",name=lab";
  EXPECT_NE(r.out.find("redmux configuration: " + configuration), std::string::npos) << r.out;
  // No Valkey to start beside it: said plainly, with the reason.
  EXPECT_NE(r.out.find("lab: skipped Valkey: VALKEY_SERVER=/nonexistent/valkey-server is not "
                       "an executable"),
            std::string::npos)
      << r.out;

  r = test::run_process({kCli, "-u", configuration, "CONFIG", "GET", "bind"}, 60s);
  EXPECT_EQ(r.out, "bind\n127.0.0.1\n") << r.err;
  r = test::run_process({kCli, "-u", configuration, "CONFIG", "GET", "protected-mode"}, 60s);
  EXPECT_EQ(r.out, "protected-mode\nyes\n") << r.err;
  r = test::run_process({lab.string(), "status"}, 60s, env);
  EXPECT_NE(r.out.find("running"), std::string::npos) << r.out;

  r = test::run_process({lab.string(), "start", "bogus"}, 60s, env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage:"), std::string::npos) << r.err;

  r = test::run_process({lab.string(), "stop"}, 60s, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test::wait_until([&] { return !test::loopback_port_accepts(port); }, 10s));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace redmux
