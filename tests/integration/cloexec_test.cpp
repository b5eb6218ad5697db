// Close-on-exec: a child process the application starts while redmux is connected (system(),
// posix_spawn, fork and exec) must not inherit redmux's sockets, or the server keeps the
// multiplexer's connections open after close() for as long as the child lives. Each test
// spawns a child that sleeps, closes the multiplexer and watches CLIENT LIST on a real
// server: TCP, a Unix socket, TLS, and the FaultProxy of tests/support in between.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/fault_proxy.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using test::RedisServer;
using test::ServerOptions;
using test::wait_until;

/// Every socket this process has open, and whether it is close-on-exec.
std::vector<std::pair<int, bool>> open_sockets() {
  std::vector<std::pair<int, bool>> sockets;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(entry.path(), ec).string();
    if (ec || !target.starts_with("socket:")) continue;
    const int fd = std::stoi(entry.path().filename().string());
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) sockets.emplace_back(fd, (flags & FD_CLOEXEC) != 0);
  }
  return sockets;
}

/// Connects with `config` (which names the client `name`), starts a sleeping child, closes
/// the multiplexer and expects `server` to drop every connection while the child lives.
void expect_closed_despite_child(const RedisServer& server, const std::string& config,
                                 const std::string& name) {
  auto mux = Multiplexer::connect(config + ",name=" + name);
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  // A subscription and a blocking command: their connections too.
  Subscription subscription = mux->subscriber().subscribe("news", [](const Message&) {});
  subscription.confirmed().get();
  EXPECT_FALSE(db.blpop("nothing", 50ms).get().has_value());
  ASSERT_GE(server.clients_named(name), 3) << server.cli({"CLIENT", "LIST"});
  for (const auto& [fd, cloexec] : open_sockets()) {
    EXPECT_TRUE(cloexec) << "socket descriptor " << fd << " is not close-on-exec";
  }

  test::SleepingChild child;
  ASSERT_TRUE(child.alive());
  mux->close();
  EXPECT_TRUE(wait_until([&] { return server.clients_named(name) == 0; }, 10s))
      << "the server still lists the closed multiplexer's connections while a child process "
         "lives:\n"
      << server.cli({"CLIENT", "LIST"});
  EXPECT_TRUE(child.alive());
}

TEST(CloseOnExecTest, TcpConnectionsAreNotInheritedByAChild) {
  RedisServer server;
  expect_closed_despite_child(server, server.address(), "cloexec-tcp");
}

TEST(CloseOnExecTest, UnixSocketConnectionsAreNotInheritedByAChild) {
  const fs::path dir = fs::temp_directory_path() / ("redmux-cloexec-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "redis.sock").string();
  ServerOptions options;
  options.args = {"--unixsocket", path, "--unixsocketperm", "700"};
  RedisServer server(options);
  expect_closed_despite_child(server, path, "cloexec-unix");
  fs::remove_all(dir);
}

TEST(CloseOnExecTest, ConnectionsThroughTheFaultProxyAreNotInheritedByAChild) {
  // The proxy's listener, the sockets it accepts and those it opens to the server.
  RedisServer server;
  test::FaultProxy proxy(server.port());
  expect_closed_despite_child(server, "127.0.0.1:" + std::to_string(proxy.port()), "cloexec-proxy");
}

#if REDMUX_WITH_TLS
TEST(CloseOnExecTest, TlsConnectionsAreNotInheritedByAChild) {
  if (const std::string reason = test::tls_unsupported(); !reason.empty()) GTEST_SKIP() << reason;
  const fs::path dir =
      fs::temp_directory_path() / ("redmux-cloexec-tls-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cert = (dir / "server.crt").string();
  const std::string key = (dir / "server.key").string();
  const test::ProcessResult made = test::run_process(
      {"openssl", "req", "-x509", "-noenc", "-newkey", "ec", "-pkeyopt",
       "ec_paramgen_curve:prime256v1", "-keyout", key, "-out", cert, "-days", "2", "-subj",
       "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"},
      30s);
  ASSERT_TRUE(made.ok()) << made.err;
  ServerOptions options;
  options.tls = true;
  options.tls_files = {cert, key, cert, "", ""};
  options.args = {"--tls-auth-clients", "no"};
  RedisServer server(options);
  expect_closed_despite_child(server, server.address() + ",ssl=true,sslCaFile=" + cert,
                              "cloexec-tls");
  fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace redmux
