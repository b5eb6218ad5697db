// The credential provider's rules on a scripted connection: asked before the handshake, and
// again once three quarters of the credentials' life have passed — AUTH then goes in order
// with the callers' commands on the same connection; a refusal is one event, not a loop.
#include <gtest/gtest.h>

#include <thread>

#include "scripted_runner.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using testing::bulk;
using testing::ScriptedRunner;
using testing::value_of;

std::string auth_bytes(std::string_view user, std::string_view password) {
  return "*3\r\n$4\r\nAUTH\r\n" + bulk(user) + bulk(password);
}

struct Tokens {
  std::string next = "tok-1";
  int asked = 0;
  Config config() {
    Config config;
    config.credentials = CredentialProvider([this] {
      ++asked;
      return Credentials{"app", next, 4000ms};
    });
    return config;
  }
};

std::size_t count_of(const std::vector<ConnectionEvent>& events, ConnectionEventKind kind) {
  return static_cast<std::size_t>(std::count_if(
      events.begin(), events.end(), [&](const ConnectionEvent& e) { return e.kind == kind; }));
}

TEST(CredentialProviderTest, TheHandshakeAuthenticatesWithWhatTheProviderReturns) {
  Tokens tokens;
  ScriptedRunner r(tokens.config());
  r.ready();
  EXPECT_EQ(tokens.asked, 1);
  EXPECT_NE(r.handshake_sent.find("$4\r\nAUTH\r\n$3\r\napp\r\n$5\r\ntok-1\r\n"), std::string::npos)
      << r.handshake_sent;
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
}

TEST(CredentialProviderTest, RenewalAuthenticatesInPlaceInOrderWithTheCallersCommands) {
  Tokens tokens;
  ScriptedRunner r(tokens.config());
  r.ready();
  r.take_wire();
  auto& before = r.get("before");  // being written when the renewal comes
  tokens.next = "tok-2";
  r.advance(2000ms);
  EXPECT_EQ(tokens.asked, 1) << "asked again before three quarters of the life passed";
  r.advance(1000ms);  // 3 s of 4 s: the health tick renews
  EXPECT_EQ(tokens.asked, 2);
  auto& after = r.get("after");
  while (r.writing) r.complete_write();
  const std::string wire = r.take_wire();
  const std::size_t get_at = wire.find(bulk("before"));
  const std::size_t auth_at = wire.find(auth_bytes("app", "tok-2"));
  const std::size_t after_at = wire.find(bulk("after"));
  ASSERT_NE(auth_at, std::string::npos) << wire;
  EXPECT_LT(get_at, auth_at);
  EXPECT_LT(auth_at, after_at);
  // Replies in the same order: each caller gets its own; the AUTH's OK goes to nobody.
  std::string replies;
  for (std::size_t at = wire.find("PING"); at != std::string::npos && at < auth_at;
       at = wire.find("PING", at + 1)) {
    replies += "+PONG\r\n";
  }
  r.feed(bulk("v1") + replies + "+OK\r\n" + bulk("v2"));
  EXPECT_EQ(value_of(before), "v1");
  EXPECT_EQ(value_of(after), "v2");
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  EXPECT_EQ(count_of(r.events, ConnectionEventKind::AuthRefused), 0u);
  EXPECT_EQ(r.connects.size(), 1u) << "the connection was replaced";
  r.advance(3000ms);  // the renewed token's own three quarters
  EXPECT_EQ(tokens.asked, 3);
}

TEST(CredentialProviderTest, ARefusedRenewalIsOneEventAndNotRetried) {
  Tokens tokens;
  ScriptedRunner r(tokens.config());
  r.ready();
  tokens.next = "s3cret-token";
  r.advance(3000ms);
  while (r.writing) r.complete_write();
  const std::string wire = r.take_wire();
  ASSERT_NE(wire.find(auth_bytes("app", "s3cret-token")), std::string::npos) << wire;
  std::string replies;
  for (std::size_t at = wire.find("PING"); at != std::string::npos;
       at = wire.find("PING", at + 1)) {
    replies += "+PONG\r\n";
  }
  // The PINGs were written before the AUTH (idle ticks): their replies come first.
  r.feed(replies.substr(0, replies.size()) +
         "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  ASSERT_EQ(count_of(r.events, ConnectionEventKind::AuthRefused), 1u);
  const ConnectionEvent& refused = r.events.back();
  EXPECT_EQ(refused.error.code(), errc::authentication_failed);
  EXPECT_EQ(refused.error.message(),
            "re-authentication to 10.0.0.1:6379 as user \"app\" refused: WRONGPASS invalid "
            "username-password pair or user is disabled.; the connection keeps its earlier "
            "session (check what the credential provider returns)");
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  r.advance(20000ms);
  while (r.writing) r.complete_write();
  EXPECT_EQ(r.take_wire().find("AUTH"), std::string::npos) << "a retry loop";
  EXPECT_EQ(tokens.asked, 2);
  EXPECT_EQ(count_of(r.events, ConnectionEventKind::AuthRefused), 1u);
}

TEST(CredentialProviderTest, AResp2SubscriberConnectionIsReplacedNotReauthenticated) {
  Tokens tokens;
  Config config = tokens.config();
  config.protocol = Protocol::Resp2;
  ScriptedRunner r(config);
  r.machine.set_subscriber_mode(true);
  int ready = 0;
  r.machine.set_ready_hook([&] { ++ready; });
  r.start();
  r.connected();
  // HELLO 2 answers a flat array; the rest of round one as in RESP3.
  std::string replies = "*6\r\n" + bulk("server") + bulk("redis") + bulk("version") +
                        bulk("7.0.0") + bulk("proto") + ":2\r\n";
  replies += "+OK\r\n+OK\r\n+OK\r\n" + bulk("# Server\r\nredis_version:7.0.0\r\n") + "*2\r\n" +
             bulk("databases") + bulk("16") + bulk("loading:0\r\n");
  r.feed(replies);
  ASSERT_EQ(r.machine.state(), ConnectionState::Ready);
  ASSERT_EQ(ready, 1);
  tokens.next = "tok-2";
  r.handshake_sent.clear();
  for (int i = 0; i < 3; ++i) {  // the idle PINGs answered: nothing in flight at the renewal
    r.advance(1000ms);
    while (r.writing) r.complete_write();
    if (r.connects.size() == 1 && r.take_wire().find("PING") != std::string::npos) {
      r.feed("+PONG\r\n");
    }
  }
  EXPECT_EQ(r.connects.size(), 2u) << "not replaced";
  EXPECT_EQ(tokens.asked, 2);
  r.connected();
  EXPECT_NE(r.handshake_sent.find(bulk("tok-2")), std::string::npos) << r.handshake_sent;
  EXPECT_EQ(tokens.asked, 2) << "the replacement asks the provider once, not twice";
  r.feed(replies);
  EXPECT_EQ(ready, 2);  // the hub subscribes again from its ready hook
  EXPECT_EQ(r.take_wire().find("AUTH"), std::string::npos);
}

TEST(CredentialProviderTest, AThrowingProviderFailsTheAttempt) {
  Config config;
  config.credentials = CredentialProvider(
      []() -> Credentials { throw std::runtime_error("token service unreachable"); });
  ScriptedRunner r(config);
  r.start();
  r.connected();
  EXPECT_TRUE(r.handshake_sent.empty());
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  EXPECT_EQ(r.last_failure().message(),
            "the credential provider failed for 10.0.0.1:6379: token service unreachable");
}

TEST(CredentialProviderTest, AProviderThatOutlastsConnectTimeoutFailsTheAttemptAsTimedOut) {
  // The provider's own running time is the subject here: it blocks as a slow one would.
  Config config;
  config.connect_timeout = 100ms;
  config.credentials = CredentialProvider([]() -> Credentials {
    std::this_thread::sleep_for(120ms);
    return {"app", "tok-1", {}};
  });
  ScriptedRunner r(config);
  r.start();
  r.connected();
  // Not written: the server's reply must not win a race with the expired timer.
  EXPECT_TRUE(r.handshake_sent.empty()) << r.handshake_sent;
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  const std::string message = r.last_failure().message();
  EXPECT_EQ(message.rfind("connecting to 10.0.0.1:6379 timed out after 100 ms (handshaking; "
                          "connectTimeout=100); the credential provider took 1",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find(" ms of it (it runs on an I/O thread and must not block)"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace redmux::detail
