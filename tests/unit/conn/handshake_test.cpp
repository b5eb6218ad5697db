#include "conn/handshake.hpp"

#include <gtest/gtest.h>

#include "resp/parser.hpp"

namespace redmux::detail {
namespace {

// Feeds RESP text (one or more replies) to the handshake, reply by reply.
Handshake::Step feed(Handshake& handshake, std::string_view text, std::string& out) {
  resp::Parser parser;
  Handshake::Step step = Handshake::Step::Continue;
  while (!text.empty()) {
    EXPECT_EQ(parser.parse(text), resp::ParseStatus::Complete) << text;
    step = handshake.on_reply(parser.nodes(), out);
    text.remove_prefix(parser.consumed());
  }
  return step;
}

TEST(HandshakeTest, Resp3RoundOneIsOneWriteWithAuthNameAndSelect) {
  Config config = Config::from_string("h:1,user=app,password=pw,name=api,defaultDatabase=2");
  Handshake handshake(config, "h:1");
  std::string out;
  handshake.begin(out);
  EXPECT_EQ(
      out.substr(0, out.find("SELECT")),
      "*7\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$2\r\npw\r\n$7\r\nSETNAME\r\n"
      "$3\r\napi\r\n*2\r\n$6\r\n");
  EXPECT_NE(out.find("LIB-NAME"), std::string::npos);
  EXPECT_NE(out.find("LIB-VER"), std::string::npos);
  EXPECT_NE(out.find("$6\r\nCONFIG\r\n$3\r\nGET\r\n$9\r\ndatabases"), std::string::npos);
  EXPECT_NE(out.find("$4\r\nINFO\r\n$11\r\npersistence"), std::string::npos);
  EXPECT_EQ(handshake.awaiting(), 7u);
}

TEST(HandshakeTest, ReadsIdentityFromHelloAndValkeyVersionFromInfo) {
  Config config = Config::from_string("h:1");
  Handshake handshake(config, "h:1");
  std::string out;
  handshake.begin(out);
  out.clear();
  const std::string hello =
      "%7\r\n+server\r\n+valkey\r\n+version\r\n+8.0.1\r\n+proto\r\n:3\r\n+id\r\n:42\r\n"
      "+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n";
  const std::string info_text =
      "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n"
      "redis_mode:standalone\r\n";
  const std::string info =
      "=" + std::to_string(info_text.size() + 4) + "\r\ntxt:" + info_text + "\r\n";
  EXPECT_EQ(feed(handshake,
                 hello + "-ERR unknown subcommand\r\n-ERR unknown subcommand\r\n" + info +
                     "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n" + "$9\r\nloading:0\r\n",
                 out),
            Handshake::Step::Done);
  EXPECT_EQ(handshake.identity().databases, 16);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(handshake.identity().product, "valkey");
  EXPECT_EQ(handshake.identity().version, "8.0.1");  // not the compatibility redis_version
  EXPECT_EQ(handshake.identity().role, "master");
  EXPECT_EQ(handshake.identity().protocol, 3);
  EXPECT_EQ(handshake.identity().connection_id, 42);
}

// Valkey 8's own shapes (valkey.io, INFO and HELLO): INFO server says server_mode (redis_mode
// only under extended-redis-compatibility) and availability_zone; HELLO says server: valkey,
// and from Valkey 8.1 availability_zone too.
TEST(HandshakeTest, ReadsValkeyServerModeAndAvailabilityZone) {
  for (const bool zone_in_hello : {false, true}) {
    Config config = Config::from_string("h:1");
    Handshake handshake(config, "h:1");
    std::string out;
    handshake.begin(out);
    out.clear();
    std::string hello =
        "%" + std::string(zone_in_hello ? "8" : "7") +
        "\r\n+server\r\n+valkey\r\n+version\r\n+8.1.0\r\n+proto\r\n:3\r\n+id\r\n:7\r\n"
        "+mode\r\n+cluster\r\n+role\r\n+replica\r\n+modules\r\n*0\r\n";
    if (zone_in_hello) hello += "+availability_zone\r\n+use1-az1\r\n";
    const std::string info_text =
        "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.0\r\n"
        "server_mode:cluster\r\nos:Linux\r\navailability_zone:" +
        std::string(zone_in_hello ? "use1-az1" : "use1-az2") + "\r\n";
    const std::string info =
        "=" + std::to_string(info_text.size() + 4) + "\r\ntxt:" + info_text + "\r\n";
    EXPECT_EQ(feed(handshake,
                   hello + "+OK\r\n+OK\r\n" + info + "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n" +
                       "$9\r\nloading:0\r\n",
                   out),
              Handshake::Step::Done);
    const ServerIdentity& id = handshake.identity();
    EXPECT_EQ(id.product, "valkey");
    EXPECT_EQ(id.version, "8.1.0");
    EXPECT_EQ(id.mode, "cluster");
    EXPECT_EQ(id.databases, 1);  // cluster mode: database 0 only
    EXPECT_EQ(id.availability_zone, zone_in_hello ? "use1-az1" : "use1-az2");
  }
}

TEST(HandshakeTest, RedisHasNoAvailabilityZone) {
  Config config = Config::from_string("h:1");
  Handshake handshake(config, "h:1");
  std::string out;
  handshake.begin(out);
  out.clear();
  const std::string hello =
      "%7\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n+proto\r\n:3\r\n+id\r\n:7\r\n"
      "+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n";
  const std::string info_text = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
  const std::string info =
      "=" + std::to_string(info_text.size() + 4) + "\r\ntxt:" + info_text + "\r\n";
  EXPECT_EQ(feed(handshake,
                 hello + "-ERR unknown subcommand\r\n-ERR unknown subcommand\r\n" + info +
                     "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n$9\r\nloading:0\r\n",
                 out),
            Handshake::Step::Done);
  EXPECT_EQ(handshake.identity().product, "redis");
  EXPECT_EQ(handshake.identity().mode, "standalone");
  EXPECT_TRUE(handshake.identity().availability_zone.empty());
}

TEST(HandshakeTest, WrongPasswordIsAnAuthenticationErrorWithoutThePassword) {
  Config config = Config::from_string("h:1,user=app,password=hunter2");
  Handshake handshake(config, "h:1");
  std::string out;
  handshake.begin(out);
  EXPECT_EQ(
      feed(handshake, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", out),
      Handshake::Step::Failed);
  EXPECT_EQ(handshake.error().code(), errc::authentication_failed);
  EXPECT_NE(handshake.error().message().find("app"), std::string::npos);
  EXPECT_EQ(handshake.error().message().find("hunter2"), std::string::npos);
}

TEST(HandshakeTest, ServerWithoutHelloGetsAResp2SecondRound) {
  Config config = Config::from_string("h:1,password=pw,name=api");
  Handshake handshake(config, "h:1");
  std::string out;
  handshake.begin(out);
  out.clear();
  // Round one: HELLO unknown; SETINFO x2, INFO and CONFIG refused (NOAUTH).
  EXPECT_EQ(feed(handshake,
                 "-ERR unknown command 'HELLO'\r\n-NOAUTH Authentication required.\r\n"
                 "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n"
                 "-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n",
                 out),
            Handshake::Step::Continue);
  EXPECT_NE(out.find("$4\r\nAUTH\r\n$2\r\npw\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("SETNAME"), std::string::npos);
  std::string more;
  const std::string info = "# Server\r\nredis_version:5.0.7\r\n";
  EXPECT_EQ(feed(handshake,
                 "+OK\r\n+OK\r\n$" + std::to_string(info.size()) + "\r\n" + info +
                     "\r\n*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n$9\r\nloading:0\r\n",
                 more),
            Handshake::Step::Done);
  EXPECT_EQ(handshake.identity().protocol, 2);
  EXPECT_EQ(handshake.identity().product, "redis");
  EXPECT_EQ(handshake.identity().version, "5.0.7");
}

TEST(HandshakeTest, ServerLoadingItsDatasetIsWaitedOutWithProbes) {
  Config config = Config::from_string("h:1");
  Handshake handshake(config, "h:1");
  std::string out;
  handshake.begin(out);
  out.clear();
  const std::string loading = "$9\r\nloading:1\r\n";
  EXPECT_EQ(
      feed(handshake,
           "%0\r\n-ERR x\r\n-ERR x\r\n$19\r\nredis_version:7.0.0\r\n-LOADING\r\n" + loading, out),
      Handshake::Step::Loading);
  handshake.probe_loading(out);
  EXPECT_EQ(out, "*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n");
  EXPECT_EQ(feed(handshake, loading, out), Handshake::Step::Loading);
  handshake.probe_loading(out);
  EXPECT_EQ(feed(handshake, "$9\r\nloading:0\r\n", out), Handshake::Step::Done);
  EXPECT_EQ(handshake.identity().version, "7.0.0");
}

TEST(HandshakeTest, BadDatabaseFailsWithAdvice) {
  Config config = Config::from_string("h:1,defaultDatabase=99");
  Handshake handshake(config, "h:1");
  std::string out;
  handshake.begin(out);
  EXPECT_EQ(feed(handshake, "%0\r\n-ERR DB index is out of range\r\n", out),
            Handshake::Step::Failed);
  EXPECT_EQ(handshake.error().code(), errc::connection_failed);
  EXPECT_NE(handshake.error().message().find("defaultDatabase"), std::string::npos);
}

// INFO server as a RESP3 verbatim string.
std::string info_reply(std::string_view text) {
  return "=" + std::to_string(text.size() + 4) + "\r\ntxt:" + std::string(text) + "\r\n";
}

// Round one's replies after HELLO for a server whose INFO server says `info_text`.
std::string round_one_rest(std::string_view info_text) {
  return "+OK\r\n+OK\r\n" + info_reply(info_text) + "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n" +
         "$9\r\nloading:0\r\n";
}

constexpr std::string_view kValkeyHello =
    "%7\r\n+server\r\n+valkey\r\n+version\r\n+8.0.1\r\n+proto\r\n:3\r\n+id\r\n:4\r\n"
    "+mode\r\n+standalone\r\n+role\r\n+replica\r\n+modules\r\n*0\r\n";
constexpr std::string_view kValkeyInfo =
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n"
    "server_mode:standalone\r\n";

// A connection that follows redirects asks a standalone Valkey 8 for them: READONLY once INFO
// says what the server is, CLIENT CAPA redirect once READONLY is accepted, then done.
TEST(HandshakeTest, StandaloneValkeyGetsReadOnlyThenClientCapaRedirect) {
  Config config = Config::from_string("h:1");
  Handshake handshake(config, "h:1");
  handshake.announce_redirect();
  std::string out;
  handshake.begin(out);
  EXPECT_EQ(out.find("CAPA"), std::string::npos);  // round one is what it always was
  out.clear();
  EXPECT_EQ(feed(handshake, std::string(kValkeyHello) + round_one_rest(kValkeyInfo), out),
            Handshake::Step::Continue);
  EXPECT_EQ(out, "*1\r\n$8\r\nREADONLY\r\n");
  out.clear();
  EXPECT_EQ(feed(handshake, "+OK\r\n", out), Handshake::Step::Continue);
  EXPECT_EQ(out, "*3\r\n$6\r\nCLIENT\r\n$4\r\nCAPA\r\n$8\r\nredirect\r\n");
  out.clear();
  EXPECT_EQ(feed(handshake, "+OK\r\n", out), Handshake::Step::Done);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(handshake.redirects());
}

// A refused READONLY (an ACL) means no CAPA: a replica would then redirect this connection's
// replica reads too. A refused CAPA leaves the connection without redirects. Neither fails it.
TEST(HandshakeTest, RefusedReadOnlyOrCapaLeavesTheConnectionWithoutRedirects) {
  for (const bool refuse_readonly : {true, false}) {
    Config config = Config::from_string("h:1");
    Handshake handshake(config, "h:1");
    handshake.announce_redirect();
    std::string out;
    handshake.begin(out);
    out.clear();
    feed(handshake, std::string(kValkeyHello) + round_one_rest(kValkeyInfo), out);
    out.clear();
    const std::string noperm = "-NOPERM this user has no permissions\r\n";
    if (refuse_readonly) {
      EXPECT_EQ(feed(handshake, noperm, out), Handshake::Step::Done);
      EXPECT_TRUE(out.empty()) << "no CLIENT CAPA after a refused READONLY";
    } else {
      EXPECT_EQ(feed(handshake, "+OK\r\n", out), Handshake::Step::Continue);
      out.clear();
      EXPECT_EQ(feed(handshake, noperm, out), Handshake::Step::Done);
    }
    EXPECT_FALSE(handshake.redirects());
  }
}

// Redis 7.0 (no CLIENT CAPA: "ERR unknown subcommand 'CAPA'"), Valkey 7.2, a Valkey cluster
// node (cluster nodes never send -REDIRECT) and a connection that does not follow redirects
// all get round one alone: nothing more is written, the handshake ends with its replies.
TEST(HandshakeTest, RedisOldValkeyClusterNodesAndNonFollowersGetNoCapa) {
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
    Config config = Config::from_string("h:1");
    Handshake handshake(config, "h:1");
    if (c.follows) handshake.announce_redirect();
    std::string out;
    handshake.begin(out);
    out.clear();
    const std::string hello = "%3\r\n+server\r\n+" + std::string(c.hello_server) +
                              "\r\n+version\r\n+" + std::string(c.hello_version) +
                              "\r\n+proto\r\n:3\r\n";
    EXPECT_EQ(feed(handshake, hello + round_one_rest(c.info), out), Handshake::Step::Done)
        << c.info;
    EXPECT_TRUE(out.empty()) << c.info;
    EXPECT_FALSE(handshake.redirects());
  }
}

TEST(HandshakeTest, SendsRedirectOnlyForStandaloneValkeyEightOrLater) {
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
