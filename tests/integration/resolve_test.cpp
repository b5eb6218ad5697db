// Addresses that move, against a real redis-server bound to several loopback addresses: a
// host name is resolved again at every reconnect (Config::resolver, whose answer the test
// changes), each address is tried in order, IPv4 and IPv6 both work, and when every address
// fails the error lists what each said.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

// What the name resolves to; the test changes it between reconnects.
struct MovingName {
  std::mutex mutex;
  std::vector<std::string> addresses;
  std::atomic<int> asked{0};

  void set(std::vector<std::string> now) {
    std::lock_guard lock(mutex);
    addresses = std::move(now);
  }
  HostResolver resolver() {
    return HostResolver([this](std::string_view host) {
      EXPECT_EQ(host, "redis.moving.test");
      ++asked;
      std::lock_guard lock(mutex);
      return addresses;
    });
  }
};

test::ServerOptions bound_to(std::string addresses) {
  test::ServerOptions options;
  options.args = {"--bind", std::move(addresses)};
  return options;
}

// The server-side address ("laddr=") of the client connection named `name`, and its id.
std::pair<std::string, std::string> client_of(const RedisServer& server, const std::string& name) {
  const std::string list = server.cli({"CLIENT", "LIST"});
  std::size_t at = list.find("name=" + name + " ");
  if (at == std::string::npos) return {};
  const std::size_t line = list.rfind('\n', at) == std::string::npos ? 0 : list.rfind('\n', at) + 1;
  const std::string entry = list.substr(line, list.find('\n', at) - line);
  auto field = [&](const std::string& key) {
    const std::size_t from = entry.find(key + "=");
    if (from == std::string::npos) return std::string();
    const std::size_t begin = from + key.size() + 1;
    return entry.substr(begin, entry.find(' ', begin) - begin);
  };
  return {field("laddr"), field("id")};
}

Config moving_config(const RedisServer& server, MovingName& name) {
  Config config =
      Config::from_string("redis.moving.test:" + std::to_string(server.port()) +
                          ",name=moving,reconnectBaseDelay=20ms,reconnectMaxDelay=100ms");
  config.resolver = name.resolver();
  return config;
}

TEST(ResolveTest, ANameIsResolvedAgainAtEveryReconnect) {
  RedisServer server(bound_to("127.0.0.1 127.0.0.2"));
  const std::string port = std::to_string(server.port());
  MovingName name;
  name.set({"127.0.0.2"});
  auto mux = Multiplexer::connect(moving_config(server, name));
  Database db = mux->database();
  EXPECT_EQ(db.incr("moving:n").get(), 1);
  EXPECT_EQ(client_of(server, "moving").first, "127.0.0.2:" + port);
  // The name moves: the next connection goes to the new address, the old one not tried.
  name.set({"127.0.0.3", "127.0.0.1"});  // nothing listens on 127.0.0.3: refused, then next
  const int asked = name.asked.load();
  server.cli({"CLIENT", "KILL", "ID", client_of(server, "moving").second});
  ASSERT_TRUE(
      test::wait_until([&] { return client_of(server, "moving").first == "127.0.0.1:" + port; }));
  EXPECT_GT(name.asked.load(), asked);
  EXPECT_EQ(db.incr("moving:n").get(), 2);
}

TEST(ResolveTest, TheErrorListsWhatEachAddressSaid) {
  RedisServer server;
  const std::string port = std::to_string(server.port());
  MovingName name;
  name.set({"127.0.0.3", "127.0.0.4"});  // neither listens
  Config config = moving_config(server, name);
  config.connect_retry = 0;
  try {
    Multiplexer::connect(config);
    FAIL() << "connected with no address listening";
  } catch (const ConnectionError& error) {
    const std::string expected = "connecting to redis.moving.test:" + port +
                                 " failed: each of its 2 addresses failed: 127.0.0.3:" + port +
                                 " (Connection refused), 127.0.0.4:" + port +
                                 " (Connection refused)";
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

TEST(ResolveTest, AResolverThatFailsIsAnAttemptThatFailed) {
  RedisServer server;
  Config config =
      Config::from_string("redis.moving.test:" + std::to_string(server.port()) +
                          ",abortConnect=false,reconnectBaseDelay=20ms,reconnectMaxDelay=100ms");
  std::atomic<bool> known{false};
  config.resolver = HostResolver([&](std::string_view) -> std::vector<std::string> {
    if (!known) throw std::runtime_error("no such service yet");
    return {"127.0.0.1"};
  });
  auto mux = Multiplexer::connect(config);
  ASSERT_TRUE(test::wait_until([&] {
    const MultiplexerStatus status = mux->status();
    return status.per_connection.at(0).last_failure.find(
               "resolving redis.moving.test failed: no such service yet") != std::string::npos;
  })) << mux->status_text();
  known = true;  // the service appears: the next attempt connects
  ASSERT_TRUE(test::wait_until([&] { return mux->is_connected(); }));
  EXPECT_TRUE(mux->database().set("moving:k", "v").get());
}

TEST(ResolveTest, IPv6AndIPv4AddressesAndBracketedEndpoints) {
  RedisServer server(bound_to("127.0.0.1 -::1"));
  const std::string port = std::to_string(server.port());
  // An IPv6 endpoint in brackets: no resolver involved.
  std::shared_ptr<Multiplexer> direct;
  try {
    direct = Multiplexer::connect("[::1]:" + port + ",name=direct-v6,connectRetry=0");
  } catch (const ConnectionError& error) {
    GTEST_SKIP() << "no IPv6 loopback here (the server binds ::1 only if it can): " << error.what();
  }
  EXPECT_TRUE(direct->database().set("moving:v6", "yes").get());
  EXPECT_EQ(client_of(server, "direct-v6").first, "[::1]:" + port);
  // A name resolving to an IPv6 address (bracketed or not) first, then an IPv4 one.
  MovingName name;
  name.set({"[::1]", "127.0.0.1"});
  auto mux = Multiplexer::connect(moving_config(server, name));
  EXPECT_EQ(mux->database().get("moving:v6").get(), std::optional<std::string>("yes"));
  EXPECT_EQ(client_of(server, "moving").first, "[::1]:" + port);
}

TEST(ResolveTest, TheSystemResolverStillServesNames) {
  RedisServer server;
  auto mux = Multiplexer::connect("localhost:" + std::to_string(server.port()) + ",name=by-name");
  EXPECT_TRUE(mux->database().set("moving:k", "v").get());
}

}  // namespace
}  // namespace redmux
