// Credential providers against a real redis-server whose ACL user's password the test rotates
// (ACL SETUSER): the provider is asked at every connect, a ready connection authenticates
// again in place before its credentials expire (RESP3: the same connection, nothing dropped
// or resent; RESP2 subscriber: replaced, subscriptions restored), a refused re-AUTH is one
// event naming the user and never the secret, and dedicated connections follow the provider.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/local_cluster.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

/// What the provider hands out; the test rotates it.
struct Vault {
  std::mutex mutex;
  Credentials current;
  std::atomic<int> asked{0};

  void set(std::string user, std::string password, std::chrono::milliseconds expires_in = {}) {
    std::lock_guard lock(mutex);
    current = {std::move(user), std::move(password), expires_in};
  }
  CredentialProvider provider() {
    return CredentialProvider([this] {
      ++asked;
      std::lock_guard lock(mutex);
      return current;
    });
  }
};

/// Connection events, safe to read from the test thread.
struct EventLog {
  std::mutex mutex;
  std::vector<ConnectionEvent> events;
  void attach(Multiplexer& mux) {
    mux.on_connection_event([this](const ConnectionEvent& event) {
      std::lock_guard lock(mutex);
      events.push_back(event);
    });
  }
  std::vector<ConnectionEvent> of(ConnectionEventKind kind) {
    std::lock_guard lock(mutex);
    std::vector<ConnectionEvent> out;
    for (const ConnectionEvent& event : events) {
      if (event.kind == kind) out.push_back(event);
    }
    return out;
  }
};

RedisServer server_with_user() {
  test::ServerOptions options;
  options.acl_file_contents =
      "user default on nopass ~* &* +@all\n"
      "user app on >first-pass ~* &* +@all\n";
  return RedisServer(options);
}

/// The server's CLIENT LIST lines of the connections named `name`.
std::vector<std::string> clients_named(const RedisServer& server, const std::string& name) {
  const std::string list = server.cli({"CLIENT", "LIST"});
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < list.size()) {
    std::size_t end = list.find('\n', pos);
    if (end == std::string::npos) end = list.size();
    std::string line = list.substr(pos, end - pos);
    if (line.find(" name=" + name + " ") != std::string::npos) lines.push_back(line);
    pos = end + 1;
  }
  return lines;
}

/// The value of `key` in a CLIENT LIST line ("id=5 addr=… name=…"); empty when absent.
std::string field(const std::string& line, const std::string& key) {
  const std::string spaced = " " + line;
  const std::size_t from = spaced.find(" " + key + "=");
  if (from == std::string::npos) return {};
  const std::size_t begin = from + key.size() + 2;
  return spaced.substr(begin, spaced.find(' ', begin) - begin);
}

long long auth_calls(const RedisServer& server) {
  const std::string stats = server.cli({"INFO", "commandstats"});
  const std::size_t at = stats.find("cmdstat_auth:calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(stats.substr(at + 19));
}

Config config_for(const RedisServer& server, Vault& vault, const std::string& extra = "") {
  Config config = Config::from_string(server.address() +
                                      ",name=rotating,heartbeatInterval=50ms,"
                                      "reconnectBaseDelay=20ms,reconnectMaxDelay=100ms" +
                                      extra);
  config.credentials = vault.provider();
  return config;
}

TEST(CredentialsTest, EveryConnectAsksTheProvider) {
  RedisServer server = server_with_user();
  Vault vault;
  vault.set("app", "first-pass");
  auto mux = Multiplexer::connect(config_for(server, vault));
  Database db = mux->database();
  EXPECT_EQ(db.incr("rotate:n").get(), 1);
  const int asked = vault.asked.load();
  EXPECT_GE(asked, 1);

  // Rotate: the old password is gone, the connections are cut; the reconnect must use the
  // provider's new answer (a handshake that kept the first password would be refused).
  server.cli({"ACL", "SETUSER", "app", "resetpass", ">second-pass"});
  vault.set("app", "second-pass");
  server.cli({"CLIENT", "KILL", "USER", "app"});
  ASSERT_TRUE(test::wait_until([&] {
    try {
      return db.incr("rotate:n").get() >= 2;
    } catch (const RedmuxError&) {
      return false;
    }
  }));
  EXPECT_GT(vault.asked.load(), asked);
  for (const std::string& line : clients_named(server, "rotating")) {
    EXPECT_EQ(field(line, "user"), "app") << line;
  }
}

TEST(CredentialsTest, AReadyResp3ConnectionReauthenticatesInPlaceInOrder) {
  RedisServer server = server_with_user();
  Vault vault;
  vault.set("app", "first-pass", 400ms);  // renewed after 300 ms
  auto mux = Multiplexer::connect(config_for(server, vault));
  Database db = mux->database();
  EXPECT_EQ(db.incr("inplace:n").get(), 1);
  const std::vector<std::string> before = clients_named(server, "rotating");
  ASSERT_EQ(before.size(), 1u);
  const long long auth_before = auth_calls(server);

  // The second password is added, the provider hands it out; commands keep flowing while
  // the connection renews.
  server.cli({"ACL", "SETUSER", "app", ">second-pass"});
  vault.set("app", "second-pass", 400ms);
  std::vector<Future<long long>> sent;
  long long expected = 1;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (auth_calls(server) < auth_before + 1 && std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 50; ++i) sent.push_back(db.incr("inplace:n"));
    sent.back().wait();
  }
  ASSERT_GE(auth_calls(server), auth_before + 1) << "no AUTH in place";
  // Only the new password works from here: a connection that had not renewed would still
  // run (the server keeps sessions), so the proof is the same connection and AUTH counted.
  server.cli({"ACL", "SETUSER", "app", "resetpass", ">second-pass"});
  for (Future<long long>& future : sent) EXPECT_EQ(future.get(), ++expected);
  EXPECT_EQ(db.incr("inplace:n").get(), ++expected);  // nothing dropped, nothing resent
  const std::vector<std::string> after = clients_named(server, "rotating");
  ASSERT_EQ(after.size(), 1u);
  ASSERT_FALSE(field(before[0], "id").empty()) << before[0];
  EXPECT_EQ(field(after[0], "id"), field(before[0], "id")) << "the connection was replaced";
  EXPECT_EQ(field(after[0], "user"), "app");
}

TEST(CredentialsTest, ARefusedReauthIsOneEventNamingTheUserNeverTheSecret) {
  RedisServer server = server_with_user();
  Vault vault;
  vault.set("app", "first-pass", 200ms);
  auto mux = Multiplexer::connect(config_for(server, vault));
  EventLog log;
  log.attach(*mux);
  std::mutex errors_mutex;
  std::vector<Error> errors;
  mux->on_error([&](const Error& error) {
    std::lock_guard lock(errors_mutex);
    errors.push_back(error);
  });
  Database db = mux->database();
  EXPECT_EQ(db.incr("refused:n").get(), 1);
  const std::string id = field(clients_named(server, "rotating").at(0), "id");

  vault.set("app", "wr0ng-s3cret", 200ms);  // the server does not know this one
  ASSERT_TRUE(test::wait_until([&] { return !log.of(ConnectionEventKind::AuthRefused).empty(); }));
  const ConnectionEvent refused = log.of(ConnectionEventKind::AuthRefused).at(0);
  EXPECT_EQ(refused.error.code(), errc::authentication_failed);
  EXPECT_NE(refused.error.message().find("as user \"app\" refused"), std::string::npos)
      << refused.error.message();
  EXPECT_NE(refused.error.message().find("WRONGPASS"), std::string::npos);
  EXPECT_EQ(refused.error.message().find("wr0ng-s3cret"), std::string::npos);
  EXPECT_EQ(refused.endpoint, server.address());

  // Not a retry loop: the provider is not asked again on this session, and the connection
  // goes on as the user it was.
  const int asked = vault.asked.load();
  const long long auth = auth_calls(server);
  std::this_thread::sleep_for(600ms);  // three renewal periods that must pass quietly
  EXPECT_EQ(vault.asked.load(), asked);
  EXPECT_EQ(auth_calls(server), auth);
  EXPECT_EQ(log.of(ConnectionEventKind::AuthRefused).size(), 1u);
  EXPECT_TRUE(log.of(ConnectionEventKind::Failed).empty());
  EXPECT_EQ(db.incr("refused:n").get(), 2);
  EXPECT_EQ(field(clients_named(server, "rotating").at(0), "id"), id);
  std::lock_guard lock(errors_mutex);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message().find("wr0ng-s3cret"), std::string::npos);
}

TEST(CredentialsTest, AResp2SubscriberConnectionIsReplacedWithItsSubscriptions) {
  RedisServer server = server_with_user();
  Vault vault;
  vault.set("app", "first-pass", 4000ms);  // renewed after 3 s
  auto mux = Multiplexer::connect(config_for(server, vault, ",protocol=resp2"));
  std::mutex mutex;
  std::vector<std::string> received;
  Subscription sub = mux->subscriber().subscribe("rotating:news", [&](const Message& message) {
    std::lock_guard lock(mutex);
    received.push_back(message.payload);
  });
  sub.confirmed().get();
  auto count = [&] {
    std::lock_guard lock(mutex);
    return received.size();
  };
  server.cli({"PUBLISH", "rotating:news", "one"});
  ASSERT_TRUE(test::wait_until([&] { return count() == 1; }));
  auto subscriber_ids = [&] {
    std::vector<std::string> ids;
    for (const std::string& line : clients_named(server, "rotating")) {
      if (field(line, "sub") != "0") ids.push_back(field(line, "id"));
    }
    return ids;
  };

  // The old password goes: from here only a connection that authenticated with the new one
  // can be subscribed. The new credentials do not expire, so the replacement is the last.
  server.cli({"ACL", "SETUSER", "app", "resetpass", ">second-pass"});
  vault.set("app", "second-pass");
  const std::vector<std::string> at_rotation = subscriber_ids();
  ASSERT_EQ(at_rotation.size(), 1u);
  ASSERT_FALSE(at_rotation[0].empty());
  ASSERT_TRUE(test::wait_until([&] {
    const std::vector<std::string> now = subscriber_ids();
    return now.size() == 1 && now[0] != at_rotation[0];
  })) << "the RESP2 subscriber connection was not replaced";
  server.cli({"PUBLISH", "rotating:news", "two"});
  ASSERT_TRUE(test::wait_until([&] { return count() == 2; }));
  std::lock_guard lock(mutex);
  EXPECT_EQ(received, (std::vector<std::string>{"one", "two"}));
  EXPECT_TRUE(sub.active());
}

TEST(CredentialsTest, DedicatedConnectionsFollowTheProvider) {
  RedisServer server = server_with_user();
  Vault vault;
  vault.set("app", "first-pass");
  auto mux = Multiplexer::connect(config_for(server, vault));
  Database db = mux->database();
  db.rpush("dedicated:list", {"a"}).get();
  EXPECT_EQ(db.blpop({"dedicated:list"}, 1000ms).get()->element, "a");

  server.cli({"ACL", "SETUSER", "app", "resetpass", ">second-pass"});
  vault.set("app", "second-pass");
  server.cli({"CLIENT", "KILL", "USER", "app"});
  // A command written before the client saw the kill fails as "may or may not have run":
  // wait until the interactive connection is back (with the new password).
  ASSERT_TRUE(test::wait_until([&] {
    try {
      return db.ping().get() == "PONG";
    } catch (const RedmuxError&) {
      return false;
    }
  }));
  db.rpush("dedicated:list", {"b"}).get();
  EXPECT_EQ(db.blpop({"dedicated:list"}, 1000ms).get()->element, "b");
  Transaction tx = db.transaction();
  auto incr = tx.incr("dedicated:n");
  EXPECT_TRUE(tx.execute());
  EXPECT_EQ(incr.get(), 1);
  for (const std::string& line : clients_named(server, "rotating")) {
    EXPECT_EQ(field(line, "user"), "app") << line;
  }
}

TEST(CredentialsTest, AThrowingProviderFailsTheAttemptSayingWhy) {
  RedisServer server = server_with_user();
  Config config = Config::from_string(server.address() + ",connectRetry=0");
  config.credentials = CredentialProvider(
      []() -> Credentials { throw std::runtime_error("token service unreachable"); });
  try {
    Multiplexer::connect(config);
    FAIL() << "connected without credentials";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(e.code(), errc::authentication_failed) << e.what();
    EXPECT_NE(std::string(e.what()).find("the credential provider failed for " + server.address() +
                                         ": token service unreachable"),
              std::string::npos)
        << e.what();
  }
}

// A provider runs on an I/O thread; one that blocks holds up every connection there, and
// its attempt's own timer too: the timeout it causes says so instead of blaming the server,
// and a slow provider is logged.
TEST(CredentialsTest, ASlowProviderIsNamedInTheTimeoutItCausesAndInTheLog) {
  RedisServer server = server_with_user();
  std::atomic<int> delay_ms{400};
  Config config = Config::from_string(server.address() +
                                      ",connectRetry=0,connectTimeout=200,heartbeatInterval=50ms");
  config.credentials = CredentialProvider([&]() -> Credentials {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
    return {"app", "first-pass", 300ms};
  });
  try {
    Multiplexer::connect(config);
    FAIL() << "connected although the provider took twice connectTimeout";
  } catch (const ConnectionError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("timed out after 200 ms (handshaking; connectTimeout=200)"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("; the credential provider took 4"), std::string::npos) << message;
    EXPECT_NE(message.find(" ms of it (it runs on an I/O thread and must not block)"),
              std::string::npos)
        << message;
  }

  // Fast enough to connect; then slow at a renewal (every 225 ms): logged at Warning.
  delay_ms = 0;
  auto mux = Multiplexer::connect(config);
  std::mutex mutex;
  std::vector<std::string> warnings;
  mux->on_log(LogLevel::Warning, [&](const LogRecord& record) {
    std::lock_guard lock(mutex);
    warnings.emplace_back(record.message);
  });
  EXPECT_TRUE(mux->database().set("k", "v").get());
  {
    std::lock_guard lock(mutex);
    EXPECT_TRUE(warnings.empty()) << warnings.front();
  }
  delay_ms = 150;
  ASSERT_TRUE(test::wait_until([&] {
    std::lock_guard lock(mutex);
    return !warnings.empty();
  }));
  delay_ms = 0;
  std::lock_guard lock(mutex);
  EXPECT_EQ(warnings.front().rfind("the credential provider took 1", 0), 0u) << warnings.front();
  EXPECT_NE(warnings.front().find(" ms for " + server.address() +
                                  ", on an I/O thread: every connection on that thread waited "
                                  "for it (a provider must not block: return credentials "
                                  "fetched ahead of time)"),
            std::string::npos)
      << warnings.front();
}

TEST(CredentialsTest, AUserWithAnEmptyPasswordIsThatUserNeverDefault) {
  test::ServerOptions options;
  options.acl_file_contents =
      "user default on nopass ~* &* +@all\n"
      "user open on nopass ~* &* +@all\n"
      "user locked on >its-pass ~* &* +@all\n";
  RedisServer server(options);
  for (const char* protocol : {"resp3", "resp2"}) {
    SCOPED_TRACE(protocol);
    Vault vault;
    vault.set("open", "");  // a nopass user takes any password, the empty one too
    auto mux = Multiplexer::connect(
        config_for(server, vault, std::string(",protocol=") + protocol + ",connectRetry=0"));
    EXPECT_EQ(mux->database().command<std::string>("ACL", "WHOAMI").get(), "open");
    // A user whose password is not empty is refused, not connected as "default".
    Vault wrong;
    wrong.set("locked", "");
    try {
      Multiplexer::connect(
          config_for(server, wrong, std::string(",protocol=") + protocol + ",connectRetry=0"));
      ADD_FAILURE() << "connected with an empty password for \"locked\"";
    } catch (const RedmuxError& e) {
      EXPECT_EQ(e.code(), errc::authentication_failed) << e.what();
      EXPECT_NE(std::string(e.what()).find("WRONGPASS"), std::string::npos) << e.what();
    }
  }
}

// Redis Cluster: every node's connection asks the provider. The password is rotated on every
// node (the old one removed) and the connections cut: writes to every primary resume only
// with the provider's new answer, and each node's sessions are the provider's user.
TEST(CredentialsTest, EveryClusterNodeConnectionFollowsTheProvider) {
  test::LocalCluster cluster;
  std::vector<RedisServer*> nodes = cluster.primaries();
  for (RedisServer* replica : cluster.replicas()) nodes.push_back(replica);
  for (RedisServer* node : nodes) {
    node->cli({"ACL", "SETUSER", "app", "on", ">first-pass", "~*", "&*", "+@all"});
  }
  Vault vault;
  vault.set("app", "first-pass");
  Config config = Config::from_string(cluster.seeds() +
                                      ",name=rotating,reconnectBaseDelay=20ms,"
                                      "reconnectMaxDelay=100ms");
  config.credentials = vault.provider();
  auto mux = Multiplexer::connect(config);
  Database db = mux->database();
  // 64 keys of random slots: every one of the 3 primaries owns some (missing one: < 1e-10).
  auto write_all = [&](const std::string& value) {
    for (int i = 0; i < 64; ++i) {
      if (!db.set("rotate:" + std::to_string(i), value).get()) return false;
    }
    return true;
  };
  ASSERT_TRUE(write_all("first"));
  for (RedisServer* primary : cluster.primaries()) {
    const std::vector<std::string> lines = clients_named(*primary, "rotating");
    ASSERT_FALSE(lines.empty()) << primary->address();
    for (const std::string& line : lines) EXPECT_EQ(field(line, "user"), "app") << line;
  }

  for (RedisServer* node : nodes) node->cli({"ACL", "SETUSER", "app", "resetpass", ">second-pass"});
  vault.set("app", "second-pass");
  for (RedisServer* node : nodes) node->cli({"CLIENT", "KILL", "USER", "app"});
  ASSERT_TRUE(test::wait_until(
      [&] {
        try {
          return write_all("second");
        } catch (const RedmuxError&) {
          return false;
        }
      },
      30s))
      << mux->status_text();
  for (RedisServer* primary : cluster.primaries()) {
    const std::vector<std::string> lines = clients_named(*primary, "rotating");
    ASSERT_FALSE(lines.empty()) << primary->address() << " has no session of the multiplexer";
    for (const std::string& line : lines) EXPECT_EQ(field(line, "user"), "app") << line;
  }
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(db.get("rotate:" + std::to_string(i)).get(), std::optional<std::string>("second"));
  }
}

}  // namespace
}  // namespace redmux
