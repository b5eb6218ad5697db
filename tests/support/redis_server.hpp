// RedisServer: a real redis-server (or valkey-server) process started by a test, on a free
// loopback port, with its own temporary data directory and no persistence. The object owns
// the process and the directory: its destructor stops the server (SIGTERM, SIGKILL after
// 5 s) and removes the directory (kept when REDMUX_TEST_KEEP_DIRS=1, for post-mortems).
//
//   redmux::test::RedisServer server;                        // ready to answer PING
//   EXPECT_EQ(server.cli({"SET", "k", "v"}), "OK");
//   server.pause();  /* SIGSTOP: connections stall */  server.resume();
//   server.kill();   /* SIGKILL */                       server.restart();  // same port
//
// Binaries: $REDMUX_TEST_SERVER (default `redis-server` on PATH) and $REDMUX_TEST_CLI
// (default: the `-cli` next to a `-server` binary, else `redis-cli`).
//
// Threads: the lifecycle calls (constructor, destructor, pause, resume, kill, restart) belong
// to the thread that owns the object. The const calls (port, address, cli, info_int,
// log_tail) may run from any thread while no lifecycle call is in progress. The server is
// killed (PR_SET_PDEATHSIG) if the thread that started it exits, so start servers from the
// test's own thread, not from a short-lived worker.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "support/process.hpp"

namespace redmux::test {

/// Certificate files for a TLS server. The test that wants TLS generates them (openssl) and
/// fills this in; RedisServer only passes them to redis-server and redis-cli.
struct TlsFiles {
  std::string cert_file;         ///< server certificate (PEM)
  std::string key_file;          ///< its private key
  std::string ca_file;           ///< CA that signed it; clients verify against it
  std::string client_cert_file;  ///< for redis-cli when tls-auth-clients is on; empty: cert_file
  std::string client_key_file;   ///< empty: key_file
};

/// How to start a RedisServer. Every field is optional.
struct ServerOptions {
  /// Extra redis-server arguments, appended after RedisServer's own (so they win), e.g.
  /// {"--requirepass", "secret"} or {"--cluster-enabled", "yes"}. Do not pass --port or
  /// --dir: the harness owns them.
  std::vector<std::string> args;
  /// Written to <data dir>/redis.conf, which is always passed as the config file (so
  /// CONFIG REWRITE works, and Sentinel, which needs a writable file, can run with
  /// args = {"--sentinel"}).
  std::string config_file_contents;
  /// When not empty: written to <data dir>/users.acl and passed as --aclfile.
  std::string acl_file_contents;
  /// Credentials cli() uses (--user, and REDISCLI_AUTH so the password stays out of argv).
  std::string cli_user;
  std::string cli_password;
  /// TLS on: the port is the TLS port (--tls-port, plain --port 0) and cli() speaks TLS.
  bool tls = false;
  TlsFiles tls_files;  ///< REQUIRES when tls: cert_file, key_file, ca_file
  /// Binary to run; empty: $REDMUX_TEST_SERVER or redis-server.
  std::string binary;
  /// How long to wait for the server to answer PING after starting.
  std::chrono::milliseconds ready_timeout{std::chrono::seconds(10)};
};

class RedisServer {
 public:
  /// Starts the server and returns once it answers PING. Throws std::runtime_error with the
  /// tail of the server's log when it does not start or does not answer in time.
  explicit RedisServer(ServerOptions options = {});
  /// Stops the server: SIGCONT (in case it is paused), SIGTERM, SIGKILL after 5 s; removes
  /// the data directory.
  ~RedisServer();

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  std::string host() const { return "127.0.0.1"; }
  /// "127.0.0.1:<port>", as used in a redmux configuration string.
  std::string address() const { return host() + ":" + std::to_string(port_); }
  /// The server's process id; -1 after kill() until restart().
  pid_t pid() const noexcept { return pid_; }
  bool running() const noexcept { return pid_ > 0; }
  bool paused() const noexcept { return paused_; }
  const std::filesystem::path& data_dir() const noexcept { return data_dir_; }
  const ServerOptions& options() const noexcept { return options_; }

  /// SIGSTOP; returns once the process has stopped. Connections stay open, nothing is
  /// answered, the kernel still accepts new connections. No-op if already paused.
  void pause();
  /// SIGCONT; returns once the process runs again. No-op if not paused.
  void resume();
  /// SIGKILL and reap. The port is free afterwards; restart() reuses it.
  void kill();
  /// Starts the server again on the same port and data directory (killing it first if it is
  /// still running) and waits until it answers PING. Data is gone (no persistence), except
  /// files the server keeps in its directory (nodes.conf for Cluster).
  void restart();

  /// Runs `redis-cli -h 127.0.0.1 -p <port> --no-auth-warning -e [auth] [tls] args…` and
  /// returns its stdout without surrounding whitespace. Throws std::runtime_error when
  /// redis-cli fails, including when the server answers with an error reply (-e), or takes
  /// longer than 30 s (e.g. the server is paused).
  std::string cli(std::vector<std::string> args) const;
  /// Like cli() but never throws for a failed command: returns the whole result.
  ProcessResult try_cli(std::vector<std::string> args,
                        std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

  /// A field of `INFO everything` as a number, e.g. info_int("total_connections_received").
  /// Throws std::runtime_error if the field is missing or not an integer.
  long long info_int(std::string_view field) const;
  /// How many times `command` ("get", "subscribe" …) ran: calls= of its INFO commandstats
  /// line; 0 when it never ran.
  long long command_calls(std::string_view command) const;
  /// A field of `INFO everything` as text ("redis_version" → "7.0.15").
  std::string info_field(std::string_view field) const;
  /// Connections with client name `name` in CLIENT LIST (a Sentinel lists its clients too).
  int clients_named(std::string_view name) const;

  /// The last `lines` lines of the server's log (its stdout and stderr).
  std::string log_tail(std::size_t lines = 20) const;

 private:
  void start();
  void spawn();
  void stop() noexcept;
  std::vector<std::string> server_argv() const;
  std::vector<std::string> cli_argv(std::vector<std::string> args) const;

  ServerOptions options_;
  std::string server_binary_;
  std::string cli_binary_;
  std::filesystem::path data_dir_;
  std::filesystem::path log_file_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

/// The product the tests' servers are: "valkey" when $REDMUX_TEST_SERVER names a
/// valkey-server, else "redis" (what ServerIdentity::product says of them).
std::string server_product();

/// Why the tests' server cannot serve TLS ("" when it can): a valkey-server built with
/// BUILD_TLS=no says "Failed finding TLS support" when asked for a TLS port. Asked once.
/// A test that needs TLS skips with this reason.
std::string tls_unsupported();

}  // namespace redmux::test
