// The Bookstore example as a subprocess against a real redis-server: 100 requests through
// one shared multiplexer (counts right, one connection named bookstore-api the whole time),
// and a start while Redis is down (503 with a clear body) that recovers once it is up.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

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

}  // namespace
}  // namespace redmux
