#include "conn/handshake.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "resp/parser.hpp"

namespace redmux::detail {
namespace {

// Feeds RESP text (one or more replies) to the handshake, reply by reply.
Handshake::Step feed_replies(Handshake& handshake, std::string_view text, std::string& out) {
  resp::Parser parser;
  Handshake::Step step = Handshake::Step::Continue;
  while (!text.empty()) {
    EXPECT_EQ(parser.parse(text), resp::ParseStatus::Complete) << text;
    step = handshake.on_reply(parser.nodes(), out);
    text.remove_prefix(parser.consumed());
  }
  return step;
}

// INFO server as a RESP3 verbatim string.
std::string info_reply(std::string_view text) {
  return "=" + std::to_string(text.size() + 4) + "\r\ntxt:" + std::string(text) + "\r\n";
}

// The replies to round one's two CLIENT SETINFO: accepted, or unknown (Redis before 7.2).
constexpr std::string_view kSetInfoAccepted = "+OK\r\n+OK\r\n";
constexpr std::string_view kSetInfoUnknown =
    "-ERR unknown subcommand\r\n-ERR unknown subcommand\r\n";

// Round one's replies after HELLO for a server whose INFO server says `info_text`: SELECT
// (`select`), SETINFO (`setinfo`), INFO, CONFIG GET databases (16) and INFO persistence
// (loaded).
std::string round_one_rest(std::string_view info_text, std::string_view setinfo = kSetInfoAccepted,
                           std::string_view select = "+OK\r\n") {
  return std::string(select) + std::string(setinfo) + info_reply(info_text) +
         "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n$9\r\nloading:0\r\n";
}

// Each test starts a handshake for a configuration string and feeds it the server's replies;
// out_ collects what the handshake writes in answer.
class HandshakeTest : public ::testing::Test {
 protected:
  // A new handshake for `config_text` (the previous one is dropped). Returns round one, the
  // bytes begin() wrote; out_ is empty afterwards. `follow_redirects`: announce_redirect().
  std::string start(std::string_view config_text = "h:1", bool follow_redirects = false) {
    handshake_.reset();
    config_ = std::make_unique<Config>(Config::from_string(config_text));
    handshake_ = std::make_unique<Handshake>(*config_, "h:1");
    if (follow_redirects) handshake_->announce_redirect();
    std::string round_one;
    handshake_->begin(round_one);
    out_.clear();
    return round_one;
  }
  Handshake::Step feed(std::string_view text) { return feed_replies(*handshake_, text, out_); }
  Handshake& handshake() { return *handshake_; }

  std::string out_;

 private:
  std::unique_ptr<Config> config_;  // outlives handshake_, which refers to it
  std::unique_ptr<Handshake> handshake_;
};

TEST_F(HandshakeTest, Resp3RoundOneIsOneWriteWithAuthNameAndSelect) {
  const std::string out = start("h:1,user=app,password=pw,name=api,defaultDatabase=2");
  EXPECT_EQ(
      out.substr(0, out.find("SELECT")),
      "*7\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$2\r\npw\r\n$7\r\nSETNAME\r\n"
      "$3\r\napi\r\n*2\r\n$6\r\n");
  EXPECT_NE(out.find("LIB-NAME"), std::string::npos);
  EXPECT_NE(out.find("LIB-VER"), std::string::npos);
  EXPECT_NE(out.find("$6\r\nCONFIG\r\n$3\r\nGET\r\n$9\r\ndatabases"), std::string::npos);
  EXPECT_NE(out.find("$4\r\nINFO\r\n$11\r\npersistence"), std::string::npos);
  EXPECT_EQ(handshake().awaiting(), 7u);
}

TEST_F(HandshakeTest, ReadsIdentityFromHelloAndValkeyVersionFromInfo) {
  start();
  const std::string hello =
      "%7\r\n+server\r\n+valkey\r\n+version\r\n+8.0.1\r\n+proto\r\n:3\r\n+id\r\n:42\r\n"
      "+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n";
  const std::string info_text =
      "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n"
      "redis_mode:standalone\r\n";
  EXPECT_EQ(feed(hello + round_one_rest(info_text, kSetInfoUnknown)), Handshake::Step::Done);
  EXPECT_EQ(handshake().identity().databases, 16);
  EXPECT_TRUE(out_.empty());
  EXPECT_EQ(handshake().identity().product, "valkey");
  EXPECT_EQ(handshake().identity().version, "8.0.1");  // not the compatibility redis_version
  EXPECT_EQ(handshake().identity().role, "master");
  EXPECT_EQ(handshake().identity().protocol, 3);
  EXPECT_EQ(handshake().identity().connection_id, 42);
}

// Valkey 8's own shapes (valkey.io, INFO and HELLO): INFO server says server_mode (redis_mode
// only under extended-redis-compatibility) and availability_zone; HELLO says server: valkey,
// and from Valkey 8.1 availability_zone too.
TEST_F(HandshakeTest, ReadsValkeyServerModeAndAvailabilityZone) {
  for (const bool zone_in_hello : {false, true}) {
    start();
    std::string hello =
        "%" + std::string(zone_in_hello ? "8" : "7") +
        "\r\n+server\r\n+valkey\r\n+version\r\n+8.1.0\r\n+proto\r\n:3\r\n+id\r\n:7\r\n"
        "+mode\r\n+cluster\r\n+role\r\n+replica\r\n+modules\r\n*0\r\n";
    if (zone_in_hello) hello += "+availability_zone\r\n+use1-az1\r\n";
    const std::string info_text =
        "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.0\r\n"
        "server_mode:cluster\r\nos:Linux\r\navailability_zone:" +
        std::string(zone_in_hello ? "use1-az1" : "use1-az2") + "\r\n";
    EXPECT_EQ(feed(hello + round_one_rest(info_text)), Handshake::Step::Done);
    const ServerIdentity& id = handshake().identity();
    EXPECT_EQ(id.product, "valkey");
    EXPECT_EQ(id.version, "8.1.0");
    EXPECT_EQ(id.mode, "cluster");
    EXPECT_EQ(id.databases, 1);  // cluster mode: database 0 only
    EXPECT_EQ(id.availability_zone, zone_in_hello ? "use1-az1" : "use1-az2");
  }
}

TEST_F(HandshakeTest, RedisHasNoAvailabilityZone) {
  start();
  const std::string hello =
      "%7\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n+proto\r\n:3\r\n+id\r\n:7\r\n"
      "+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n";
  const std::string info_text = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
  EXPECT_EQ(feed(hello + round_one_rest(info_text, kSetInfoUnknown)), Handshake::Step::Done);
  EXPECT_EQ(handshake().identity().product, "redis");
  EXPECT_EQ(handshake().identity().mode, "standalone");
  EXPECT_TRUE(handshake().identity().availability_zone.empty());
}

// Round one always selects the configured database. A refused SELECT 0 (an ACL without
// +select) leaves a working connection on database 0 that remembers the refusal; a refused
// SELECT of defaultDatabase=2 fails the attempt.
TEST_F(HandshakeTest, ARefusedSelectZeroIsRememberedAndARefusedDefaultDatabaseFails) {
  const std::string hello =
      "%7\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n+proto\r\n:3\r\n+id\r\n:7\r\n"
      "+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n";
  const std::string info_text = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
  const std::string refusal = "NOPERM this user has no permissions to run the 'select' command";
  const std::string round_one = start();
  EXPECT_NE(round_one.find("*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"), std::string::npos);
  EXPECT_EQ(feed(hello + round_one_rest(info_text, kSetInfoAccepted, "-" + refusal + "\r\n")),
            Handshake::Step::Done);
  EXPECT_EQ(handshake().identity().select_refusal, refusal);

  start();
  EXPECT_EQ(feed(hello + round_one_rest(info_text)), Handshake::Step::Done);
  EXPECT_TRUE(handshake().identity().select_refusal.empty());

  start("h:1,defaultDatabase=2");
  EXPECT_EQ(feed(hello + "-" + refusal + "\r\n"), Handshake::Step::Failed);
  EXPECT_NE(handshake().error().message().find("check defaultDatabase="), std::string::npos)
      << handshake().error().message();
  EXPECT_TRUE(handshake().refused_for_good());  // the next attempt would select it again
}

TEST_F(HandshakeTest, WrongPasswordIsAnAuthenticationErrorWithoutThePassword) {
  start("h:1,user=app,password=hunter2");
  EXPECT_EQ(feed("-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
            Handshake::Step::Failed);
  EXPECT_EQ(handshake().error().code(), errc::authentication_failed);
  EXPECT_NE(handshake().error().message().find("app"), std::string::npos);
  EXPECT_EQ(handshake().error().message().find("hunter2"), std::string::npos);
  EXPECT_TRUE(handshake().refused_for_good());  // the same password would be sent again
}

TEST_F(HandshakeTest, ServerWithoutHelloGetsAResp2SecondRound) {
  start("h:1,password=pw,name=api");
  // Round one: HELLO unknown; SELECT, SETINFO x2, INFO, CONFIG and INFO refused (NOAUTH).
  EXPECT_EQ(feed("-ERR unknown command 'HELLO'\r\n-NOAUTH Authentication required.\r\n"
                 "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n"
                 "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n"
                 "-NOAUTH Authentication required.\r\n"),
            Handshake::Step::Continue);
  EXPECT_NE(out_.find("$4\r\nAUTH\r\n$2\r\npw\r\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find("SETNAME"), std::string::npos);
  out_.clear();
  const std::string info = "# Server\r\nredis_version:5.0.7\r\n";
  EXPECT_EQ(feed("+OK\r\n+OK\r\n$" + std::to_string(info.size()) + "\r\n" + info +
                 "\r\n*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n$9\r\nloading:0\r\n"),
            Handshake::Step::Done);
  EXPECT_EQ(handshake().identity().protocol, 2);
  EXPECT_EQ(handshake().identity().product, "redis");
  EXPECT_EQ(handshake().identity().version, "5.0.7");
}

TEST_F(HandshakeTest, ServerLoadingItsDatasetIsWaitedOutWithProbes) {
  start();
  const std::string loading = "$9\r\nloading:1\r\n";
  EXPECT_EQ(
      feed("%0\r\n+OK\r\n-ERR x\r\n-ERR x\r\n$19\r\nredis_version:7.0.0\r\n-LOADING\r\n" + loading),
      Handshake::Step::Loading);
  handshake().probe_loading(out_);
  EXPECT_EQ(out_, "*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n");
  EXPECT_EQ(feed(loading), Handshake::Step::Loading);
  handshake().probe_loading(out_);
  EXPECT_EQ(feed("$9\r\nloading:0\r\n"), Handshake::Step::Done);
  EXPECT_EQ(handshake().identity().version, "7.0.0");
}

TEST_F(HandshakeTest, BadDatabaseFailsWithAdvice) {
  start("h:1,defaultDatabase=99");
  EXPECT_EQ(feed("%0\r\n-ERR DB index is out of range\r\n"), Handshake::Step::Failed);
  EXPECT_EQ(handshake().error().code(), errc::connection_failed);
  EXPECT_NE(handshake().error().message().find("defaultDatabase"), std::string::npos);
}

constexpr std::string_view kValkeyHello =
    "%7\r\n+server\r\n+valkey\r\n+version\r\n+8.0.1\r\n+proto\r\n:3\r\n+id\r\n:4\r\n"
    "+mode\r\n+standalone\r\n+role\r\n+replica\r\n+modules\r\n*0\r\n";
constexpr std::string_view kValkeyInfo =
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n"
    "server_mode:standalone\r\n";

// A connection that follows redirects asks a standalone Valkey 8 for them: READONLY once INFO
// says what the server is, CLIENT CAPA redirect once READONLY is accepted, then done.
TEST_F(HandshakeTest, StandaloneValkeyGetsReadOnlyThenClientCapaRedirect) {
  const std::string round_one = start("h:1", true);
  EXPECT_EQ(round_one.find("CAPA"), std::string::npos);  // round one is what it always was
  EXPECT_EQ(feed(std::string(kValkeyHello) + round_one_rest(kValkeyInfo)),
            Handshake::Step::Continue);
  EXPECT_EQ(out_, "*1\r\n$8\r\nREADONLY\r\n");
  out_.clear();
  EXPECT_EQ(feed("+OK\r\n"), Handshake::Step::Continue);
  EXPECT_EQ(out_, "*3\r\n$6\r\nCLIENT\r\n$4\r\nCAPA\r\n$8\r\nredirect\r\n");
  out_.clear();
  EXPECT_EQ(feed("+OK\r\n"), Handshake::Step::Done);
  EXPECT_TRUE(out_.empty());
  EXPECT_TRUE(handshake().redirects());
}

// A refused READONLY (an ACL) means no CAPA: a replica would then redirect this connection's
// replica reads too. A refused CAPA leaves the connection without redirects. Neither fails it.
TEST_F(HandshakeTest, RefusedReadOnlyOrCapaLeavesTheConnectionWithoutRedirects) {
  for (const bool refuse_readonly : {true, false}) {
    start("h:1", true);
    feed(std::string(kValkeyHello) + round_one_rest(kValkeyInfo));
    out_.clear();
    const std::string noperm = "-NOPERM this user has no permissions\r\n";
    if (refuse_readonly) {
      EXPECT_EQ(feed(noperm), Handshake::Step::Done);
      EXPECT_TRUE(out_.empty()) << "no CLIENT CAPA after a refused READONLY";
    } else {
      EXPECT_EQ(feed("+OK\r\n"), Handshake::Step::Continue);
      out_.clear();
      EXPECT_EQ(feed(noperm), Handshake::Step::Done);
    }
    EXPECT_FALSE(handshake().redirects());
  }
}

// Redis 7.0 (no CLIENT CAPA: "ERR unknown subcommand 'CAPA'"), Valkey 7.2, a Valkey cluster
// node (cluster nodes never send -REDIRECT) and a connection that does not follow redirects
// all get round one alone: nothing more is written, the handshake ends with its replies.
TEST_F(HandshakeTest, RedisOldValkeyClusterNodesAndNonFollowersGetNoCapa) {
  struct Case {
    std::string_view hello_server, hello_version, info;
    bool follows;
  };
  const Case cases[] = {
      {"redis", "7.0.15", "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n", true},
      {"valkey", "7.2.5",
       "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:7.2.5\r\n"
       "redis_mode:standalone\r\n",
       true},
      {"valkey", "8.0.1",
       "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n"
       "server_mode:cluster\r\n",
       true},
      {"valkey", "8.0.1", kValkeyInfo, false},
  };
  for (const Case& c : cases) {
    start("h:1", c.follows);
    const std::string hello = "%3\r\n+server\r\n+" + std::string(c.hello_server) +
                              "\r\n+version\r\n+" + std::string(c.hello_version) +
                              "\r\n+proto\r\n:3\r\n";
    EXPECT_EQ(feed(hello + round_one_rest(c.info)), Handshake::Step::Done) << c.info;
    EXPECT_TRUE(out_.empty()) << c.info;
    EXPECT_FALSE(handshake().redirects());
  }
}

TEST_F(HandshakeTest, SendsRedirectOnlyForStandaloneValkeyEightOrLater) {
  auto identity = [](std::string product, std::string version, std::string mode) {
    ServerIdentity server;
    server.product = std::move(product);
    server.version = std::move(version);
    server.mode = std::move(mode);
    return server;
  };
  EXPECT_TRUE(sends_redirect(identity("valkey", "8.0.0", "standalone")));
  EXPECT_TRUE(sends_redirect(identity("valkey", "255.255.255", "standalone")));  // unstable
  EXPECT_FALSE(sends_redirect(identity("valkey", "7.2.5", "standalone")));
  EXPECT_FALSE(sends_redirect(identity("valkey", "8.0.0", "cluster")));
  EXPECT_FALSE(sends_redirect(identity("valkey", "8.0.0", "sentinel")));
  EXPECT_FALSE(sends_redirect(identity("redis", "8.0.0", "standalone")));
  EXPECT_FALSE(sends_redirect(identity("valkey", "", "standalone")));
}

}  // namespace
}  // namespace redmux::detail
