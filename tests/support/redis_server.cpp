#include "support/redis_server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "support/ports.hpp"

extern char** environ;

namespace redmux::test {
namespace {

using namespace std::chrono_literals;

std::string env_or(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : std::move(fallback);
}

std::filesystem::path make_temp_dir() {
  std::string pattern = env_or("TMPDIR", "/tmp") + "/redmux-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp(" + pattern + ")");
  }
  return pattern;
}

void write_file(const std::filesystem::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file_from(const std::filesystem::path& path, std::uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::uintmax_t file_size_or_zero(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

// The -cli that ships next to a -server binary (valkey-server → valkey-cli), else redis-cli.
std::string default_cli_for(const std::string& server_binary) {
  constexpr std::string_view kSuffix = "-server";
  if (server_binary.size() > kSuffix.size() && server_binary.ends_with(kSuffix)) {
    std::string sibling = server_binary.substr(0, server_binary.size() - kSuffix.size()) + "-cli";
    if (!find_executable(sibling).empty()) return sibling;
  }
  return "redis-cli";
}

// Waits for `pid` to exit for up to `timeout`; true if it was reaped.
bool reap_within(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno == ECHILD)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
}

// "field:value" lines of INFO output → value of `field`.
std::string find_info_field(const std::string& info, std::string_view field) {
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      return line.substr(field.size() + 1);
    }
  }
  throw std::runtime_error("INFO has no field '" + std::string(field) + "'");
}

}  // namespace

std::string server_product() {
  const std::string binary = env_or("REDMUX_TEST_SERVER", "redis-server");
  return binary.find("valkey") != std::string::npos ? "valkey" : "redis";
}

std::string tls_unsupported() {
  static const std::string reason = [] {
    const std::string binary = find_executable(env_or("REDMUX_TEST_SERVER", "redis-server"));
    if (binary.empty()) return std::string();  // RedisServer says what is missing
    // A TLS port without certificates: a server with TLS fails on the missing files, one
    // without it on the missing connection type. Neither listens, so no port is taken.
    const ProcessResult run = run_process({binary, "--port", "0", "--tls-port", "1", "--save", ""},
                                          std::chrono::seconds(10));
    if ((run.out + run.err).find("Failed finding TLS support") == std::string::npos)
      return std::string();
    return binary +
           " was built without TLS (it says \"Failed finding TLS support\"); build it with "
           "BUILD_TLS=yes to run this test";
  }();
  return reason;
}

RedisServer::RedisServer(ServerOptions options) : options_(std::move(options)) {
  const std::string wanted =
      options_.binary.empty() ? env_or("REDMUX_TEST_SERVER", "redis-server") : options_.binary;
  server_binary_ = find_executable(wanted);
  if (server_binary_.empty()) {
    throw std::runtime_error("RedisServer: '" + wanted +
                             "' not found; install redis-server (scripts/deps) or set "
                             "REDMUX_TEST_SERVER to a redis-server or valkey-server binary");
  }
  cli_binary_ = env_or("REDMUX_TEST_CLI", default_cli_for(server_binary_));
  if (find_executable(cli_binary_).empty()) {
    throw std::runtime_error("RedisServer: '" + cli_binary_ +
                             "' not found; install redis-tools (scripts/deps) or set "
                             "REDMUX_TEST_CLI");
  }
  if (options_.tls && (options_.tls_files.cert_file.empty() ||
                       options_.tls_files.key_file.empty() || options_.tls_files.ca_file.empty())) {
    throw std::invalid_argument("RedisServer: tls needs cert_file, key_file and ca_file");
  }

  data_dir_ = make_temp_dir();
  log_file_ = data_dir_ / "redis.log";
  try {
    write_file(data_dir_ / "redis.conf", options_.config_file_contents);
    if (!options_.acl_file_contents.empty()) {
      write_file(data_dir_ / "users.acl", options_.acl_file_contents);
    }
    // A port is free when we look, but another process may bind it before the server does:
    // retry with a new port when the server reports it in use.
    constexpr int kAttempts = 5;
    for (int attempt = 1;; ++attempt) {
      port_ = free_loopback_port();
      try {
        start();
        break;
      } catch (const std::runtime_error& e) {
        const bool port_taken =
            std::string_view(e.what()).find("Address already in use") != std::string_view::npos;
        if (!port_taken || attempt == kAttempts) throw;
      }
    }
  } catch (...) {
    stop();
    if (env_or("REDMUX_TEST_KEEP_DIRS", "") != "1") {
      std::error_code ignored;
      std::filesystem::remove_all(data_dir_, ignored);
    }
    throw;
  }
}

RedisServer::~RedisServer() {
  stop();
  if (env_or("REDMUX_TEST_KEEP_DIRS", "") != "1") {
    std::error_code ignored;
    std::filesystem::remove_all(data_dir_, ignored);
  }
}

std::vector<std::string> RedisServer::server_argv() const {
  const std::string port = std::to_string(port_);
  std::vector<std::string> argv = {server_binary_, (data_dir_ / "redis.conf").string()};
  if (options_.tls) {
    const TlsFiles& tls = options_.tls_files;
    argv.insert(argv.end(), {"--port", "0", "--tls-port", port, "--tls-cert-file", tls.cert_file,
                             "--tls-key-file", tls.key_file, "--tls-ca-cert-file", tls.ca_file});
  } else {
    argv.insert(argv.end(), {"--port", port});
  }
  // The log goes to stdout (logfile ""), which spawn() sends to <data dir>/redis.log together
  // with stderr, so errors printed before logging starts (bad arguments) are kept as well.
  argv.insert(argv.end(),
              {"--bind", "127.0.0.1", "--dir", data_dir_.string(), "--save", "", "--appendonly",
               "no", "--daemonize", "no", "--logfile", "", "--enable-debug-command", "local"});
  if (!options_.acl_file_contents.empty()) {
    argv.insert(argv.end(), {"--aclfile", (data_dir_ / "users.acl").string()});
  }
  argv.insert(argv.end(), options_.args.begin(), options_.args.end());
  return argv;
}

void RedisServer::spawn() {
  // Everything the child needs is prepared before fork(): after it, only async-signal-safe
  // calls (the test process may have I/O threads holding locks).
  std::vector<std::string> args = server_argv();
  std::vector<char*> c_args;
  for (auto& arg : args) c_args.push_back(arg.data());
  c_args.push_back(nullptr);
  const int log_fd = ::open(log_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    throw std::system_error(errno, std::generic_category(), "open(" + log_file_.string() + ")");
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::system_error(error, std::generic_category(), "fork");
  }
  if (pid == 0) {
    // No orphaned servers when a test crashes: die with the thread that started us.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
#ifdef SYS_close_range
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
#endif
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(c_args[0], c_args.data(), environ);
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  pid_ = pid;
  paused_ = false;
}

void RedisServer::start() {
  const auto log_offset = file_size_or_zero(log_file_);
  spawn();
  const auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  std::string last_error = "never accepted a connection";
  while (true) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      const std::string output = read_file_from(log_file_, log_offset);
      throw std::runtime_error(
          "redis-server on port " + std::to_string(port_) + " exited during startup (" +
          (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                             : "signal " + std::to_string(WTERMSIG(status))) +
          "); its output:\n" + output);
    }
    if (loopback_port_accepts(port_, 200ms)) {
      const ProcessResult ping = try_cli({"PING"}, 5s);
      if (ping.ok() && trim(ping.out) == "PONG") return;
      last_error = "PING: " + ping.describe() + ": " + trim(ping.out + " " + ping.err);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(20ms);
  }
  stop();
  throw std::runtime_error("redis-server on port " + std::to_string(port_) + " not ready after " +
                           std::to_string(options_.ready_timeout.count()) + " ms (" + last_error +
                           "); log tail:\n" + log_tail());
}

void RedisServer::stop() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  if (!reap_within(pid_, 5s)) {
    ::kill(pid_, SIGKILL);
    reap_within(pid_, 10s);
  }
  pid_ = -1;
  paused_ = false;
}

void RedisServer::pause() {
  if (pid_ <= 0) throw std::logic_error("RedisServer::pause: server is not running");
  if (paused_) return;
  ::kill(pid_, SIGSTOP);
  int status = 0;
  while (::waitpid(pid_, &status, WUNTRACED) < 0 && errno == EINTR) {
  }
  if (!WIFSTOPPED(status)) {
    pid_ = -1;
    throw std::runtime_error("RedisServer::pause: server exited instead of stopping; log tail:\n" +
                             log_tail());
  }
  paused_ = true;
}

void RedisServer::resume() {
  if (pid_ <= 0 || !paused_) return;
  ::kill(pid_, SIGCONT);
  int status = 0;
  while (::waitpid(pid_, &status, WCONTINUED) < 0 && errno == EINTR) {
  }
  paused_ = false;
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  paused_ = false;
}

void RedisServer::restart() {
  kill();
  // The old socket is closed once the process is reaped and redis-server binds with
  // SO_REUSEADDR, so the port is normally free at once; retry briefly in case it is not.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (true) {
    try {
      start();
      return;
    } catch (const std::runtime_error& e) {
      const bool port_taken =
          std::string_view(e.what()).find("Address already in use") != std::string_view::npos;
      if (!port_taken || std::chrono::steady_clock::now() >= deadline) throw;
      std::this_thread::sleep_for(100ms);
    }
  }
}

std::vector<std::string> RedisServer::cli_argv(std::vector<std::string> args) const {
  std::vector<std::string> argv = {cli_binary_,         "-h", host(), "-p", std::to_string(port_),
                                   "--no-auth-warning", "-e"};
  if (!options_.cli_user.empty()) argv.insert(argv.end(), {"--user", options_.cli_user});
  if (options_.tls) {
    const TlsFiles& tls = options_.tls_files;
    argv.insert(argv.end(),
                {"--tls", "--cacert", tls.ca_file, "--cert",
                 tls.client_cert_file.empty() ? tls.cert_file : tls.client_cert_file, "--key",
                 tls.client_key_file.empty() ? tls.key_file : tls.client_key_file});
  }
  argv.insert(argv.end(), std::make_move_iterator(args.begin()),
              std::make_move_iterator(args.end()));
  return argv;
}

ProcessResult RedisServer::try_cli(std::vector<std::string> args,
                                   std::chrono::milliseconds timeout) const {
  std::vector<std::string> env;
  // The password goes through the environment, not argv, so `ps` does not show it.
  if (!options_.cli_password.empty()) env.push_back("REDISCLI_AUTH=" + options_.cli_password);
  return run_process(cli_argv(std::move(args)), timeout, env);
}

std::string RedisServer::cli(std::vector<std::string> args) const {
  // Only the command name goes into the error: later arguments may be passwords.
  const std::string command = args.empty() ? std::string("(no command)") : args.front();
  ProcessResult result = try_cli(std::move(args));
  if (!result.ok()) {
    throw std::runtime_error("redis-cli " + command + " against " + address() + ": " +
                             result.describe() + ": " + trim(result.out + "\n" + result.err));
  }
  return trim(result.out);
}

std::string RedisServer::info_field(std::string_view field) const {
  return find_info_field(cli({"INFO", "everything"}), field);
}

int RedisServer::clients_named(std::string_view name) const {
  std::istringstream lines(cli({"CLIENT", "LIST"}));
  const std::string wanted = " name=" + std::string(name) + " ";
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(wanted) != std::string::npos) ++count;
  }
  return count;
}

long long RedisServer::command_calls(std::string_view command) const {
  const std::string stats = cli({"INFO", "commandstats"});
  const std::string key = "cmdstat_" + std::string(command) + ":calls=";
  const std::size_t at = stats.find(key);
  if (at == std::string::npos) return 0;
  return std::stoll(stats.substr(at + key.size()));
}

long long RedisServer::info_int(std::string_view field) const {
  const std::string text = info_field(field);
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw std::runtime_error("INFO field '" + std::string(field) + "' is not an integer: " + text);
  }
  return value;
}

std::string RedisServer::log_tail(std::size_t lines) const {
  std::ifstream in(log_file_);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(std::move(line));
    if (tail.size() > lines) tail.pop_front();
  }
  std::string text;
  for (const auto& l : tail) text += l + "\n";
  return text;
}

}  // namespace redmux::test
