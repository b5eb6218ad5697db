// The Bookstore example as a subprocess against a real redis-server: 100 requests through
// one shared multiplexer (counts right, one connection named bookstore-api the whole time),
// a start while Redis is down (503 with a clear body) that recovers once it is up, and its
// /metrics scraped by a real Prometheus server while requests flow (the INCR histogram's
// count and the commands-per-write gauge, read back through Prometheus's HTTP API).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "support/ports.hpp"
#include "support/raw_connection.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

#ifdef REDMUX_BOOKSTORE_PATH
constexpr const char* kBookstore = REDMUX_BOOKSTORE_PATH;
#else
constexpr const char* kBookstore = nullptr;
#endif
// Debian's prometheus package, or REDMUX_TEST_PROMETHEUS.
std::string prometheus_binary() {
  const char* configured = std::getenv("REDMUX_TEST_PROMETHEUS");
  return configured && *configured ? configured : "/usr/bin/prometheus";
}

// The bookstore binary running in the background, its stdout and stderr on a pipe; stopped
// (SIGTERM, then SIGKILL) when the object goes.
class Bookstore {
 public:
  explicit Bookstore(const std::string& redis_configuration) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::vector<std::string> args = {kBookstore, "--port", "0", "--redis", redis_configuration};
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
    // "bookstore listening on http://127.0.0.1:<port> …"
    std::smatch match;
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!std::regex_search(output_, match, listening)) {
      if (std::chrono::steady_clock::now() > deadline || !read_some()) {
        throw std::runtime_error("bookstore did not start: " + output_);
      }
    }
    port_ = static_cast<std::uint16_t>(std::stoi(match[1].str()));
  }
  ~Bookstore() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 500; ++i) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        usleep(10000);
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
    }
    if (out_ >= 0) close(out_);
  }
  Bookstore(const Bookstore&) = delete;
  Bookstore& operator=(const Bookstore&) = delete;

  std::uint16_t port() const { return port_; }

 private:
  bool read_some() {
    pollfd pfd{out_, POLLIN, 0};
    if (poll(&pfd, 1, 200) <= 0) return true;
    char buf[512];
    const ssize_t n = read(out_, buf, sizeof buf);
    if (n <= 0) return false;
    output_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::uint16_t port_ = 0;
  std::string output_;
};

// A Prometheus server on a free loopback port, scraping `target` (host:port) every 200 ms,
// its data in a temporary directory; SIGKILLed and removed when the object goes.
class Prometheus {
 public:
  explicit Prometheus(const std::string& target) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "redmux-prometheus-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    std::ofstream(dir_ / "prometheus.yml") << "global:\n"
                                              "  scrape_interval: 200ms\n"
                                              "  scrape_timeout: 150ms\n"
                                              "scrape_configs:\n"
                                              "  - job_name: bookstore\n"
                                              "    static_configs:\n"
                                              "      - targets: ['"
                                           << target << "']\n";
    port_ = test::free_loopback_port();
    std::vector<std::string> args = {prometheus_binary(),
                                     "--config.file=" + (dir_ / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir_ / "data").string(),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
    const std::string log = (dir_ / "prometheus.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Prometheus() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Prometheus(const Prometheus&) = delete;
  Prometheus& operator=(const Prometheus&) = delete;

  std::uint16_t port() const { return port_; }
  std::string log() const {
    std::ifstream in(dir_ / "prometheus.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

// One HTTP/1.1 request on a fresh connection (Connection: close).
HttpReply http(std::uint16_t port, const std::string& method, const std::string& path) {
  test::RawConnection connection(port);
  connection.send(method + " " + path +
                  " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  const std::string response = connection.read_until("}", 10s);
  HttpReply reply;
  if (response.rfind("HTTP/1.1 ", 0) == 0) reply.status = std::stoi(response.substr(9, 3));
  const std::size_t body = response.find("\r\n\r\n");
  if (body != std::string::npos) reply.body = response.substr(body + 4);
  return reply;
}

// GET `path` (already URL-encoded) and the whole body, read until the server closes.
HttpReply http_get(std::uint16_t port, const std::string& path) {
  HttpReply reply;
  try {
    test::RawConnection connection(port);
    connection.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    std::string response;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!connection.closed() && std::chrono::steady_clock::now() < deadline) {
      response += connection.read_some(200ms);
    }
    if (response.rfind("HTTP/1.1 ", 0) == 0) reply.status = std::stoi(response.substr(9, 3));
    const std::size_t body = response.find("\r\n\r\n");
    if (body != std::string::npos) reply.body = response.substr(body + 4);
  } catch (const std::exception&) {  // not listening yet: status 0
  }
  return reply;
}

// The value of an instant query's first sample (Prometheus's /api/v1/query JSON:
// ..."value":[<time>,"<value>"]...), or nullopt when it has none yet.
std::optional<double> query(const Prometheus& prometheus, const std::string& encoded_query) {
  const HttpReply reply = http_get(prometheus.port(), "/api/v1/query?query=" + encoded_query);
  if (reply.status != 200) return std::nullopt;
  static const std::regex value(R"re("value":\[[0-9.]+,"([^"]+)"\])re");
  std::smatch match;
  if (!std::regex_search(reply.body, match, value)) return std::nullopt;
  return std::stod(match[1].str());
}

int connections_named(const RedisServer& server, const std::string& name) {
  std::istringstream list(server.cli({"CLIENT", "LIST"}));
  int count = 0;
  for (std::string line; std::getline(list, line);) {
    if (line.find(" name=" + name + " ") != std::string::npos) ++count;
  }
  return count;
}

class BookstoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kBookstore == nullptr) {
      GTEST_SKIP() << "the bookstore example was not built (needs libcpp-httplib-dev)";
    }
  }
};

TEST_F(BookstoreTest, HundredRequestsShareOneConnection) {
  RedisServer server;
  Bookstore bookstore(server.address() + ",name=bookstore-api,abortConnect=false");
  ASSERT_TRUE(test::wait_until(
      [&] { return http(bookstore.port(), "GET", "/books/1/views").status == 200; }, 20s));
  EXPECT_EQ(http(bookstore.port(), "GET", "/books/7/views").body, R"({"bookId":7,"views":0})");
  const long long connections_before = server.info_int("total_connections_received");

  int views[5] = {0, 0, 0, 0, 0};
  for (int i = 0; i < 100; ++i) {
    const int book = 40 + i % 5;
    const HttpReply reply =
        http(bookstore.port(), "POST", "/books/" + std::to_string(book) + "/views");
    ASSERT_EQ(reply.status, 200) << reply.body;
    ++views[i % 5];
    EXPECT_EQ(reply.body, "{\"bookId\":" + std::to_string(book) +
                              ",\"views\":" + std::to_string(views[i % 5]) + "}");
    if (i % 10 == 0) {
      EXPECT_EQ(connections_named(server, "bookstore-api"), 1) << "request " << i;
    }
  }
  for (int book = 40; book < 45; ++book) {
    EXPECT_EQ(http(bookstore.port(), "GET", "/books/" + std::to_string(book) + "/views").body,
              "{\"bookId\":" + std::to_string(book) + ",\"views\":20}");
    EXPECT_EQ(server.cli({"GET", "bookstore:book:" + std::to_string(book) + ":views"}), "20");
  }
  EXPECT_EQ(connections_named(server, "bookstore-api"), 1);
  // Only the harness's own redis-cli calls connected meanwhile; the service opened none.
  const long long cli_calls = 100 / 10 + 5 + 1 + 1;  // CLIENT LIST, GET, CLIENT LIST, INFO
  EXPECT_LE(server.info_int("total_connections_received") - connections_before, cli_calls + 1);
  EXPECT_EQ(http(bookstore.port(), "GET", "/books/abc/views").status, 400);
}

TEST_F(BookstoreTest, StartsWhileRedisIsDownAndRecovers) {
  RedisServer server;
  server.kill();
  Bookstore bookstore(server.address() + ",name=bookstore-api,abortConnect=false");
  HttpReply reply = http(bookstore.port(), "POST", "/books/42/views");
  EXPECT_EQ(reply.status, 503);
  EXPECT_NE(reply.body.find("\"error\":\"redis unavailable\""), std::string::npos) << reply.body;
  EXPECT_NE(reply.body.find(server.address()), std::string::npos) << reply.body;
  EXPECT_EQ(http(bookstore.port(), "GET", "/books/42/views").status, 503);

  server.restart();
  ASSERT_TRUE(test::wait_until(
      [&] {
        reply = http(bookstore.port(), "POST", "/books/42/views");
        return reply.status == 200;
      },
      30s, 100ms))
      << reply.body;
  EXPECT_EQ(reply.body, R"({"bookId":42,"views":1})");
  EXPECT_EQ(connections_named(server, "bookstore-api"), 1);
}

TEST_F(BookstoreTest, PrometheusScrapesItsMetricsWhileRequestsFlow) {
  if (::access(prometheus_binary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << prometheus_binary() << " not found (Debian's prometheus package)";
  }
  RedisServer server;
  Bookstore bookstore(server.address() + ",name=bookstore-api,latencyHistograms=true");
  const HttpReply metrics = http_get(bookstore.port(), "/metrics");
  if (metrics.status == 404) {
    GTEST_SKIP() << "the bookstore was built without redmux::prometheus (prometheus-cpp-dev)";
  }
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  Prometheus prometheus("127.0.0.1:" + std::to_string(bookstore.port()));
  // The target is scraped while requests flow: half of them before Prometheus is up.
  constexpr int kRequests = 200;
  for (int i = 0; i < kRequests / 2; ++i) {
    ASSERT_EQ(http(bookstore.port(), "POST", "/books/" + std::to_string(i % 7) + "/views").status,
              200);
  }
  ASSERT_TRUE(test::wait_until([&] { return query(prometheus, "up").has_value(); }, 20s, 100ms))
      << prometheus.log();
  for (int i = kRequests / 2; i < kRequests; ++i) {
    ASSERT_EQ(http(bookstore.port(), "POST", "/books/" + std::to_string(i % 7) + "/views").status,
              200);
  }
  // Every INCR the requests made (one each), once a scrape after the last one is stored.
  const std::string incr_count = "redmux_command_duration_seconds_count%7Bcommand%3D%22INCR%22%7D";
  std::optional<double> seen;
  EXPECT_TRUE(test::wait_until(
      [&] {
        seen = query(prometheus, incr_count);
        return seen == static_cast<double>(kRequests);
      },
      15s, 100ms))
      << "INCR count in Prometheus: " << (seen ? std::to_string(*seen) : "none") << "\n"
      << prometheus.log();
  // Commands per write: what the bookstore's /metrics says now (no traffic since), as
  // Prometheus stored it. Each request is one INCR waited for: at least one per write.
  const HttpReply now = http_get(bookstore.port(), "/metrics");
  std::smatch match;
  ASSERT_TRUE(
      std::regex_search(now.body, match, std::regex("\nredmux_commands_per_write ([0-9.e+-]+)\n")))
      << now.body;
  const double per_write = std::stod(match[1].str());
  EXPECT_GE(per_write, 1.0);
  std::optional<double> stored;
  EXPECT_TRUE(test::wait_until(
      [&] {
        stored = query(prometheus, "redmux_commands_per_write");
        return stored && std::abs(*stored - per_write) < 0.01;
      },
      15s, 100ms))
      << "bookstore says " << per_write << ", Prometheus " << (stored ? *stored : -1.0);
}

}  // namespace
}  // namespace redmux
